"""A sync child's output becomes a run record; every kind of failure keeps its reason."""

from __future__ import annotations

import json

from harness.results.records import RUN_FIELDS, record_from_dict
from harness.run.child import ChildRun
from harness.run.recording import record_run
from harness.run.schedule import PlannedRun

PLANNED = PlannedRun("100", 2, 1, "asyncio", False)
REPORT = {"repository": "bench", "version": 1, "artifacts_downloaded": 100, "artifacts_skipped": 0,
          "content_units": 100, "bytes_downloaded": 2_000_000, "seconds": 1.5, "mb_per_s": 1.33, "retries": 1,
          "failures": 0, "downloader": "asyncio", "concurrency": 10, "latency_p50": 0.01, "latency_p90": 0.02,
          "latency_p99": 0.05}


def _child(returncode: int = 0, stdout: str = "", stderr: str = "", wall: float = 2.0) -> ChildRun:
    return ChildRun(("pulp-sync",), returncode, stdout, stderr, wall, 1.0, 0.2, 150.0, 30, 4)


def test_a_successful_sync_is_recorded_with_its_own_timing_and_rusage() -> None:
    record = record_run(PLANNED, "now", _child(stdout="progress\n" + json.dumps(REPORT) + "\n"), 0.7)
    assert record.ok and record.counted and record.error is None
    assert (record.sync_seconds, record.wall_seconds, record.user_seconds, record.peak_rss_mb) == (1.5, 2.0, 1.0, 150.0)
    assert (record.bytes_downloaded, record.retries) == (2_000_000, 1)
    assert (record.latency_p99, record.reset_seconds) == (0.05, 0.7)
    assert record.key == ("100", 2, "asyncio")


def test_a_failed_sync_keeps_its_error_and_partial_report() -> None:
    child = _child(1, json.dumps(dict(REPORT, failures=3)), "Syncing...\nError: 3 downloads failed: 404 Not Found\n")
    record = record_run(PLANNED, "now", child, 0.7)
    assert not record.ok and not record.counted
    assert record.error == "Error: 3 downloads failed: 404 Not Found"
    assert record.failures == 3


def test_a_timeout_says_so() -> None:
    record = record_run(PLANNED, "now", _child(-9, wall=31.0), 0.7, timeout=30.0)
    assert record.error is not None and "timed out after 30 s" in record.error


def test_a_sync_without_a_report_is_a_failure() -> None:
    record = record_run(PLANNED, "now", _child(0, "not json"), 0.7)
    assert not record.ok and record.error == "the sync printed no JSON report"


def test_a_warmup_is_not_counted() -> None:
    record = record_run(PlannedRun("100", 1, 1, "asyncio", True), "now", _child(stdout=json.dumps(REPORT)), 0.7)
    assert record.ok and not record.counted


def test_records_read_back_from_json() -> None:
    record = record_run(PLANNED, "now", _child(stdout=json.dumps(REPORT)), 0.7)
    assert record_from_dict(json.loads(json.dumps(record.as_dict()))) == record
    assert list(record.as_dict()) == list(RUN_FIELDS)


def test_a_record_says_how_many_connections_the_syncs_processes_held_together() -> None:
    split = dict(REPORT, processes=2, connections=10)
    assert record_run(PLANNED, "now", _child(stdout=json.dumps(split)), 0.7).connections == 10
    before = dict(REPORT, processes=2)  # a pulp-sync from before issue 32: each process had the whole concurrency
    assert record_run(PLANNED, "now", _child(stdout=json.dumps(before)), 0.7).connections == 20
    assert record_run(PLANNED, "now", _child(stdout=json.dumps(REPORT)), 0.7).connections == 10, "one process"
    recorded = record_run(PLANNED, "now", _child(stdout=json.dumps(before)), 0.7).as_dict()
    del recorded["connections"]  # a results.json from before runs had them
    assert record_from_dict(recorded).connections == 20


def test_what_auto_did_is_recorded_and_read_back() -> None:
    """The sync's `auto_concurrency` and its trajectory of `{"seconds", "limit"}` become (seconds, limit) pairs,
    through results.json and back."""
    auto = dict(REPORT, concurrency=12, connections=64, auto_concurrency=True,
                concurrency_trajectory=[{"seconds": 0.0, "limit": 4}, {"seconds": 0.25, "limit": 8},
                                        {"seconds": 0.5, "limit": 12}])
    record = record_run(PLANNED, "now", _child(stdout=json.dumps(auto)), 0.7)
    assert (record.auto_concurrency, record.concurrency, record.connections) == (True, 12, 64)
    assert record.concurrency_trajectory == ((0.0, 4), (0.25, 8), (0.5, 12))
    assert record_from_dict(json.loads(json.dumps(record.as_dict()))) == record


def test_a_fixed_run_and_a_record_from_before_auto_have_none_of_it() -> None:
    fixed = record_run(PLANNED, "now", _child(stdout=json.dumps(dict(REPORT, auto_concurrency=False))), 0.7)
    assert (fixed.auto_concurrency, fixed.concurrency_trajectory) == (False, None)
    recorded = record_run(PLANNED, "now", _child(stdout=json.dumps(REPORT)), 0.7).as_dict()
    del recorded["auto_concurrency"], recorded["concurrency_trajectory"]  # a results.json from before issue 35
    old = record_from_dict(json.loads(json.dumps(recorded)))
    assert (old.auto_concurrency, old.concurrency_trajectory, old.concurrency) == (None, None, 10)
