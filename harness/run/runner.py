"""The run loop: for every planned run, its variant's kind makes and records it, then the folder is saved.

    prepare the fixture tree ─> start a server per profile ─> prepare each kind of variant ─> for each run
        in plan order: its kind's run_one (restart its server if asked, reset, sync) ─> its kind's record
        ─> rewrite results.json, runs.csv, perf_data (atomically)
    ─> empty the trash (harness/run/trash.py says why not before each run)

A run that fails is recorded with its error and the experiment goes on; a reset that fails stops
it (every later run would measure a dirty state) with the runs so far saved, ready for --resume.
Before the first run each manifest's source is prepared (harness.run.fixture_site.prepare_sources): a remote's
manifest is fetched and checked with every variant's settings, and a sample is drawn once. What each kind
of variant does (pulp-sync inline or on RQ workers, an external command, a Pulp server's API) is
harness.run.kinds: the runner never asks which kind a variant is.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness import defaults
from harness.analysis.derived import save_run_outputs
from harness.experiment.operator_remote import resolve_settings
from harness.experiment.spec import Experiment
from harness.experiment.variant import kind_tag
from harness.results.folder import Results, now_iso
from harness.results.records import RunRecord
from harness.run.child import descendants
from harness.run.fixture_site import FixtureSite, ManifestSource, check_site, prepare_sources, prepare_tree
from harness.run.kinds import KINDS, MANIFESTS, Bench, VariantKind, discard_run_files, processes_of
from harness.run.machine import Watch, snapshot
from harness.run.progress import RunProgress, progress_for
from harness.run.provenance import environment_facts
from harness.run.schedule import PlannedRun, plan
from harness.run.trash import Trash
from harness.variants import hosts, pulp_sync_cli
from harness.variants.databases import create_database, database_url
from pulp_base.console import console

__all__ = ["RunOptions", "check_runnable", "check_variants", "prepare", "run_experiment", "compatible"]

_TRASH = "trash"


@dataclass(frozen=True)
class RunOptions:
    """How to run, as opposed to what: the state folder, the pulp-sync command, progress, cleanup."""

    state_dir: Path = defaults.STATE_DIR
    command: Sequence[str] = defaults.PULP_SYNC_COMMAND
    progress: RunProgress = field(default_factory=lambda: progress_for(console(stderr=True)))
    cleanup: bool = True


def check_runnable(experiment: Experiment) -> None:
    """Fail before the first run if a downloader is not installed, a profile cannot be served or a
    database cannot be reached; create the variants' databases that are missing, and bring up the
    hosts of variants with `hosts` (also where a fixture server must listen)."""
    if experiment.hosts:
        hosts.bring_up(experiment.hosts)
    for url in {database_url(variant.database) for variant in experiment.variants} - {None}:
        create_database(str(url))
    check_variants(experiment)
    if experiment.base_url is None:
        check_site(experiment)


def check_variants(experiment: Experiment) -> None:
    """What each variant's kind needs is here (its downloader installed, its program on PATH, pulpcore),
    changing nothing: `bench spec` checks this much too."""
    for variant in experiment.variants:
        KINDS[kind_tag(variant)]().check(variant)


def compatible(saved: Experiment, wanted: Experiment) -> list[str]:
    """Settings that differ between a saved experiment and the one asked to resume it (runs may grow; the
    band only judges the runs, so it may change, and folders made before it existed resume)."""
    old, new = saved.as_dict(), wanted.as_dict()
    return sorted(key for key in old.keys() | new.keys()
                  if key not in ("runs", "band") and old.get(key) != new.get(key))


def prepare(experiment: Experiment, state_dir: Path) -> tuple[Path | None, dict[str, ManifestSource]]:
    """The fixture tree (None for a remote of one's own) and every manifest's source, checked and sampled."""
    root = prepare_tree(experiment) if experiment.base_url is None else None
    return root, prepare_sources(experiment, root, state_dir / MANIFESTS, os.environ)


def run_experiment(
    experiment: Experiment, folder: Path, options: RunOptions, previous: Results | None = None,
    prepared: tuple[Path | None, dict[str, ManifestSource]] | None = None,
) -> Results:
    """Make every planned run not yet in `previous` (a resumed folder) and save after each one; `prepared`
    is what `prepare` returned, when the caller has already checked the sources."""
    check_runnable(experiment)
    root, sources = prepared or prepare(experiment, options.state_dir)
    settings = {v.name: resolve_settings(experiment.remote_of(v), os.environ) for v in experiment.variants}
    results = _start(experiment, sources, previous, options.state_dir)
    planned = plan(experiment)
    done = {run.key for run in results.runs}
    todo = [run for run in planned if run.key not in done]
    save_run_outputs(folder, results)
    session = time.monotonic()
    elapsed_before = results.elapsed_seconds
    trash = Trash(options.state_dir / _TRASH, defaults.TRASH_MANY_FILES, defaults.TRASH_MIN_FREE)
    with FixtureSite(experiment, root) as site, ExitStack() as stack:
        bench = Bench(experiment, options.state_dir, site, trash, sources, settings, os.environ)
        kinds = _prepared_kinds(bench, stack)
        options.progress.start(len(planned), len(planned) - len(todo))
        watch = Watch()
        try:
            with watch:
                for run in todo:
                    options.progress.run_started(run, _label(run, experiment))
                    record = _make_run(run, bench, kinds, options)
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
            discard_run_files(options.state_dir, trash)
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


def _prepared_kinds(bench: Bench, stack: ExitStack) -> dict[str, VariantKind[Any, Any]]:
    """The kinds of the experiment's variants, each prepared (its servers held by `stack`)."""
    kinds: dict[str, VariantKind[Any, Any]] = {}
    for name in dict.fromkeys(kind_tag(variant) for variant in bench.experiment.variants):
        kinds[name] = KINDS[name]()
        kinds[name].prepare(bench, stack)
    return kinds


def _make_run(run: PlannedRun, bench: Bench, kinds: Mapping[str, VariantKind[Any, Any]],
              options: RunOptions) -> RunRecord:
    """One run, made and recorded by its variant's kind (harness.run.kinds), its processes started from
    the variant's own command and environment (harness.run.kinds.processes_of)."""
    variant = bench.experiment.variant(run.variant)
    kind = kinds[kind_tag(variant)]
    done = kind.run_one(run, variant, bench, processes_of(variant, options.state_dir, options.command))
    return kind.record(run, variant, done, bench)


def _estimate(first_seconds: float, left: int) -> str:
    """After the first run: how long the rest will take at its pace (a warm-up is often slower: an upper bound)."""
    total = round(first_seconds * left)
    hours = f"{total // 3600} h {total % 3600 // 60:02d} min"
    about = f"{total} s" if total < 90 else f"{total // 60} min" if total < 5400 else hours
    return f"The first run took {first_seconds:.1f} s with its reset: about {about} for the {left} runs left"


def _label(run: PlannedRun, experiment: Experiment) -> str:
    """"100 asyncio run 3/10" (or "warm-up 1/1"): what the progress display shows for a run."""
    if run.warmup:
        return f"{run.manifest} {run.variant} warm-up {run.round}/{experiment.warmup}"
    return f"{run.manifest} {run.variant} run {run.round - experiment.warmup}/{experiment.runs}"


def _clean_up(experiment: Experiment, options: RunOptions) -> None:
    """Empty the store once more at the end (once per database): the last sync's artifacts can be gigabytes."""
    for variant in {variant.database: variant for variant in experiment.variants}.values():
        try:
            processes = processes_of(variant, options.state_dir, options.command)
            pulp_sync_cli.reset(processes.env, processes.command)
        except pulp_sync_cli.ResetFailed:
            pass  # the results are saved; a full store is the user's to clean, not a reason to fail
