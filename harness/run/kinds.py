"""The kinds of variant behind one small interface, as httpx's transports are: the runner asks a variant's
kind to check, prepare, run one run and record it, and never asks which kind it holds.

    check (before the first run) ─> prepare (once per experiment: servers, repositories' manifests)
    ─> for each run: run_one (restart, reset, the sync's processes) ─> record (its RunRecord)

A kind is registered in KINDS under its variant class's tag (harness.experiment.spec.kind_tag, from what users
already write: `kind`, `tasking`); a new kind is a variant class there, a class here and a line in each
registry. Where a kind's processes run from (the command that starts pulp-sync, its interpreter first, and
their environment) is `Processes`: today the harness's own interpreter for every variant, a variant's own
environment when the harness builds one.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

from harness.errors import SpecError
from harness.experiment.spec import Experiment
from harness.experiment.variant import (
    PULPCORE,
    CommandVariant,
    InlineVariant,
    PulpApiVariant,
    PulpSyncVariant,
    RqVariant,
    Variant,
)
from harness.results.folder import now_iso
from harness.results.records import RunRecord
from harness.run.child import ChildRun
from harness.run.fixture_site import FixtureSite, ManifestSource
from harness.run.recording import record_command_run, record_fleet_run, record_run
from harness.run.schedule import PlannedRun
from harness.run.trash import Trash
from harness.variants import fleet, hosts, pulp_sync_cli
from harness.variants.api_runs import ApiSync, PulpTarget, pulp_targets, record_api_run, sync_through_api
from harness.variants.programs import check_output, program_of, run_command
from harness.variants.pulpcore import default_venv, installed_version
from harness.variants.workers import REDIS_URL, WorkerUsage, running_workers

__all__ = ["MANIFESTS", "Bench", "Processes", "VariantKind", "KINDS", "processes_of", "discard_run_files"]

COMMAND_INPUTS = "command-inputs"
COMMAND_OUTPUT = "command-output"
STORE = "artifacts"
MANIFESTS = "manifests"
"""The state folder's trees a run writes: its command's inputs and output, its store, the manifests drawn."""

Done = TypeVar("Done")
OfKind = TypeVar("OfKind", contravariant=True)


@dataclass(frozen=True)
class Processes:
    """Where a variant's processes run from: the command that starts pulp-sync (its interpreter first) and
    their environment variables. The one place they come from (`processes_of` makes it; the runner's runs and
    its last reset both take it), so that a variant's own interpreter and commit, when the harness builds an
    environment per variant, fill it alone and no caller changes."""

    command: Sequence[str]
    env: dict[str, str]


@dataclass(frozen=True)
class Bench:
    """What every run of an experiment shares: the spec, the state folder, the fixture site, the trash, each
    manifest's source, each variant's resolved Remote settings by name, and the harness's own environment
    (an operator's server's password is resolved from it)."""

    experiment: Experiment
    state_dir: Path
    site: FixtureSite
    trash: Trash
    sources: Mapping[str, ManifestSource]
    settings: Mapping[str, Mapping[str, Any]]
    environ: Mapping[str, str]


class VariantKind(Protocol[OfKind, Done]):
    """One kind of variant (`OfKind`, its class in harness.experiment.spec): what it needs before the first run,
    and how it makes and records one run."""

    def check(self, variant: OfKind) -> None:
        """Raise SpecError before the first run if `variant` cannot run on this machine."""

    def prepare(self, bench: Bench, stack: ExitStack) -> None:
        """Start, for as long as `stack` lasts, what this kind's variants share over the whole experiment."""

    def run_one(self, run: PlannedRun, variant: OfKind, bench: Bench, processes: Processes) -> Done:
        """Make one run of `variant`: restart its fixture server if asked, reset, sync."""

    def record(self, run: PlannedRun, variant: OfKind, done: Done, bench: Bench) -> RunRecord:
        """The run's record, its failure (if any) as its error."""


def processes_of(variant: Variant, state_dir: Path, command: Sequence[str]) -> Processes:
    """Where `variant`'s processes run from (pulp_sync_cli.child_env); with hosts, its database and Redis are
    where the hosts reach them, for every process of the run alike, as in a deployment on several hosts."""
    env = pulp_sync_cli.child_env(variant, state_dir)
    on_hosts = isinstance(variant, RqVariant) and variant.hosts > 0
    return Processes(command, hosts.on_bridge(env, REDIS_URL) if on_hosts else env)


def discard_run_files(state_dir: Path, trash: Trash) -> None:
    """Move the store and a peer's output of the last run into the trash, so the reset deletes no file."""
    for tree in (STORE, COMMAND_OUTPUT):
        trash.discard(state_dir / tree)


@dataclass(frozen=True)
class _Reset:
    """A local run's start: when it began, and the seconds its fixture server's restart and its reset took."""

    started_at: str
    reset_seconds: float
    restart_seconds: float | None


@dataclass(frozen=True)
class _Sync:
    """An inline run: its start and its sync child."""

    start: _Reset
    child: ChildRun


@dataclass(frozen=True)
class _FleetSync:
    """An RQ run: its start, its sync children and their tasks, its workers' CPU and memory."""

    start: _Reset
    fleet: fleet.Fleet
    workers: WorkerUsage


@dataclass(frozen=True)
class _CommandRun:
    """A command's run: its start, its child, what it fetched and what was wrong with its output."""

    start: _Reset
    child: ChildRun
    fetched: Mapping[str, Any]
    problem: str | None


@dataclass(frozen=True)
class _ApiRun:
    """A run on a Pulp server: when it began, and its reset and task."""

    started_at: str
    sync: ApiSync


def _restart_and_reset(variant: Variant, bench: Bench, processes: Processes) -> _Reset:
    """Restart the fixture server (if asked), the last run's files to the trash, `pulp-sync reset` in its
    own child (timed as overhead)."""
    restart_seconds = bench.site.restart(variant)
    discard_run_files(bench.state_dir, bench.trash)
    reset = pulp_sync_cli.reset(processes.env, processes.command)
    return _Reset(now_iso(), reset.wall_seconds, restart_seconds)


def _check_downloader(variant: PulpSyncVariant) -> None:
    """The variant's downloader is installed."""
    installed = pulp_sync_cli.installed_downloaders()
    if variant.downloader not in installed:
        known = ", ".join(installed) or "none (is pulp-sync installed, e.g. `pip install -e .`?)"
        raise SpecError(f"variant {variant.name!r}: no downloader named {variant.downloader!r}; installed: {known}")


class PulpSyncInline:
    """pulp-sync's sync in a child process of its own (`tasking = "inline"`)."""

    def check(self, variant: InlineVariant) -> None:
        _check_downloader(variant)

    def prepare(self, bench: Bench, stack: ExitStack) -> None:
        """Nothing lasts longer than one run."""

    def run_one(self, run: PlannedRun, variant: InlineVariant, bench: Bench, processes: Processes) -> _Sync:
        """The sync child, with the variant's resolved Remote settings and the manifest's sample if drawn."""
        start = _restart_and_reset(variant, bench, processes)
        url = bench.site.manifest_url(variant, run.manifest)
        source = bench.sources[run.manifest]
        child = pulp_sync_cli.sync(url, variant, processes.env, bench.experiment.timeout, processes.command,
                                   bench.settings[variant.name], source.lines if source.sampled else None)
        return _Sync(start, child)

    def record(self, run: PlannedRun, variant: InlineVariant, done: _Sync, bench: Bench) -> RunRecord:
        start = done.start
        return record_run(run, start.started_at, done.child, start.reset_seconds, start.restart_seconds,
                          bench.experiment.timeout)


class PulpSyncRq:
    """pulp-sync's syncs queued for fresh RQ workers (`tasking = "rq"`): harness.variants.fleet."""

    def __init__(self) -> None:
        self.repositories: dict[tuple[str, str], tuple[Path | None, ...]] = {}

    def check(self, variant: RqVariant) -> None:
        _check_downloader(variant)

    def prepare(self, bench: Bench, stack: ExitStack) -> None:
        """The repositories' manifests of every RQ variant, drawn once (harness.variants.fleet)."""
        self.repositories = fleet.fleet_manifests(bench.experiment, bench.sources, bench.state_dir / MANIFESTS)

    def run_one(self, run: PlannedRun, variant: RqVariant, bench: Bench, processes: Processes) -> _FleetSync:
        """Start the workers, queue the syncs of the variant's repositories at once and wait for them all."""
        start = _restart_and_reset(variant, bench, processes)
        url = bench.site.manifest_url(variant, run.manifest)
        repositories = self.repositories.get((run.manifest, variant.name), ())
        with running_workers(variant.workers, variant.worker or "fork", processes.env, processes.command,
                             hosts=variant.hosts) as workers:
            children = fleet.dispatch(variant, url, processes.env, repositories, bench.experiment.timeout,
                                      processes.command, bench.settings[variant.name])
        done = fleet.read_fleet(children, processes.env, processes.command)
        assert workers.usage is not None
        return _FleetSync(start, done, workers.usage)

    def record(self, run: PlannedRun, variant: RqVariant, done: _FleetSync, bench: Bench) -> RunRecord:
        start = done.start
        return record_fleet_run(run, start.started_at, done.fleet, start.reset_seconds, start.restart_seconds,
                                bench.experiment.timeout, done.workers, variant.hosts)


class Command:
    """An external program (curl, aria2c, ...): harness.variants.programs."""

    def check(self, variant: CommandVariant) -> None:
        program = program_of(variant.command)
        if shutil.which(program) is None:
            raise SpecError(f"variant {variant.name!r}: {program!r} is not installed (or not on PATH)")

    def prepare(self, bench: Bench, stack: ExitStack) -> None:
        """Nothing lasts longer than one run (the inputs are written by the fixture site, once per URL)."""

    def run_one(self, run: PlannedRun, variant: CommandVariant, bench: Bench, processes: Processes) -> _CommandRun:
        """Fetch into an emptied folder, then check every file the program wrote."""
        start = _restart_and_reset(variant, bench, processes)
        url = bench.site.manifest_url(variant, run.manifest)
        inputs = bench.site.command_inputs(variant, bench.sources[run.manifest], bench.state_dir / COMMAND_INPUTS)
        out_dir = bench.state_dir / COMMAND_OUTPUT
        template = variant.command
        assert isinstance(variant.download_concurrency, int), "a command variant refuses auto (spec._check_command)"
        child = run_command(template, inputs, url, out_dir, variant.download_concurrency, processes.env,
                            bench.experiment.timeout)
        problem = check_output(inputs, out_dir) if child.returncode == 0 else None
        fetched = {
            "program": program_of(template),
            "concurrency": variant.download_concurrency,
            "files": len(inputs.entries),
            "bytes": sum(entry.size for entry in inputs.entries),
        }
        return _CommandRun(start, child, fetched, problem)

    def record(self, run: PlannedRun, variant: CommandVariant, done: _CommandRun, bench: Bench) -> RunRecord:
        start = done.start
        return record_command_run(run, start.started_at, done.child, start.reset_seconds, start.restart_seconds,
                                  bench.experiment.timeout, done.fetched, done.problem)


class PulpApi:
    """A Pulp 3 server's own syncs through its REST API (harness.variants.api_runs): pulpcore or pulp-sync
    started by the harness for the whole experiment, or a server of the operator's."""

    def __init__(self) -> None:
        self.targets: dict[str, PulpTarget] = {}

    def check(self, variant: PulpApiVariant) -> None:
        """pulpcore is installed when a variant asks the harness to start it."""
        if variant.server == PULPCORE:
            installed_version(default_venv())

    def prepare(self, bench: Bench, stack: ExitStack) -> None:
        """Each pulp-api variant's server, started once for the experiment (harness.variants.api_runs)."""
        self.targets = stack.enter_context(pulp_targets(bench.experiment, bench.state_dir, bench.environ))

    def run_one(self, run: PlannedRun, variant: PulpApiVariant, bench: Bench, processes: Processes) -> _ApiRun:
        """A reset and a sync through the server's API; the server resets itself, pulp-sync's state is untouched."""
        bench.site.restart(variant)
        url = bench.site.manifest_url(variant, run.manifest)
        started_at = now_iso()
        return _ApiRun(started_at, sync_through_api(self.targets[variant.name], url, bench.settings[variant.name],
                                                    bench.experiment.timeout))

    def record(self, run: PlannedRun, variant: PulpApiVariant, done: _ApiRun, bench: Bench) -> RunRecord:
        return record_api_run(run, done.started_at, done.sync, bench.sources[run.manifest].facts)


KINDS: Mapping[str, Callable[[], VariantKind[Any, Any]]] = {
    "pulp-sync": PulpSyncInline,
    "pulp-sync-rq": PulpSyncRq,
    "command": Command,
    "pulp-api": PulpApi,
}
"""Each kind by its variants' tag (harness.experiment.spec.VARIANT_KINDS has the same names): a new one for
every experiment, since `prepare` keeps what the experiment's runs share."""
