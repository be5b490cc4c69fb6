"""The run loop: for every planned run, restart what the variant uses, reset, sync, record, save.

    prepare the fixture tree ─> start a server per profile ─> for each run in plan order:
        restart its server (if asked) ─> move the last run's files to the trash
        ─> `pulp-sync reset --yes` ─> `pulp-sync sync --json`
        ─> record ─> rewrite results.json, runs.csv, perf_data (atomically)
    ─> empty the trash (harness/run/trash.py says why not before each run)

A run that fails is recorded with its error and the experiment goes on; a reset that fails stops
it (every later run would measure a dirty state) with the runs so far saved, ready for --resume.
Before the first run each manifest's source is prepared (harness.run.fixture_site.prepare_sources): a remote's
manifest is fetched and checked with every variant's settings, and a sample is drawn once, as are the
repositories' manifests of RQ variants (harness.variants.fleet). A `tasking = "rq"` run starts its workers
(on the hosts of scripts/hosts.sh with `hosts`, brought up before the first run: harness.variants.hosts), queues
its syncs at once and waits for them all (harness.variants.fleet).
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console

from harness import defaults
from harness.analysis.derived import save_run_outputs
from harness.experiment.operator_remote import resolve_settings
from harness.experiment.spec import PULPCORE, Experiment, SpecError, Variant
from harness.results.folder import Results, now_iso
from harness.results.records import RunRecord
from harness.run.child import descendants
from harness.run.fixture_site import FixtureSite, ManifestSource, check_site, prepare_sources, prepare_tree
from harness.run.machine import Watch, snapshot
from harness.run.progress import RunProgress, progress_for
from harness.run.provenance import environment_facts
from harness.run.recording import record_command_run, record_fleet_run, record_run
from harness.run.schedule import PlannedRun, plan
from harness.run.trash import Trash
from harness.variants import fleet, hosts, pulp_sync_cli
from harness.variants.api_runs import PulpTarget, make_api_run, pulp_targets
from harness.variants.databases import create_database, database_url
from harness.variants.programs import check_output, program_of, run_command
from harness.variants.pulpcore import default_venv, installed_version
from harness.variants.workers import REDIS_URL, running_workers

__all__ = ["RunOptions", "check_runnable", "prepare", "run_experiment", "compatible"]

_COMMAND_INPUTS = "command-inputs"
_COMMAND_OUTPUT = "command-output"
_TRASH = "trash"
_STORE = "artifacts"
_MANIFESTS = "manifests"


@dataclass(frozen=True)
class RunOptions:
    """How to run, as opposed to what: the state folder, the pulp-sync command, progress, cleanup."""

    state_dir: Path = defaults.STATE_DIR
    command: Sequence[str] = defaults.PULP_SYNC_COMMAND
    progress: RunProgress = field(default_factory=lambda: progress_for(Console(stderr=True)))
    cleanup: bool = True


def check_runnable(experiment: Experiment) -> None:
    """Fail before the first run if a downloader is not installed, a profile cannot be served or a
    database cannot be reached; create the variants' databases that are missing, and bring up the
    hosts of variants with `hosts` (also where a fixture server must listen)."""
    most_hosts = max(variant.hosts for variant in experiment.variants)
    if most_hosts:
        hosts.bring_up(most_hosts)
    for url in {database_url(variant.db) for variant in experiment.variants} - {None}:
        create_database(str(url))
    installed = pulp_sync_cli.installed_downloaders()
    for variant in experiment.variants:
        if variant.is_pulp_api:
            _check_pulp_api(variant)
        elif variant.is_command:
            program = program_of(str(variant.command))
            if shutil.which(program) is None:
                raise SpecError(f"variant {variant.name!r}: {program!r} is not installed (or not on PATH)")
        elif variant.downloader not in installed:
            known = ", ".join(installed) or "none (is pulp-sync installed, e.g. `pip install -e .`?)"
            raise SpecError(f"variant {variant.name!r}: no downloader named {variant.downloader!r}; installed: {known}")
    if experiment.base_url is None:
        check_site(experiment)


def _check_pulp_api(variant: Variant) -> None:
    """pulpcore is installed when a variant asks the harness to start it."""
    if variant.server == PULPCORE:
        installed_version(default_venv())


def compatible(saved: Experiment, wanted: Experiment) -> list[str]:
    """Settings that differ between a saved experiment and the one asked to resume it (runs may grow; the
    band only judges the runs, so it may change, and folders made before it existed resume)."""
    old, new = saved.as_dict(), wanted.as_dict()
    return sorted(key for key in old.keys() | new.keys()
                  if key not in ("runs", "band") and old.get(key) != new.get(key))


def prepare(experiment: Experiment, state_dir: Path) -> tuple[Path | None, dict[str, ManifestSource]]:
    """The fixture tree (None for a remote of one's own) and every manifest's source, checked and sampled."""
    root = prepare_tree(experiment) if experiment.base_url is None else None
    return root, prepare_sources(experiment, root, state_dir / _MANIFESTS, os.environ)


def run_experiment(
    experiment: Experiment, folder: Path, options: RunOptions, previous: Results | None = None,
    prepared: tuple[Path | None, dict[str, ManifestSource]] | None = None,
) -> Results:
    """Make every planned run not yet in `previous` (a resumed folder) and save after each one; `prepared`
    is what `prepare` returned, when the caller has already checked the sources."""
    check_runnable(experiment)
    root, sources = prepared or prepare(experiment, options.state_dir)
    settings = {v.name: resolve_settings(experiment.remote_of(v), os.environ) for v in experiment.variants}
    repositories = fleet.fleet_manifests(experiment, sources, options.state_dir / _MANIFESTS)
    results = _start(experiment, sources, previous, options.state_dir)
    planned = plan(experiment)
    done = {run.key for run in results.runs}
    todo = [run for run in planned if run.key not in done]
    save_run_outputs(folder, results)
    session = time.monotonic()
    elapsed_before = results.elapsed_seconds
    trash = Trash(options.state_dir / _TRASH, defaults.TRASH_MANY_FILES, defaults.TRASH_MIN_FREE)
    with FixtureSite(experiment, root) as site, pulp_targets(experiment, options.state_dir, os.environ) as targets:
        options.progress.start(len(planned), len(planned) - len(todo))
        watch = Watch()
        try:
            with watch:
                for run in todo:
                    options.progress.run_started(run, _label(run, experiment))
                    record = _make_run(run, experiment, site, options, trash, sources[run.manifest],
                                       settings[run.variant], targets.get(run.variant),
                                       repositories.get((run.manifest, run.variant), ()))
                    results.runs.append(record)
                    results.elapsed_seconds = elapsed_before + time.monotonic() - session
                    save_run_outputs(folder, results)
                    options.progress.run_finished(record)
                    if run is todo[0] and len(todo) > 1:
                        options.progress.note(_estimate(time.monotonic() - session, len(todo) - 1))
        finally:
            options.progress.stop()
            state = results.environment.setdefault("machine_state", {})
            state["during"] = watch.summary()
            # the machine as the last run left it, its servers still up but not counted among the busiest
            state["after"] = snapshot(set(descendants(os.getpid())))
            results.environment["servers"] = site.stats()
            _discard_run_files(options.state_dir, trash)
            if trash.folder.exists():
                options.progress.note(
                    f"Deleting the runs' files kept in {trash.folder} (about a minute per million files) ...")
            trash.empty()
    results.finished_at = now_iso()
    if options.cleanup:
        _clean_up(experiment, options)
    save_run_outputs(folder, results)
    return results


def _start(experiment: Experiment, sources: Mapping[str, ManifestSource], previous: Results | None,
           state_dir: Path) -> Results:
    """The results to add runs to: the resumed ones (with this session's spec) or new ones, with the
    environment of this session (provenance.environment_facts)."""
    results = previous or Results(experiment=experiment, started_at=now_iso())
    results.experiment = experiment
    results.finished_at = None
    results.environment = environment_facts(state_dir=state_dir)
    results.manifests = {name: dict(source.facts) for name, source in sources.items()}
    return results


def _make_run(
    run: PlannedRun, experiment: Experiment, site: FixtureSite, options: RunOptions, trash: Trash,
    source: ManifestSource, settings: Mapping[str, Any], target: PulpTarget | None,
    repositories: Sequence[Path | None],
) -> RunRecord:
    """One run: restart (if asked), the last run's files to the trash, reset in its own child (timed
    as overhead), then the sync child with the variant's resolved Remote `settings`, or for an RQ
    variant the syncs of its `repositories` (their manifests: harness.variants.fleet); for a pulp-api variant,
    a reset and a sync through its server's API (`target`)."""
    variant = experiment.variant(run.variant)
    env = _child_env(variant, options.state_dir)
    restart_seconds = site.restart(variant)
    if target is not None:
        url = site.manifest_url(variant, run.manifest)
        return make_api_run(run, target, url, settings, source.facts, experiment.timeout, now_iso())
    _discard_run_files(options.state_dir, trash)
    reset = pulp_sync_cli.reset(env, options.command)
    started_at = now_iso()
    url = site.manifest_url(variant, run.manifest)
    if variant.is_command:
        return _make_command_run(run, variant, url, experiment, site, options, env, started_at,
                                 reset.wall_seconds, restart_seconds, source)
    if variant.tasking == "rq":
        with running_workers(variant.workers, variant.worker or "fork", env, options.command,
                             hosts=variant.hosts) as workers:
            children = fleet.dispatch(variant, url, env, repositories, experiment.timeout, options.command, settings)
        done = fleet.read_fleet(children, env, options.command)
        assert workers.usage is not None
        return record_fleet_run(run, started_at, done, reset.wall_seconds, restart_seconds, experiment.timeout,
                                workers.usage, variant.hosts)
    lines = source.lines if source.sampled else None
    child = pulp_sync_cli.sync(url, variant, env, experiment.timeout, options.command, settings, lines)
    return record_run(run, started_at, child, reset.wall_seconds, restart_seconds, experiment.timeout)


def _child_env(variant: Variant, state_dir: Path) -> dict[str, str]:
    """The environment of `variant`'s children (pulp_sync_cli.child_env); with hosts, its database and Redis are
    where the hosts reach them, for every process of the run alike, as in a deployment on several hosts."""
    env = pulp_sync_cli.child_env(variant, state_dir)
    return hosts.on_bridge(env, REDIS_URL) if variant.hosts else env


def _estimate(first_seconds: float, left: int) -> str:
    """After the first run: how long the rest will take at its pace (a warm-up is often slower: an upper bound)."""
    total = round(first_seconds * left)
    hours = f"{total // 3600} h {total % 3600 // 60:02d} min"
    about = f"{total} s" if total < 90 else f"{total // 60} min" if total < 5400 else hours
    return f"The first run took {first_seconds:.1f} s with its reset: about {about} for the {left} runs left"


def _discard_run_files(state_dir: Path, trash: Trash) -> None:
    """Move the store and a peer's output of the last run into the trash, so the reset deletes no file."""
    for tree in (_STORE, _COMMAND_OUTPUT):
        trash.discard(state_dir / tree)


def _make_command_run(run: PlannedRun, variant: Variant, url: str, experiment: Experiment, site: FixtureSite,
                      options: RunOptions, env: dict[str, str], started_at: str, reset_seconds: float,
                      restart_seconds: float | None, source: ManifestSource) -> RunRecord:
    """An external program's run: fetch into an emptied folder, then check every file it wrote."""
    inputs = site.command_inputs(variant, source, options.state_dir / _COMMAND_INPUTS)
    out_dir = options.state_dir / _COMMAND_OUTPUT
    template = str(variant.command)
    child = run_command(template, inputs, url, out_dir, variant.download_concurrency, env, experiment.timeout)
    problem = check_output(inputs, out_dir) if child.returncode == 0 else None
    fetched = {
        "program": program_of(template),
        "concurrency": variant.download_concurrency,
        "files": len(inputs.entries),
        "bytes": sum(entry.size for entry in inputs.entries),
    }
    return record_command_run(run, started_at, child, reset_seconds, restart_seconds, experiment.timeout,
                              fetched, problem)


def _label(run: PlannedRun, experiment: Experiment) -> str:
    """"100 asyncio run 3/10" (or "warm-up 1/1"): what the progress display shows for a run."""
    if run.warmup:
        return f"{run.manifest} {run.variant} warm-up {run.round}/{experiment.warmup}"
    return f"{run.manifest} {run.variant} run {run.round - experiment.warmup}/{experiment.runs}"


def _clean_up(experiment: Experiment, options: RunOptions) -> None:
    """Empty the store once more at the end (once per database): the last sync's artifacts can be gigabytes."""
    for variant in {variant.db: variant for variant in experiment.variants}.values():
        try:
            pulp_sync_cli.reset(pulp_sync_cli.child_env(variant, options.state_dir), options.command)
        except pulp_sync_cli.ResetFailed:
            pass  # the results are saved; a full store is the user's to clean, not a reason to fail
