"""What one run measured, as one flat record: a row of runs.csv and an entry of results.json.

A failed run keeps its error and whatever the sync reported before it stopped; it is shown in the
report and never averaged in.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from harness.run.child import ChildRun
from harness.run.schedule import PlannedRun, RunKey
from harness.variants.fleet import Fleet
from harness.variants.workers import WorkerUsage

__all__ = ["RunRecord", "RUN_FIELDS", "record_run", "record_fleet_run", "record_command_run", "record_from_dict"]

_REPORT_FIELDS = (
    "bytes_downloaded",
    "artifacts_downloaded",
    "artifacts_skipped",
    "content_units",
    "retries",
    "failures",
    "mb_per_s",
    "latency_p50",
    "latency_p90",
    "latency_p99",
    "downloader",
    "concurrency",
    "processes",
)
"""Fields a run's record takes from the sync's report as they are (`connections` is read by `_connections`)."""


@dataclass(frozen=True)
class RunRecord:
    """One reset + sync. `sync_seconds` is the sync alone, as the sync timed itself (the seed's
    runtime), or for an RQ run its makespan: from queueing its first task to its last task's end
    (harness.variants.fleet; one task's time from queueing to its end in a run of one repository);
    `wall_seconds` is the whole child process, interpreter start included; rusage figures are the
    sync child's own (an RQ run's children summed), and `worker_*` those of an RQ run's workers.
    `reset_seconds` and `restart_seconds` are harness overhead.

    An RQ run also has: `hosts` (its variant's, 0 for workers on this machine), `repositories` (the
    syncs queued at once), `hosts_used` (how many hosts' workers ran them), `queue_seconds` (the
    median task's wait from queueing to its start), `queue_max_seconds` and `queue_waits` (every
    task's). Its bytes and artifacts are summed over its tasks, and `mb_per_s` and `files_per_s`
    (artifacts downloaded per second) are over its makespan.
    """

    manifest: str
    round: int
    position: int
    variant: str
    warmup: bool
    started_at: str
    ok: bool
    error: str | None
    returncode: int
    sync_seconds: float | None
    wall_seconds: float
    user_seconds: float
    system_seconds: float
    peak_rss_mb: float
    voluntary_switches: int
    involuntary_switches: int
    reset_seconds: float
    restart_seconds: float | None = None
    worker_user_seconds: float | None = None
    worker_system_seconds: float | None = None
    worker_peak_rss_mb: float | None = None
    queue_seconds: float | None = None
    bytes_downloaded: int | None = None
    artifacts_downloaded: int | None = None
    artifacts_skipped: int | None = None
    content_units: int | None = None
    retries: int | None = None
    failures: int | None = None
    mb_per_s: float | None = None
    latency_p50: float | None = None
    latency_p90: float | None = None
    latency_p99: float | None = None
    downloader: str | None = None
    concurrency: int | None = None
    processes: int | None = None
    """The processes the sync's downloads were split across (its report's; pulp_sync.shards)."""
    connections: int | None = None
    """Downloads in flight at most, the sync's processes together (`_connections`)."""
    files_per_s: float | None = None
    hosts: int | None = None
    repositories: int | None = None
    hosts_used: int | None = None
    queue_max_seconds: float | None = None
    queue_waits: tuple[float, ...] | None = None

    @property
    def cpu_seconds(self) -> float:
        """CPU of the run's processes: the sync child's and, for an RQ run, its workers'."""
        workers = (self.worker_user_seconds or 0) + (self.worker_system_seconds or 0)
        return self.user_seconds + self.system_seconds + workers

    @property
    def key(self) -> RunKey:
        """Identity of the run across a resume, as PlannedRun.key."""
        return (self.manifest, self.round, self.variant)

    @property
    def counted(self) -> bool:
        """Whether the run goes into the statistics: a successful run that is not a warm-up."""
        return self.ok and not self.warmup and self.sync_seconds is not None

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return asdict(self)


RUN_FIELDS = tuple(field.name for field in dataclasses.fields(RunRecord))
"""Column order of runs.csv."""


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
        connections=_connections(report),
        **{name: report.get(name) for name in _REPORT_FIELDS},
    )


def _connections(report: Mapping[str, Any]) -> int | None:
    """The connections a run held at most, its processes together: its report's `connections`; for a report
    without them (a program's, a Pulp server's, or a pulp-sync's from before the remote's budget was the
    whole sync's, issue 32, when every process had all of it) its concurrency times its processes."""
    if report.get("connections") is not None:
        return int(report["connections"])
    concurrency = report.get("concurrency")
    return concurrency * (report.get("processes") or 1) if isinstance(concurrency, int) else None


def record_from_dict(data: Mapping[str, Any]) -> RunRecord:
    """Read a record back from results.json; keys it does not know are ignored (older harness), a list
    (queue_waits) is a tuple again, as it was recorded, and a record made before runs had `connections`
    gets them as a new one would (`_connections`)."""
    values: dict[str, Any] = {name: tuple(data[name]) if isinstance(data[name], list) else data[name]
                              for name in RUN_FIELDS if name in data}
    if "connections" not in data:  # recorded before runs had them
        values["connections"] = _connections(data)
    return RunRecord(**values)


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
