"""docs/plugins.md shows code that works: its minimal plugin passes the suite, its snippets are valid."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from harness.spec import experiment_from_dict
from tests.conformance.running import REPO, SUITE_TIMEOUT, run_suite

DOC = REPO / "docs" / "plugins.md"


def _block(language: str, heading: str) -> str:
    """The first fenced `language` block after `heading` in the doc."""
    text = DOC.read_text(encoding="utf-8")
    found = re.compile(rf"^```{language}\n(.*?)^```", re.S | re.M).search(text, text.index(heading))
    assert found, f"no {language} block after {heading!r} in {DOC}"
    return found.group(1)


@pytest.mark.slow
@pytest.mark.timeout(SUITE_TIMEOUT + 60)
def test_the_minimal_plugin_passes_the_conformance_suite(tmp_path: Path) -> None:
    folder = tmp_path / "plugin"
    folder.mkdir()
    (folder / "pulp_sync_urllib.py").write_text(_block("python", "## A minimal plugin, in full"), encoding="utf-8")
    run = run_suite(["-m", "conformance", "pulp_sync_urllib:UrllibDownloader", "-q"], tmp_path, pythonpath=[folder])
    assert run.returncode == 0, f"the minimal plugin of {DOC.name} fails the suite:\n{run.tail(120)}"
    assert run.counts.keys() == {"passed"}, run.tail()


def test_its_entry_point_registers_it_under_its_name() -> None:
    project = tomllib.loads(_block("toml", "### The entry point"))["project"]
    assert project["entry-points"]["pulp_sync.downloaders"] == {"urllib": "pulp_sync_urllib:UrllibDownloader"}
    assert 'name = "urllib"' in _block("python", "## A minimal plugin, in full")


def test_the_comparison_spec_is_a_valid_experiment() -> None:
    experiment = experiment_from_dict(tomllib.loads(_block("toml", "## Comparing with the built-ins")))
    assert [variant.downloader for variant in experiment.variants] == ["urllib", "asyncio", "futures"]
    assert experiment.baseline == "futures"
