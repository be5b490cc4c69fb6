"""The conformance suite as a plugin author meets it: found by pytest, failing broken downloaders clearly.

Each test runs pytest in a child process, as `pytest --pulp-sync-downloader NAME` or
`python -m conformance NAME` would be run, selecting with -k the few contract tests it is about.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conformance.running import REPO, run_suite

pytestmark = pytest.mark.slow

DIGEST_MESSAGE = (
    "downloader 'ignores-digest' returned a result whose bytes do not match the requested sha256:"
    " it must verify digests"
)


def _register(site: Path, name: str, target: str) -> Path:
    """An installed distribution that registers `target` as downloader `name`, as pip would leave it."""
    dist_info = site / "broken_downloaders-0.0.dist-info"
    dist_info.mkdir(parents=True)
    (dist_info / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-downloaders\nVersion: 0.0\n")
    (dist_info / "entry_points.txt").write_text(f"[pulp_sync.downloaders]\n{name} = {target}\n")
    return site


def test_every_installed_downloader_by_default_and_a_digest_ignored_is_named(tmp_path: Path) -> None:
    site = _register(tmp_path / "site", "ignores-digest", "tests.conformance.broken:IgnoresDigest")
    suite = ["-m", "pytest", "--pyargs", "conformance.test_contract"]
    listed = run_suite([*suite, "--collect-only", "-q", "-k", "is_a_downloader"], tmp_path, pythonpath=[site, REPO])
    for name in ("asyncio", "futures", "ignores-digest"):
        assert f"test_is_a_downloader[{name}]" in listed.output, listed.tail()
    selection = "ignores-digest and (corrupt or every_file)"
    run = run_suite([*suite, "-k", selection], tmp_path, pythonpath=[site, REPO])
    assert run.returncode == 1, run.tail()
    assert DIGEST_MESSAGE in run.output, run.tail()
    assert run.counts["failed"] == 2 and run.counts["passed"] == 1, run.tail()


def test_a_downloader_that_runs_ahead_of_its_consumer_fails(tmp_path: Path) -> None:
    name = "tests.conformance.broken:Hoards"
    run = run_suite(["-m", "conformance", name, "-k", "slow_consumer or as_they_complete"], tmp_path, pythonpath=[REPO])
    assert run.returncode == 1 and run.counts["failed"] == 2, run.tail()
    assert f"downloader '{name}' took 500 of 500 requests from the iterable while its consumer held" in run.output
    assert "it must yield each outcome as soon as it completes" in run.output, run.tail()


def test_the_option_adds_the_suite_to_a_plain_pytest_run(tmp_path: Path) -> None:
    project = tmp_path / "a-plugin-project"
    project.mkdir()
    run = run_suite(
        ["-m", "pytest", "--pulp-sync-downloader", "futures", "-k", "is_a_downloader", "-v"], tmp_path, cwd=project
    )
    assert run.returncode == 0 and run.counts["passed"] == 1, run.tail()
    assert "::test_is_a_downloader[futures] PASSED" in run.output, run.tail()


def test_an_unknown_downloader_is_a_usage_error(tmp_path: Path) -> None:
    run = run_suite(["-m", "conformance", "no-such-downloader"], tmp_path)
    assert run.returncode == 4, run.tail()
    assert "no downloader named 'no-such-downloader'; installed: asyncio, futures" in run.output, run.tail()


def test_a_downloader_that_clocks_the_wait_for_its_slot_fails(tmp_path: Path) -> None:
    name = "tests.conformance.broken:ClocksTheWait"
    run = run_suite(["-m", "conformance", name, "-k", "latency"], tmp_path, pythonpath=[REPO])
    assert run.returncode == 1 and run.counts["failed"] == 1, run.tail()
    assert f"downloader '{name}' reported latencies adding up to" in run.output, run.tail()
    assert "it must measure latency from the moment a download holds its concurrency slot" in run.output, run.tail()
