"""What one run measured, as one flat record: a row of runs.csv and an entry of results.json.

A failed run keeps its error and whatever the sync reported before it stopped; it is shown in the
report and never averaged in. The record knows nothing of how a run is made: harness.run.recording
makes one from a run's child processes, as hyperfine's result model is apart from its executor.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["RunRecord", "RunKey", "Trajectory", "RUN_FIELDS", "REPORT_FIELDS", "connections_of", "trajectory_of",
           "record_from_dict"]

RunKey = tuple[str, int, str]
"""(manifest, round, variant): one run's identity, which --resume matches on."""

REPORT_FIELDS = (
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
    "auto_concurrency",
)
"""Fields a run's record takes from the sync's report as they are (`connections` is read by `connections_of`,
`concurrency_trajectory` by `trajectory_of`)."""

Trajectory = tuple[tuple[float, int], ...]
"""The downloads' limit over time: (seconds from the start of the downloads, limit) at each change."""


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
    """Downloads in flight: the fixed limit, or with `auto_concurrency` the one the sync spent the most time at
    (its processes' together), where it settled."""
    processes: int | None = None
    """The processes the sync's downloads were split across (its report's; pulp_sync.sync.split.planning)."""
    connections: int | None = None
    """Downloads in flight at most, the sync's processes together (`connections_of`)."""
    files_per_s: float | None = None
    hosts: int | None = None
    repositories: int | None = None
    hosts_used: int | None = None
    queue_max_seconds: float | None = None
    queue_waits: tuple[float, ...] | None = None
    auto_concurrency: bool | None = None
    """Whether the sync found its downloads in flight as it went (`download_concurrency = "auto"`); None for a
    run whose report does not say (a program's, a Pulp server's, a pulp-sync's from before issue 35)."""
    concurrency_trajectory: Trajectory | None = None
    """With `auto_concurrency`, how it got to its `concurrency`: the limit at each change (`trajectory_of`)."""

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


def connections_of(report: Mapping[str, Any]) -> int | None:
    """The connections a run held at most, its processes together: its report's `connections`; for a report
    without them (a program's, a Pulp server's, or a pulp-sync's from before the remote's budget was the
    whole sync's, issue 32, when every process had all of it) its concurrency times its processes."""
    if report.get("connections") is not None:
        return int(report["connections"])
    concurrency = report.get("concurrency")
    return concurrency * (report.get("processes") or 1) if isinstance(concurrency, int) else None


def trajectory_of(report: Mapping[str, Any]) -> Trajectory | None:
    """A sync report's `concurrency_trajectory`, `{"seconds": s, "limit": n}` at each change, as (s, n) pairs;
    None where it has none (a fixed limit, a downloader that keeps no record, an older pulp-sync)."""
    changes = report.get("concurrency_trajectory")
    return tuple((float(change["seconds"]), int(change["limit"])) for change in changes) if changes else None


def _frozen(value: Any) -> Any:
    """A JSON value as the record holds it: a list (queue_waits, a trajectory and its pairs) a tuple again."""
    return tuple(map(_frozen, value)) if isinstance(value, list) else value


def record_from_dict(data: Mapping[str, Any]) -> RunRecord:
    """Read a record back from results.json; keys it does not know are ignored (older harness), a list
    (queue_waits, concurrency_trajectory) is a tuple again, as it was recorded, a key it lacks (a record made
    before runs had it) takes its default, and a record made before runs had `connections` gets them as a new
    one would (`connections_of`)."""
    values: dict[str, Any] = {name: _frozen(data[name]) for name in RUN_FIELDS if name in data}
    if "connections" not in data:  # recorded before runs had them
        values["connections"] = connections_of(data)
    return RunRecord(**values)
