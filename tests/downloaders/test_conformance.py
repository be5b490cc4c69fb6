"""Every installed downloader passes the conformance suite: the built-ins, and in CI the example plugins too."""

from __future__ import annotations

from pathlib import Path

import pytest

import downloaders
from tests.conformance.running import CHANGING_LIMIT_TESTS, SUITE_TIMEOUT, run_suite

BUILT_IN = ("asyncio", "futures")


def test_the_built_ins_are_installed() -> None:
    missing = sorted(set(BUILT_IN) - set(downloaders.available()))
    assert not missing, f"built-in downloaders not installed: {missing}; reinstall pulp-sync (pip install -e .)"


@pytest.mark.slow
@pytest.mark.timeout(SUITE_TIMEOUT + 60)
@pytest.mark.parametrize("name", sorted(downloaders.available()))
def test_passes_the_conformance_suite(name: str, tmp_path: Path) -> None:
    """Every test passes, but those of a changing limit (rule 24), skipped for a downloader that keeps a
    fixed one, as the example plugins do (docs/plugins.md)."""
    run = run_suite(["-m", "conformance", name, "-q", "-rs"], tmp_path)
    assert run.returncode == 0, f"the conformance suite failed for {name!r}:\n{run.tail(120)}"
    assert run.counts["passed"] >= 20, run.tail()
    adapts = downloaders.adapts(downloaders.load(name))
    assert run.counts.get("skipped", 0) == (0 if adapts else CHANGING_LIMIT_TESTS), run.tail()
    reasons = [line for line in run.output.splitlines() if line.startswith("SKIPPED")]
    assert all("keeps a fixed limit" in line for line in reasons), reasons
