"""Runs of `kind = "pulp-api"` variants: a Pulp 3 server synced through its REST API (harness.variants.pulp_api).

The servers an experiment needs are up for the whole experiment: pulpcore is started once by the
harness (harness.variants.pulpcore) when a variant says `server = "pulpcore"`, pulp-sync's API and a worker
(harness.variants.pulp_sync_server) for `server = "pulp-sync"`, any other server is the URL given. Each run
resets through the API (timed as overhead, like `pulp-sync reset`), then times one sync task. When
the server runs here, the CPU and peak RSS of its worker processes during the run are recorded as
a RQ run's workers are (`worker_*`); a remote server's are unknown.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

from harness import defaults
from harness.experiment.operator_remote import resolve_reference
from harness.experiment.spec import Experiment
from harness.experiment.variant import PULPCORE, STARTED_SERVERS, PulpApiVariant
from harness.results.records import RunRecord
from harness.run.child import HighWater, descendants
from harness.run.schedule import PlannedRun
from harness.variants.pulp_api import PulpApi, PulpApiError, TaskOutcome, reset, sync_once
from harness.variants.pulp_sync_server import running_pulp_sync
from harness.variants.pulpcore import running_pulpcore

__all__ = ["PulpTarget", "ApiSync", "pulp_targets", "sync_through_api", "record_api_run"]


@dataclass(frozen=True)
class PulpTarget:
    """A Pulp server a variant syncs on: its API, and its worker processes when they run on this machine."""

    api: PulpApi
    worker_pids: tuple[int, ...] = ()


@contextmanager
def pulp_targets(experiment: Experiment, state_dir: Path,
                 environ: Mapping[str, str]) -> Iterator[dict[str, PulpTarget]]:
    """Each pulp-api variant's server, by variant name: pulpcore started once if a variant asks for it,
    `pulp-sync api` and a worker once per database asked for, a URL as given."""
    variants = [variant for variant in experiment.variants if isinstance(variant, PulpApiVariant)]
    with ExitStack() as stack:
        started: dict[tuple[str, str | None], PulpTarget] = {}
        for variant in variants:
            key = (variant.server, variant.db)
            if variant.server in STARTED_SERVERS and key not in started:
                started[key] = _start(stack, variant, state_dir)
        yield {variant.name: started.get((variant.server, variant.db)) or _given(variant, environ)
               for variant in variants}


def _start(stack: ExitStack, variant: PulpApiVariant, state_dir: Path) -> PulpTarget:
    """Start the server `variant` names (pulpcore, or pulp-sync on its db) for as long as `stack` lasts."""
    if variant.server == PULPCORE:

        server = stack.enter_context(running_pulpcore(state_dir))
        return PulpTarget(server.api, server.worker_pids)

    folder = state_dir / f"pulp-sync-server-{variant.db or 'sqlite'}".replace("/", "_").replace(":", "_")
    api, pids = stack.enter_context(running_pulp_sync(folder, variant.db))
    return PulpTarget(api, pids)


@dataclass(frozen=True)
class ApiSync:
    """One run on a Pulp server, as `sync_through_api` saw it: the task, the reset's seconds, and the server's
    workers' CPU and peak RSS over the sync (all None for a server that does not run here)."""

    outcome: TaskOutcome
    reset_seconds: float
    workers: _WorkerFigures


def sync_through_api(target: PulpTarget, url: str, settings: Mapping[str, Any], timeout: float) -> ApiSync:
    """Reset the server's repository, remote and orphans, then one timed sync; an API error is a failed task."""
    reset_started = time.monotonic()
    reset(target.api, defaults.REPOSITORY, timeout)
    reset_seconds = time.monotonic() - reset_started
    usage = _WorkerUsage(target.worker_pids)
    try:
        outcome = sync_once(target.api, defaults.REPOSITORY, url, settings, timeout, usage.sample)
    except PulpApiError as error:
        outcome = TaskOutcome("failed", str(error), None, time.monotonic() - usage.started, None, None)
    return ApiSync(outcome, reset_seconds, usage.figures())


def record_api_run(run: PlannedRun, started_at: str, done: ApiSync, expected: Mapping[str, Any]) -> RunRecord:
    """The run as a record: a failed task, or a version whose content count is not the manifest's
    (`expected`), is a failed run that keeps its error; the task's own seconds are the sync time, the
    POST-to-end wall time its wall time."""
    outcome, figures = done.outcome, done.workers
    error = _problem(outcome, expected)
    record = RunRecord(
        manifest=run.manifest, round=run.round, position=run.position, variant=run.variant, warmup=run.warmup,
        started_at=started_at, ok=error is None, error=error, returncode=0 if error is None else 1,
        sync_seconds=outcome.task_seconds, wall_seconds=outcome.wall_seconds, user_seconds=0.0,
        system_seconds=0.0, peak_rss_mb=figures["worker_peak_rss_mb"] or 0.0, voluntary_switches=0,
        involuntary_switches=0, reset_seconds=done.reset_seconds,
    )
    waited = None if outcome.task_seconds is None else outcome.wall_seconds - outcome.task_seconds
    return dataclasses.replace(
        record, **figures, queue_seconds=waited, bytes_downloaded=expected["bytes"] if error is None else None,
        artifacts_downloaded=outcome.content_count, content_units=outcome.content_count,
    )


def _given(variant: PulpApiVariant, environ: Mapping[str, str]) -> PulpTarget:
    """A server of the operator's: its URL and credentials, the password resolved from its reference."""

    password = resolve_reference("api_password", str(variant.api_password), environ)
    return PulpTarget(PulpApi(variant.server, variant.api_username, password))


def _problem(outcome: TaskOutcome, expected: Mapping[str, Any]) -> str | None:
    if not outcome.ok:
        return outcome.error or f"the task ended {outcome.state}"
    if outcome.content_count != expected["files"]:
        return f"the new version holds {outcome.content_count} files, the manifest lists {expected['files']}"
    return None


class _WorkerFigures(TypedDict):
    """The RunRecord fields of a server's workers over one run."""

    worker_user_seconds: float | None
    worker_system_seconds: float | None
    worker_peak_rss_mb: float | None


class _WorkerUsage:
    """CPU seconds (the workers' own and their reaped children's, from /proc/<pid>/stat) and peak RSS of
    the server's worker processes over one run; all None for a server that does not run here."""

    def __init__(self, pids: tuple[int, ...]) -> None:
        self.pids = pids
        self.started = time.monotonic()
        self.high_water = HighWater()
        self.before = _cpu_seconds(pids)

    def sample(self) -> None:
        for pid in self.pids:
            self.high_water.sample(pid)

    def figures(self) -> _WorkerFigures:
        if not self.pids:
            return {"worker_user_seconds": None, "worker_system_seconds": None, "worker_peak_rss_mb": None}
        after = _cpu_seconds(self.pids)
        return {"worker_user_seconds": after[0] - self.before[0], "worker_system_seconds": after[1] - self.before[1],
                "worker_peak_rss_mb": self.high_water.kib / 1024}


def _cpu_seconds(pids: tuple[int, ...]) -> tuple[float, float]:
    """(user, system) seconds of `pids` and their reaped children (utime + cutime, stime + cstime)."""
    user = system = 0.0
    ticks = os.sysconf("SC_CLK_TCK")
    for pid in [*pids, *(child for parent in pids for child in descendants(parent))]:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        user += (int(fields[11]) + int(fields[13])) / ticks
        system += (int(fields[12]) + int(fields[14])) / ticks
    return user, system
