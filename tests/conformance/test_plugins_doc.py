"""docs/plugins.md shows code that works and rules the suite checks: its minimal plugin and pyproject.toml
are what `pulp-sync plugin new` writes (tests/pulp_sync/test_plugin_template.py runs the suite on that),
its snippets are valid, and its numbered rules are the suite's, each naming tests that exist."""

from __future__ import annotations

import ast
import re
import tomllib

from conformance import CONTRACT
from conformance.rules import RULES
from conformance.template import render
from harness.experiment.spec import experiment_from_dict
from tests.conformance.running import REPO

DOC = REPO / "docs" / "plugins.md"
_RULE = re.compile(r"^(\d+)\. \*\*(.+?)\*\*(.*?)(?=^\d+\. \*\*|\Z)", re.S | re.M)


def _block(language: str, heading: str) -> str:
    """The first fenced `language` block after `heading` in the doc."""
    text = DOC.read_text(encoding="utf-8")
    found = re.compile(rf"^```{language}\n(.*?)^```", re.S | re.M).search(text, text.index(heading))
    assert found, f"no {language} block after {heading!r} in {DOC}"
    return found.group(1)


def _rules() -> dict[int, tuple[str, str]]:
    """The doc's numbered rules (the list under "The downloader"): number -> (title, the text after it)."""
    text = DOC.read_text(encoding="utf-8")
    section = text[text.index("### The downloader") : text.index("### Errors")]
    return {int(number): (title.strip(" .,:"), rest) for number, title, rest in _RULE.findall(section)}


def test_the_minimal_plugin_is_what_the_template_writes() -> None:
    assert _block("python", "## A minimal plugin, in full") == render("urllib")["pulp_sync_urllib/__init__.py"]


def test_the_complete_pyproject_is_what_the_template_writes() -> None:
    assert _block("toml", "### `pulp-sync plugin new NAME`") == render("urllib")["pyproject.toml"]


def test_its_entry_point_registers_it_under_its_name() -> None:
    project = tomllib.loads(_block("toml", "### The entry point"))["project"]
    assert project["entry-points"]["pulp_sync.downloaders"] == {"urllib": "pulp_sync_urllib:UrllibDownloader"}
    assert 'name = "urllib"' in _block("python", "## A minimal plugin, in full")


def test_the_rules_are_the_suites_numbered_alike() -> None:
    titles = {number: title.replace("`", "") for number, (title, _) in _rules().items()}
    assert titles == RULES


def test_each_rule_names_tests_of_the_suite_and_every_test_is_named() -> None:
    defined = {
        node.name
        for node in ast.parse(CONTRACT.read_text(encoding="utf-8")).body
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")
    }
    named = {name for _, rest in _rules().values() for name in re.findall(r"`(test_\w+)`", rest)}
    assert named - defined == set(), "named in the doc, not in the suite"
    assert defined - named == set(), "in the suite, under no rule of the doc"


def test_the_comparison_spec_is_a_valid_experiment() -> None:
    experiment = experiment_from_dict(tomllib.loads(_block("toml", "## Comparing with the built-ins")))
    assert [variant.downloader for variant in experiment.variants] == ["urllib", "asyncio", "futures"]
    assert experiment.baseline == "futures"
