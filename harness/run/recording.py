"""A run's child processes made into its RunRecord: the sync's JSON report, its rusage, and why it failed.

The record (harness.results.records) is the results' own; how the runner's children, an RQ fleet and an
external command become one is the runner's business, so it lives here, beside them.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any

from harness.results.records import REPORT_FIELDS, RunRecord, connections_of, trajectory_of
from harness.run.child import ChildRun
from harness.run.schedule import PlannedRun
from harness.variants.fleet import Fleet
from harness.variants.workers import WorkerUsage

__all__ = ["record_run", "record_fleet_run", "record_command_run"]


def record_run(planned: PlannedRun, started_at: str, sync: ChildRun, reset_seconds: float,
               restart_seconds: float | None = None, timeout: float | None = None) -> RunRecord:
    """Turn the sync child's output and rusage into a record; any failure becomes its `error`."""
    report, parse_error = _report_from(sync.stdout)
    error = _error_of(sync, parse_error, timeout)
    return _record(planned, started_at, sync, report, error, reset_seconds, restart_seconds)


def record_fleet_run(planned: PlannedRun, started_at: str, fleet: Fleet, reset_seconds: float,
                     restart_seconds: float | None, timeout: float, workers: WorkerUsage, hosts: int) -> RunRecord:
    """A record for an RQ run (harness.variants.fleet): its makespan as its time, its tasks' reports as one, its
    workers' rusage; the first sync child's failure (or the tasks' being unreadable) as its `error`."""
    errors = (_error_of(child, _report_from(child.stdout)[1], timeout) for child in fleet.children)
    error = next((said for said in errors if said is not None), fleet.problem)
    record = _record(planned, started_at, fleet.clients, fleet.report, error, reset_seconds, restart_seconds)
    waits = fleet.queue_waits
    return dataclasses.replace(
        record,
        worker_user_seconds=workers.user_seconds,
        worker_system_seconds=workers.system_seconds,
        worker_peak_rss_mb=workers.peak_rss_mb,
        queue_seconds=fleet.median_queue_seconds,
        queue_max_seconds=max(waits, default=None),
        queue_waits=waits,
        hosts=hosts,
        repositories=len(fleet.children),
        hosts_used=fleet.hosts_used,
    )


def record_command_run(planned: PlannedRun, started_at: str, child: ChildRun, reset_seconds: float,
                       restart_seconds: float | None, timeout: float, fetched: Mapping[str, Any],
                       output_problem: str | None) -> RunRecord:
    """A record for an external command: its time is the child's wall time, its bytes and files those
    of the manifest (`fetched`: program, concurrency, files, bytes), once its output was checked."""
    error = _error_of(child, None, timeout) or output_problem
    seconds = child.wall_seconds
    report = {
        "seconds": seconds,
        "bytes_downloaded": fetched["bytes"],
        "artifacts_downloaded": fetched["files"],
        "content_units": fetched["files"],
        "mb_per_s": fetched["bytes"] / 1e6 / seconds if seconds else None,
        "downloader": fetched["program"],
        "concurrency": fetched["concurrency"],
    }
    return _record(planned, started_at, child, report, error, reset_seconds, restart_seconds)


def _record(planned: PlannedRun, started_at: str, child: ChildRun, report: Mapping[str, Any], error: str | None,
            reset_seconds: float, restart_seconds: float | None) -> RunRecord:
    return RunRecord(
        manifest=planned.manifest,
        round=planned.round,
        position=planned.position,
        variant=planned.variant,
        warmup=planned.warmup,
        started_at=started_at,
        ok=error is None,
        error=error,
        returncode=child.returncode,
        sync_seconds=_float(report.get("seconds")),
        wall_seconds=child.wall_seconds,
        user_seconds=child.user_seconds,
        system_seconds=child.system_seconds,
        peak_rss_mb=child.peak_rss_mb,
        voluntary_switches=child.voluntary_switches,
        involuntary_switches=child.involuntary_switches,
        reset_seconds=reset_seconds,
        restart_seconds=restart_seconds,
        files_per_s=_per_second(report.get("artifacts_downloaded"), report.get("seconds")),
        connections=connections_of(report),
        concurrency_trajectory=trajectory_of(report),
        **{name: report.get(name) for name in REPORT_FIELDS},
    )


def _report_from(stdout: str) -> tuple[dict[str, Any], str | None]:
    """The sync's JSON report: the last line of stdout that parses as a JSON object."""
    for line in reversed(stdout.strip().splitlines()):
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value, None
    return {}, "the sync printed no JSON report"


def _error_of(sync: ChildRun, parse_error: str | None, timeout: float | None) -> str | None:
    """Why the run failed, in the sync's own words when it gave some; None when it did not fail."""
    if sync.returncode == 0 and parse_error is None:
        return None
    if sync.returncode < 0 and timeout is not None and sync.wall_seconds >= timeout:
        return f"timed out after {timeout:g} s (raise `timeout` in the spec or --timeout)"
    if sync.returncode < 0:
        return f"killed by signal {-sync.returncode}"
    lines = [line.strip() for line in sync.stderr.strip().splitlines() if line.strip()]
    said = next((line for line in reversed(lines) if line.startswith("Error:")), lines[-1] if lines else "")
    return said or parse_error or f"exit status {sync.returncode}"


def _float(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) else None


def _per_second(count: Any, seconds: Any) -> float | None:
    """`count` per second of `seconds`, when both are there."""
    return count / seconds if isinstance(count, int) and isinstance(seconds, (int, float)) and seconds > 0 else None
