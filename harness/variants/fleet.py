"""A run of a `tasking = "rq"` variant: K syncs queued at once (`repositories = K`), timed by their makespan.

A fleet of clients asks for many syncs at once, of repositories that share part of their content (the
same packages in several repositories); how long the workers take to get through them all is what
more workers, or more hosts, should shorten. One run here is that:

    K repository manifests, drawn once ─> `pulp-sync sync --tasking rq --repository bench-k` x K, started
    together, each waiting for its task ─> the tasks as the database recorded them (`pulp-sync tasks --json`)

Repository k's manifest is a seeded SHARE sample of the run's manifest lines (harness.experiment.sample, seed
`sample_seed + k`): each repository a different sample, so any two share about SHARE² of their files
and together they hold nearly all of them; the files are still fetched relative to the manifest's URL
(`--manifest-file`). With K = 1 the one repository is the manifest itself (or the experiment's sample),
the single task the harness always queued for an RQ variant.

The run's time is its makespan, from the first task's creation (its dispatch) to the last task's end,
both as the database recorded them, so neither the clients' start-up before dispatching nor their
polling after the end is counted. Its bytes and files are those the tasks actually downloaded (a file
two concurrent syncs both lacked is downloaded twice; the store keeps one copy), and each task's
queue wait is from its creation to its start.
"""

from __future__ import annotations

import dataclasses
import json
import statistics
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from harness import defaults
from harness.experiment.sample import parse_sample, sample_manifest
from harness.experiment.spec import Experiment
from harness.experiment.variant import RqVariant
from harness.run.child import ChildRun, last_words, run_child
from harness.run.fixture_site import ManifestSource
from harness.variants import pulp_sync_cli

__all__ = ["SHARE", "FleetTask", "Fleet", "repository_names", "download_share", "fleet_manifests", "dispatch",
           "read_fleet"]

SHARE = "75%"
"""Each repository of a fleet holds this sample of the manifest's files: two repositories share about
56% of theirs (0.75²), eight together hold all but 0.25⁸ of the manifest, as repositories built from
one upstream do."""
_SUMMED = ("bytes_downloaded", "artifacts_downloaded", "artifacts_skipped", "content_units", "retries", "failures")
"""Report fields that add up over a fleet's tasks."""
_LARGEST = ("latency_p50", "latency_p90", "latency_p99", "processes", "connections")
"""Report fields taken as the largest task's: percentiles do not add up, and the largest is an upper bound
of the fleet's own (if every task has 99% of its downloads within its p99, all have within the largest);
the processes and connections are each sync's own, one repository's run's those of its one task."""


@dataclass(frozen=True)
class FleetTask:
    """One task as `pulp-sync tasks --json` gives it: when it was created, started and finished, the
    worker that ran it (`host.pid.suffix`, pulp_sync.tasking.worker) and its report."""

    repository: str
    state: str
    created: datetime
    started: datetime | None
    finished: datetime | None
    worker: str
    error: str | None
    report: Mapping[str, Any]

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> FleetTask:
        """Read one task of `pulp-sync tasks --json`."""
        return cls(repository=str(data["repository"]), state=str(data["state"]),
                   created=datetime.fromisoformat(data["created"]),
                   started=_when(data.get("started")), finished=_when(data.get("finished")),
                   worker=str(data.get("worker") or ""), error=data.get("error"), report=data.get("report") or {})

    @property
    def queue_seconds(self) -> float | None:
        """From its creation to its start: the queue, and a worker's pick-up and fork."""
        return None if self.started is None else (self.started - self.created).total_seconds()

    @property
    def host(self) -> str:
        """The host name of the worker that ran it (a host name may hold dots; the pid and suffix do not)."""
        return self.worker.rsplit(".", 2)[0]


@dataclass(frozen=True)
class Fleet:
    """One fleet run: its K sync children, the tasks read back, and why they could not be read, if so."""

    children: tuple[ChildRun, ...]
    tasks: tuple[FleetTask, ...]
    problem: str | None

    @property
    def makespan(self) -> float | None:
        """Seconds from the first task's creation to the last one's end; None unless every task ended."""
        ends = [task.finished for task in self.tasks if task.finished is not None]
        if len(ends) < len(self.children):
            return None
        return (max(ends) - min(task.created for task in self.tasks)).total_seconds()

    @property
    def queue_waits(self) -> tuple[float, ...]:
        """Each started task's queue wait, in the order the tasks were created, to the millisecond."""
        ordered = sorted(self.tasks, key=lambda task: task.created)
        return tuple(round(task.queue_seconds, 3) for task in ordered if task.queue_seconds is not None)

    @property
    def median_queue_seconds(self) -> float | None:
        """The median task's queue wait (the one task's, in a run of one)."""
        return statistics.median(self.queue_waits) if self.queue_waits else None

    @property
    def hosts_used(self) -> int:
        """How many hosts' workers ran the tasks (this machine counts as one)."""
        return len({task.host for task in self.tasks if task.worker})

    @property
    def report(self) -> dict[str, Any]:
        """The tasks' reports as one, over the makespan: counts summed, the largest latency percentiles,
        and the aggregate MB/s; the first task's downloader and concurrency, and its limit over time when it is
        the only one."""
        reports = [task.report for task in self.tasks if task.report]
        combined: dict[str, Any] = {"seconds": self.makespan}
        if not reports:
            return combined
        combined |= {name: sum(report.get(name) or 0 for report in reports) for name in _SUMMED}
        combined |= {name: max((r[name] for r in reports if r.get(name) is not None), default=None)
                     for name in _LARGEST}
        combined |= {name: reports[0].get(name) for name in ("downloader", "concurrency", "auto_concurrency")}
        if len(reports) == 1:  # one task's limit over time; K tasks each found their own, which no one line is
            combined["concurrency_trajectory"] = reports[0].get("concurrency_trajectory")
        combined["mb_per_s"] = combined["bytes_downloaded"] / 1e6 / self.makespan if self.makespan else None
        return combined

    @property
    def clients(self) -> ChildRun:
        """The sync children as one process would be measured: the longest wall time, CPU and context
        switches summed, the largest peak RSS; the status and output of the first that failed (else the
        first's)."""
        first = next((child for child in self.children if child.returncode != 0), self.children[0])
        return dataclasses.replace(
            first,
            wall_seconds=max(child.wall_seconds for child in self.children),
            user_seconds=sum(child.user_seconds for child in self.children),
            system_seconds=sum(child.system_seconds for child in self.children),
            peak_rss_mb=max(child.peak_rss_mb for child in self.children),
            voluntary_switches=sum(child.voluntary_switches for child in self.children),
            involuntary_switches=sum(child.involuntary_switches for child in self.children),
        )


def repository_names(count: int) -> list[str]:
    """The repositories a run of `count` syncs: the harness's one repository, or bench-1 ... bench-K."""
    return [defaults.REPOSITORY] if count == 1 else [f"{defaults.REPOSITORY}-{k}" for k in range(1, count + 1)]


def download_share(count: int) -> float:
    """At most how many times its manifest's bytes a run of `count` repositories downloads: once for one,
    K samples of SHARE for K (when every sync runs at once and none finds another's files yet)."""
    percent = parse_sample(SHARE).percent
    assert percent is not None
    return 1.0 if count == 1 else count * float(percent) / 100


def fleet_manifests(experiment: Experiment, sources: Mapping[str, ManifestSource],
                    folder: Path) -> dict[tuple[str, str], tuple[Path | None, ...]]:
    """Each RQ variant's repository manifests per manifest it runs, by (manifest, variant): None for a
    repository that syncs the manifest's own lines. Drawn once per number of repositories, into `folder`, so
    variants with as many repositories sync the very same ones."""
    drawn: dict[tuple[str, int], tuple[Path | None, ...]] = {}
    chosen = {}
    for manifest, variant in experiment.cells:
        if isinstance(variant, RqVariant):
            key = (manifest, variant.repositories)
            if key not in drawn:
                drawn[key] = _repository_manifests(sources[manifest], variant.repositories, folder,
                                                   experiment.sample_seed)
            chosen[(manifest, variant.name)] = drawn[key]
    return chosen


def _repository_manifests(source: ManifestSource, count: int, folder: Path, seed: int) -> tuple[Path | None, ...]:
    """`count` repositories' manifests, each a different seeded SHARE sample of `source`'s lines."""
    if count == 1:
        return (source.lines if source.sampled else None,)
    where = folder / source.name.replace("/", "_") / f"repositories-{count}"
    where.mkdir(parents=True, exist_ok=True)
    paths = []
    for k in range(1, count + 1):
        path = where / f"repository-{k}"
        sample_manifest(source.lines, parse_sample(SHARE), path, seed + k)
        paths.append(path)
    return tuple(paths)


def dispatch(variant: RqVariant, url: str, env: Mapping[str, str], manifests: Sequence[Path | None], timeout: float,
             command: Sequence[str], settings: Mapping[str, Any]) -> tuple[ChildRun, ...]:
    """One `pulp-sync sync --tasking rq` child per repository, all started at once, each to its task's end."""
    names = repository_names(len(manifests))

    def sync(name: str, manifest: Path | None) -> ChildRun:
        return pulp_sync_cli.sync(url, variant, dict(env), timeout, command, settings, manifest, repository=name)

    with ThreadPoolExecutor(max_workers=len(names), thread_name_prefix="fleet-sync") as pool:
        return tuple(pool.map(sync, names, manifests))


def read_fleet(children: tuple[ChildRun, ...], env: Mapping[str, str], command: Sequence[str]) -> Fleet:
    """The fleet's tasks as the database recorded them, once its children have ended. The run's reset
    left no other task; the repositories' names pick the run's own all the same."""
    names = set(repository_names(len(children)))
    listed = run_child([*command, "tasks", "--json"], env=env, timeout=defaults.FLEET_TASKS_SECONDS)
    try:
        tasks = tuple(FleetTask.from_dict(task) for task in json.loads(listed.stdout) if task["repository"] in names)
    except (ValueError, KeyError, TypeError):
        said = last_words(listed.stderr, listed.returncode)
        return Fleet(children, (), f"the run's tasks could not be read (`pulp-sync tasks --json`: {said})")
    return Fleet(children, tasks, None)


def _when(text: str | None) -> datetime | None:
    return None if text is None else datetime.fromisoformat(text)
