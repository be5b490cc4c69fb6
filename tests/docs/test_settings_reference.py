"""docs/settings.md is what the typed list of settings gives now, and that list documents every variable."""

from __future__ import annotations

import difflib
import re
from pathlib import Path

from pulp_sync import environment
from pulp_sync.environment import Environment
from tests.docs.settings_reference import REFERENCE, render


def test_the_reference_is_generated_from_the_typed_list() -> None:
    written, produced = REFERENCE.read_text(encoding="utf-8"), render()
    difference = "".join(difflib.unified_diff(written.splitlines(True), produced.splitlines(True), "docs", "code"))
    assert written == produced, f"run `python -m tests.docs.settings_reference --write`:\n{difference}"


def test_every_variable_says_what_it_is_and_what_it_takes() -> None:
    for name, field in Environment.model_fields.items():
        assert field.description and len(field.description) > 40, f"{name} has no docstring"
        assert environment.takes(name), name


def test_django_reads_the_environment_only_through_the_list() -> None:
    """No variable read by hand beside the list, where the reference would not see it."""
    source = Path(environment.__file__).with_name("settings.py").read_text(encoding="utf-8")
    assert not re.search(r"os\.(environ|getenv)", source)


def test_the_docs_link_the_reference() -> None:
    root = REFERENCE.parents[1]
    for page in ("README.md", "docs/api.md", "docs/cli.md"):
        assert "settings.md" in (root / page).read_text(encoding="utf-8"), page
