"""Every installed downloader passes the conformance suite: the built-ins, and in CI the example plugins too."""

from __future__ import annotations

from pathlib import Path

import pytest

import downloaders
from tests.conformance.running import SUITE_TIMEOUT, run_suite

BUILT_IN = ("asyncio", "futures")


def test_the_built_ins_are_installed() -> None:
    missing = sorted(set(BUILT_IN) - set(downloaders.available()))
    assert not missing, f"built-in downloaders not installed: {missing}; reinstall pulp-sync (pip install -e .)"


@pytest.mark.slow
@pytest.mark.timeout(SUITE_TIMEOUT + 60)
@pytest.mark.parametrize("name", sorted(downloaders.available()))
def test_passes_the_conformance_suite(name: str, tmp_path: Path) -> None:
    run = run_suite(["-m", "conformance", name, "-q"], tmp_path)
    assert run.returncode == 0, f"the conformance suite failed for {name!r}:\n{run.tail(120)}"
    assert run.counts.keys() == {"passed"} and run.counts["passed"] >= 20, run.tail()
