"""`pulp-sync bench ...` (also `python -m harness ...`): run, sweep, spec, report, compare, calibrate.

Errors a user can fix are one `Error:` line; an interrupted experiment says how to continue it.
The exit status says how an experiment went, so that a CI can gate on it: `_EXIT_STATUS` lists it
under `run` and `sweep --help` (1 when a counted run failed, 2 for a usage error), and `compare`
exits 3 on a regression beyond `--fail-on-regression`, 4-6 when the comparison measured nothing.

Each command imports what it needs when it runs (scipy and matplotlib take over a second to import):
mounting `bench_group` adds nothing to the start-up of other pulp-sync commands, whose timings the
harness measures.
"""

from __future__ import annotations

import dataclasses
import json
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from harness import defaults
from harness.errors import HarnessError

if TYPE_CHECKING:
    from harness.analysis.compare import CellChange
    from harness.experiment.spec import Experiment
    from harness.experiment.variant import Variant
    from harness.report.render import Rendered
    from harness.results.folder import Results

__all__ = ["bench_group", "main"]

F = TypeVar("F", bound=Callable[..., Any])

_EXIT_STATUS = """\b
Exit status:
  0  every counted run succeeded (or --allow-failures)
  1  a counted run failed, the remote could not be used, or another error stopped the experiment
  2  a usage error: a bad flag, spec, sample size or remote setting, or a plan above --max-bytes
  130  interrupted (Ctrl-C, SIGTERM, SIGHUP or SIGQUIT); the runs made so far are saved (--resume continues)"""
"""The exit codes of `bench run` and `bench sweep`, shown under their --help."""


class _UsageProblem(click.ClickException):
    """A mistake in what the user asked for: one `Error:` line, exit status 2 (click's for usage errors)."""

    exit_code = 2


class _BenchGroup(click.Group):
    """Turns the harness's errors into one `Error:` line: exit status 2 for a spec, a sample size or a
    remote setting the user must fix (ValueError among them), 1 for the rest."""

    def invoke(self, ctx: click.Context) -> Any:
        from harness.experiment.sample import SampleError
        from harness.experiment.spec import SpecError

        try:
            return super().invoke(ctx)
        except (SpecError, SampleError) as error:
            raise _UsageProblem(str(error)) from error
        except HarnessError as error:
            raise click.ClickException(str(error)) from error


@click.group(cls=_BenchGroup, context_settings={"help_option_names": ["-h", "--help"]})
def bench_group() -> None:
    """Benchmark downloaders fairly: reset before every run, repeat, interleave, statistics, report.

    Results go to results/<timestamp>-<experiment>/ (results.json, runs.csv, perf_data_*.txt,
    summary.md, plots, report.html). See experiments/*.toml for specs.
    """


def _csv(kind: Callable[[str], Any]) -> Callable[[click.Context, click.Parameter, str | None], Any]:
    """A click callback reading "a,b,c" into a tuple of `kind`."""

    def parse(ctx: click.Context, param: click.Parameter, value: str | None) -> Any:
        if value is None:
            return None
        try:
            return tuple(kind(item.strip()) for item in value.split(",") if item.strip())
        except ValueError as error:
            raise click.BadParameter(f"{value!r}: expected a comma-separated list ({error})") from error

    return parse


def _byte_count(ctx: click.Context, param: click.Parameter, value: str | None) -> int | None:
    """A click callback reading "20G", "500M", "1.5T" or a number of bytes (SI: 1G = 10^9 bytes)."""
    if value is None:
        return None
    text = value.strip().upper().removesuffix("B")
    factor = 10 ** (3 * ("KMGT".index(text[-1]) + 1)) if text and text[-1] in "KMGT" else 1
    try:
        count = float(text[:-1] if factor > 1 else text) * factor
    except ValueError:
        count = -1
    if not count > 0:
        raise click.BadParameter(f"{value!r}: a size such as 20G, 500M or 1000000 (bytes)")
    return int(count)


def _processes(ctx: click.Context, param: click.Parameter, value: str | None) -> int | str | None:
    """A click callback reading --processes as a variant's `processes` takes it: 1 to 256, or "auto", by the
    rule `pulp-sync sync --processes` applies (so a typo fails here, not in every run)."""
    if value is None:
        return None
    from pulp_base.download_processes import AUTO, parse_processes, processes_text

    try:
        number = parse_processes(value, "processes")
    except ValueError as error:
        raise click.BadParameter(str(error)) from error
    return processes_text(number) if number == AUTO else number


def _concurrency(text: str) -> int | str:
    """A --concurrency value: a whole number, or "auto" (the limit found while syncing) as it is."""
    from downloaders.settings import AUTO

    return AUTO if text == AUTO else int(text)


_JSON_OPTION = click.option("--json", "as_json", is_flag=True,
                            help="Print the results' statistics as one JSON object instead of the summary.")


def _experiment_options(function: F) -> F:
    """Options that change the experiment a spec describes, shared by `run`, `sweep` and `spec` (which checks
    a spec as `run` would run it)."""
    options = [
        click.option("--runs", type=click.IntRange(min=1), help="Counted runs per cell [spec's, default 10]."),
        click.option("--warmup", type=click.IntRange(min=0), help="Uncounted runs per cell first [default 1]."),
        click.option("--scale", type=click.FloatRange(min=0, min_open=True), help="Fixture size; 1 is the seed's."),
        click.option("--profile", help="Network profile of the fixture server (loopback, lan, wan, slow)."),
        click.option("--server", type=click.Choice(["builtin", "nginx"]),
                     help="Fixture server (nginx: loopback only)."),
        click.option("--restart-server/--no-restart-server", default=None, help="Restart the server before each run."),
        click.option("--fixtures", type=click.Path(file_okay=False), help="Fixture tree [default: per scale]."),
        click.option("--remote", "--base-url", "base_url", metavar="URL",
                     help="Sync from your own remote instead of a fixture server: a manifest's URL, or a base URL "
                          "ending in / with --manifests. No password in it: see --remote-setting."),
        click.option("--remote-setting", "remote_settings", multiple=True, metavar="KEY=VALUE",
                     help="A Remote setting for every variant, over the spec's [remote] (repeatable), e.g. "
                          "rate_limit=20, ca_cert=ca.pem, password=env:VAR; secrets only as env:VAR or file:PATH."),
        click.option("--processes", callback=_processes, metavar="N|auto",
                     help="Processes each pulp-sync sync splits its downloads across, 1 to 256 or auto, in every "
                          "pulp-sync variant [spec's, default 1]."),
        click.option("--sample", help="Sync a size-stratified sample of each manifest: 10% or a number of files."),
        click.option("--sample-seed", type=int, help="Seed of the sample [default 0]; the same in every run."),
        click.option("--timeout", type=click.FloatRange(min=0, min_open=True), help="Seconds one sync may take."),
    ]
    for option in reversed(options):
        function = option(function)
    return function


def _common_options(function: F) -> F:
    """Options shared by `run` and `sweep`: what to override (_experiment_options) and where results and state
    go."""
    options = [
        click.option("--max-bytes", callback=_byte_count, metavar="SIZE",
                     help="Refuse a plan that would download more than this, e.g. 20G (SI units)."),
        click.option("--allow-failures", is_flag=True, help="Exit 0 even when runs failed (they are reported)."),
        click.option("--out", type=click.Path(file_okay=False, path_type=Path), help="Results folder to write."),
        click.option("--results-dir", type=click.Path(file_okay=False, path_type=Path), default=defaults.RESULTS_DIR,
                     show_default=True, help="Where new results folders go."),
        click.option("--resume", is_flag=True, help="Continue the newest (or --out) folder of this experiment."),
        click.option("--state-dir", type=click.Path(file_okay=False, path_type=Path), default=defaults.STATE_DIR,
                     show_default=True, help="PULP_SYNC_HOME of the benchmarked syncs (emptied every run)."),
        click.option("--quiet", is_flag=True, help="No progress display."),
        _JSON_OPTION,
    ]
    for option in reversed(options):
        function = option(function)
    return _experiment_options(function)


@bench_group.command("run", epilog=_EXIT_STATUS)
@click.argument("spec", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--manifests", callback=_csv(str), help="Manifests to run, e.g. 100,200 [spec's].")
@click.option("--variants", callback=_csv(str), help="Only these variants of the spec, e.g. asyncio,futures.")
@_common_options
def run_command(
    spec: Path, manifests: tuple[str, ...] | None, variants: tuple[str, ...] | None, **options: Any
) -> None:
    """Run the experiment in SPEC (a TOML file); flags override the spec's values."""
    experiment = _spec_as_run(spec, manifests, variants, options)
    _exit_for_failures(_execute(experiment, options), options["allow_failures"])


def _spec_as_run(spec: Path, manifests: tuple[str, ...] | None, variants: tuple[str, ...] | None,
                 options: dict[str, Any]) -> Experiment:
    """The experiment `bench run SPEC` runs with these flags: the spec's, its variants chosen, the flags over
    it. `bench spec` checks the same."""
    from harness.experiment.spec import load_spec

    experiment = load_spec(spec)
    if variants:
        experiment = experiment.with_overrides(variants=tuple(experiment.variant(name) for name in variants),
                                               baseline=_kept_baseline(experiment, variants))
    if manifests:
        experiment = _narrowed(experiment, manifests)
    return _overridden(experiment, options, manifests=manifests)


def _narrowed(experiment: Experiment, manifests: tuple[str, ...]) -> Experiment:
    """The experiment on `manifests` alone (--manifests): a variant that names its own keeps those of them it
    named, and one left with none is left out; a usage error when none is left."""
    kept = []
    for variant in experiment.variants:
        own = variant.manifests
        if own is None:
            kept.append(variant)
        elif chosen := tuple(manifest for manifest in own if manifest in manifests):
            kept.append(dataclasses.replace(variant, manifests=chosen))
    if not kept:
        raise click.UsageError(f"no variant of the spec runs {', '.join(manifests)}")
    names = tuple(variant.name for variant in kept)
    return experiment.with_overrides(variants=tuple(kept), manifests=manifests,
                                     baseline=_kept_baseline(experiment, names))


@bench_group.command("sweep", epilog=_EXIT_STATUS)
@click.option("--downloader", "downloader_names", callback=_csv(str), required=True,
              help="Downloader(s) to sweep, e.g. asyncio,futures.")
@click.option("--concurrency", "concurrencies", callback=_csv(_concurrency),
              default=",".join(map(str, defaults.SWEEP_CONCURRENCY)), show_default=True,
              help="Values to try; auto too (found while syncing, drawn across the values and judged against them).")
@click.option("--sweep", "swept", metavar="NAME=V1,V2,...",
              help="Sweep this int or float Remote setting, or processes, instead of concurrency, e.g. "
                   "rate_limit=5,10,20, max_retries=0,3 or processes=1,2,4 (variants keep the default "
                   "concurrency).")
@click.option("--manifest", "manifests", callback=_csv(str), default="100", show_default=True, help="Manifest(s).")
@click.option("--tolerance", type=click.FloatRange(0, 1), default=defaults.SWEEP_TOLERANCE, show_default=True,
              help="Recommend the smallest value within this fraction of the best throughput.")
@_common_options
def sweep_command(downloader_names: tuple[str, ...], concurrencies: tuple[int | str, ...], swept: str | None,
                  manifests: tuple[str, ...], tolerance: float, **options: Any) -> None:
    """Measure throughput against concurrency (or --sweep another setting) per downloader; recommend a value."""
    if any(isinstance(value, int) and value < 1 for value in concurrencies):
        raise click.BadParameter("concurrency values must be 1 or more", param_hint="--concurrency")
    given = click.get_current_context().get_parameter_source("concurrencies") is not click.core.ParameterSource.DEFAULT
    if swept is not None and given:
        raise click.UsageError("give --concurrency or --sweep, not both "
                               "(--sweep download_concurrency=... is --concurrency)")
    from harness.analysis.sweep import parse_sweep, sweep_experiment

    try:
        setting, values = parse_sweep(swept) if swept is not None else (defaults.SWEEP_SETTING, concurrencies)
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="--sweep") from error
    experiment = sweep_experiment(downloader_names, values, manifests, setting, runs=options["runs"],
                                  tolerance=tolerance)
    _exit_for_failures(_execute(_overridden(experiment, options), options), options["allow_failures"])


@bench_group.command("plan")
@click.argument("spec", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--manifests", callback=_csv(str), help="Manifests to run, e.g. 100,200 [spec's].")
@click.option("--variants", callback=_csv(str), help="Only these variants of the spec, e.g. asyncio,futures.")
@_experiment_options
@click.option("--state-dir", type=click.Path(file_okay=False, path_type=Path), default=defaults.STATE_DIR,
              show_default=True, help="Where the samples and a remote's manifests go, as for `bench run`.")
@_JSON_OPTION
def plan_command(spec: Path, manifests: tuple[str, ...] | None, variants: tuple[str, ...] | None, state_dir: Path,
                 as_json: bool, **options: Any) -> None:
    """Price SPEC as `bench run` with the same flags would run it: syncs, bytes to download and minutes, in all
    and per variant, with the plan's warnings. It syncs nothing; it prepares what a run prepares first (the
    fixture tree, generated if missing; a remote's manifests, fetched; the sample, drawn).

    Minutes are a model of this machine and of the fixture server's network profile (docs/harness.md, "The
    cost first"), not a measurement: a spec is scaled with them before its first run.
    """
    from harness.experiment.plan import human_bytes, plan_sentence, plan_warnings, priced_variants
    from harness.run.runner import prepare

    experiment = _spec_as_run(spec, manifests, variants, options)
    sources = prepare(experiment, state_dir)[1]
    prices = priced_variants(experiment, sources)
    if as_json:
        click.echo(json.dumps({name: dataclasses.asdict(price) for name, price in prices.items()}))
        return
    click.echo(plan_sentence(experiment, sources, None))
    for warning in plan_warnings(experiment, sources):
        click.echo(f"Warning: {warning}")
    width = max(len(name) for name in prices)
    for name, price in prices.items():
        click.echo(f"  {name:<{width}}  {price.syncs:>5} syncs  {human_bytes(price.bytes):>9}  "
                   f"{price.seconds / 60:5.1f} min")


@bench_group.command("spec")
@click.argument("spec", required=False, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--schema", is_flag=True, help="Print the JSON Schema of a spec file instead: every key, its type, "
              "default and help.")
@click.option("--manifests", callback=_csv(str), help="Manifests to run, e.g. 100,200 [spec's].")
@click.option("--variants", callback=_csv(str), help="Only these variants of the spec, e.g. asyncio,futures.")
@_experiment_options
def spec_command(spec: Path | None, schema: bool, manifests: tuple[str, ...] | None,
                 variants: tuple[str, ...] | None, **options: Any) -> None:
    """Check SPEC (a TOML file) as `bench run` with the same flags would run it, without running anything,
    and print the experiment as JSON, defaults filled in; or, with --schema, the JSON Schema of every spec.
    Its variants are checked as a run checks them first (their downloaders installed, their programs on
    PATH); servers and databases are left untouched.

    \b
    Exit status:
      0  the spec is valid (or the schema was printed)
      2  a usage error: the first mistake of the spec, in one `Error:` line naming the key, its value and
         what is expected (with the key meant, for a near miss)
    """
    from harness.experiment.spec import spec_schema
    from harness.run.runner import check_variants

    if (spec is None) != schema:
        raise click.UsageError("give a SPEC to check, or --schema (not both)")
    if spec is None:
        click.echo(json.dumps(spec_schema(), indent=2))
        return
    experiment = _spec_as_run(spec, manifests, variants, options)
    check_variants(experiment)
    click.echo(json.dumps(experiment.as_dict(), indent=2))


@bench_group.command("report")
@click.argument("folder", type=click.Path(exists=True, file_okay=False, path_type=Path))
@_JSON_OPTION
def report_command(folder: Path, as_json: bool) -> None:
    """Re-render summary.md, the plots and report.html of a results FOLDER from its results.json."""
    from harness.report.render import render

    _print_rendered(render(folder), as_json)


@bench_group.command("compare")
@click.argument("old", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.argument("new", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--format", "output", type=click.Choice(["table", "json", "markdown"]), default="table",
              show_default=True, help="table: for people; json: one object for scripts; markdown: for a pull "
              "request's comment.")
@click.option("--json", "as_json", is_flag=True, help="The same as --format json.")
@click.option("--fail-on-regression", "threshold", type=click.FloatRange(min=0), metavar="PCT",
              help="Fail if a cell is significantly slower in NEW by more than PCT percent of OLD, or if NEW "
              "measured nothing OLD did, lacks a cell of OLD or has failed runs (exit status below).")
def compare_command(old: Path, new: Path, output: str, as_json: bool, threshold: float | None) -> None:
    """Per-cell change of sync time from results folder OLD to NEW, with Welch's t-test.

    With --fail-on-regression, a cell that NEW made significantly slower (Welch's p below the
    experiment's alpha) by more than PCT percent (the change the verdict states, from the ratio of
    geometric means) fails the command, as asv's `continuous` gates a CI; so does a comparison that
    measured nothing: each cause is named on stderr.

    \b
    Exit status:
      0  no regression beyond PCT (or no --fail-on-regression)
      1  an error, e.g. a folder that holds no results.json
      2  a usage error: a bad flag or argument
      3  some cell regressed beyond PCT
      4  no manifest x variant of OLD is in NEW: nothing was compared
      5  NEW lacks cells that OLD measured
      6  runs of NEW failed, or a cell of NEW has no counted run
    """
    from harness.analysis.compare import change_document, change_markdown, compare_results, setup_differences
    from harness.results.folder import load_results

    before, after = load_results(old), load_results(new)
    changes, notes, alpha = compare_results(before, after), setup_differences(before, after), after.experiment.alpha
    gate = _gate(before, after, changes, threshold) if threshold is not None else []
    output = "json" if as_json else output
    if output == "json":
        click.echo(json.dumps({**change_document(changes, notes, alpha, threshold),
                               "gate": [{"status": status, "line": line} for status, line in gate]}, indent=2))
    elif output == "markdown":
        click.echo(change_markdown(f"{old.name} -> {new.name}", changes, notes, [line for _, line in gate]), nl=False)
    else:
        _print_changes(f"{old.name} -> {new.name}", changes, notes)
    for _, line in gate:
        click.echo(line, err=True)
    if gate:
        sys.exit(gate[0][0])  # the first cause: nothing measured (4-6) before a regression (3)


def _gate(old: Results, new: Results, changes: list[CellChange], threshold: float) -> list[tuple[int, str]]:
    """Every reason the gate fails, as (exit status, line): what made the comparison measure nothing
    (analysis.compare.gate_problems), then each cell that regressed beyond `threshold` percent."""
    from harness.analysis.compare import REGRESSION, gate_problems, regression_line, regressions

    found = [(problem.status, problem.line) for problem in gate_problems(old, new)]
    return found + [(REGRESSION, regression_line(change, threshold)) for change in regressions(changes, threshold)]


def _print_changes(title: str, changes: list[CellChange], notes: list[str]) -> None:
    """The setup differences, then the COMPARE_HEADER table."""
    from rich.table import Table

    from harness.analysis.compare import COMPARE_HEADER, change_rows
    from pulp_base.console import console

    out = console()
    for note in notes:
        out.print(f"[yellow]Differs:[/yellow] {note}", highlight=False)
    table = Table(*COMPARE_HEADER, title=title)
    for row in change_rows(changes):
        table.add_row(*row)
    out.print(table)


def main() -> None:
    """`python -m harness`."""
    bench_group(prog_name="python -m harness")


@bench_group.command("calibrate")
@click.argument("spec", required=False, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--experiments", "count", type=click.IntRange(min=2), default=defaults.CALIBRATION_EXPERIMENTS,
              show_default=True, help="A/A experiments to run.")
@click.option("--manifests", callback=_csv(str),
              help=f"Manifests to run [spec's, else {','.join(defaults.CALIBRATION_MANIFESTS)}].")
@_common_options
def calibrate_command(spec: Path | None, count: int, manifests: tuple[str, ...] | None, **options: Any) -> None:
    """Measure this machine's noise: K A/A experiments of SPEC's baseline variant against a copy of itself
    (default: the main job's conditions, asyncio at scale 0.05 on the wan profile, 5 runs, manifests 100
    and 200), then the false alarms (comparisons called faster or slower), each manifest's typical CV and
    the smallest difference detected four times in five. Stored as RESULTS_DIR/calibration.json; later
    reports on this machine quote it."""
    from harness.analysis.calibration import a_a_experiment, calibrate, save
    from harness.experiment.spec import Experiment, load_spec
    from harness.experiment.variant import InlineVariant
    from harness.report.render import render
    from harness.results.folder import new_results_dir
    from harness.run.machine import state_lock
    from harness.run.provenance import machine_facts
    from harness.run.runner import check_runnable

    base = load_spec(spec) if spec else Experiment(
        name="calibration", variants=(InlineVariant("asyncio", "asyncio"),), manifests=defaults.CALIBRATION_MANIFESTS,
        runs=defaults.CALIBRATION_RUNS, scale=defaults.CALIBRATION_SCALE, profile=defaults.CALIBRATION_PROFILE)
    base = _overridden(base, options, manifests=manifests)
    check_runnable(a_a_experiment(base, 1))
    root = new_results_dir(options["results_dir"], "calibration")
    analyses = []
    for number in range(1, count + 1):
        click.echo(f"A/A experiment {number} of {count}", err=True)
        with state_lock(options["state_dir"]):
            folder = _run(a_a_experiment(base, number), {**options, "out": root / str(number), "resume": False})
        analyses.append(render(folder).analysis)
    calibration = calibrate(base, analyses, machine_facts())
    click.echo(calibration.sentence())
    click.echo(f"Stored in {save(options['results_dir'], calibration)}; the A/A experiments are in {root}")


def _overridden(experiment: Experiment, options: dict[str, Any], **extra: Any) -> Experiment:
    """The experiment with every flag given applied (flags left out keep the spec's values). A manifest's
    own URL as the remote is the experiment's one manifest, named after it (with --manifests naming
    several, validation refuses it). A tree given with --fixtures and no --scale is read at the scale it
    records (fixtures.generate.recorded_scale)."""
    from fixtures.generate import recorded_scale
    from harness.experiment.operator_remote import is_manifest_url, manifest_label, parse_remote_setting

    fields = ("runs", "warmup", "scale", "profile", "server", "restart_server", "fixtures", "base_url", "timeout",
              "sample", "sample_seed")
    changes = {name: options[name] for name in fields} | extra
    if changes["fixtures"] and changes["scale"] is None:
        changes["scale"] = recorded_scale(Path(changes["fixtures"]))
    settings = dict(parse_remote_setting(assignment) for assignment in options["remote_settings"])
    if settings:
        changes["remote"] = {**experiment.remote, **settings}
    if options["processes"] is not None:
        changes["variants"] = _with_processes(experiment, options["processes"])
    url = changes["base_url"] or experiment.base_url
    if url is not None and is_manifest_url(url) and len(changes.get("manifests") or ()) <= 1:
        changes["manifests"] = (manifest_label(url),)  # the URL names what is synced, whatever the spec listed
    return experiment.with_overrides(**changes)


def _with_processes(experiment: Experiment, processes: int | str) -> tuple[Variant, ...]:
    """The variants, each pulp-sync one with these `processes` (--processes); programs and Pulp servers split
    nothing. A usage error where no variant would change, or where the experiment sweeps processes itself."""
    from harness.experiment.variant import PulpSyncVariant

    if experiment.kind == "sweep" and experiment.sweep_setting == "processes":
        raise click.UsageError("give --processes or a sweep of processes, not both: the sweep gives each variant "
                               "its own")
    if not any(isinstance(variant, PulpSyncVariant) for variant in experiment.variants):
        raise click.UsageError("--processes: no variant is a pulp-sync sync, the only kind that splits its downloads")
    return tuple(dataclasses.replace(variant, processes=processes) if isinstance(variant, PulpSyncVariant)
                 else variant for variant in experiment.variants)


def _kept_baseline(experiment: Experiment, variants: tuple[str, ...]) -> str | None:
    """The spec's baseline if it is among the chosen variants, else the first chosen one."""
    return experiment.baseline if experiment.baseline in variants else variants[0]


def _execute(experiment: Experiment, options: dict[str, Any]) -> Rendered:
    """Run (or resume) the experiment into its folder, render everything, print the summary."""
    from harness.report.render import render
    from harness.run.machine import state_lock
    from harness.run.runner import check_runnable

    check_runnable(experiment)  # before a folder is made: a spec that cannot run leaves nothing behind
    with state_lock(options["state_dir"]):  # one experiment per state folder: they would reset each other's
        folder = _run(experiment, options)
    rendered = render(folder)
    _print_rendered(rendered, options["as_json"])
    return rendered


def _print_rendered(rendered: Rendered, as_json: bool) -> None:
    """The summary and where the report is; or, for machines, one JSON object: the folder, the report and the
    statistics results.json keeps (cells, pairs, averages, warnings)."""
    from harness.report.terminal import print_summary
    from pulp_base.console import console

    if as_json:
        document = {"folder": str(rendered.folder), "report": str(rendered.report), **rendered.analysis.as_dict()}
        click.echo(json.dumps(document))
        return
    print_summary(console(), rendered.view)
    click.echo(f"Report: {rendered.report}")


def _run(experiment: Experiment, options: dict[str, Any]) -> Path:
    """Prepare and make the runs; the results folder. Ctrl-C and the signals of _interrupt end it, exit 130."""
    from harness.experiment.plan import check_plan, plan_sentence, plan_warnings
    from harness.run.progress import progress_for
    from harness.run.runner import RunOptions, prepare, run_experiment
    from pulp_base.console import console

    resumed = _resumed(experiment, options)
    prepared = prepare(experiment, options["state_dir"])  # the remote checked, the sample drawn
    previous = resumed[1] if resumed else None
    click.echo(plan_sentence(experiment, prepared[1], previous), err=True)
    for warning in plan_warnings(experiment, prepared[1]):
        click.echo(f"Warning: {warning}", err=True)
    check_plan(experiment, prepared[1], previous, options["max_bytes"])
    folder = resumed[0] if resumed else _new_folder(experiment, options)
    run_options = RunOptions(state_dir=options["state_dir"],
                             progress=progress_for(console(stderr=True), quiet=options["quiet"]))
    click.echo(f"Results: {folder}", err=True)
    for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
        signal.signal(signum, _interrupt)
    try:
        run_experiment(experiment, folder, run_options, previous, prepared)
    except KeyboardInterrupt:
        click.echo(f"\nInterrupted. The runs made so far are saved in {folder}; continue with the same "
                   f"command and `--resume --out {folder}`, or see them with `bench report {folder}`.", err=True)
        sys.exit(130)
    return folder


def _interrupt(signum: int, frame: object) -> None:
    """SIGTERM (systemd, a container, a CI's timeout), SIGHUP (the terminal closed) and SIGQUIT end an
    experiment as Ctrl-C does: the servers and workers it started (fixture servers, pulpcore, pulp-sync's
    API, RQ workers) are stopped and the runs so far are kept. SIGKILL cannot be caught: what the
    experiment started then outlives it."""
    raise KeyboardInterrupt


def _exit_for_failures(rendered: Rendered, allow_failures: bool) -> None:
    """Exit status 1 when a counted run failed, unless --allow-failures: a CI gates on it."""
    runs = rendered.results.runs
    failed = [run for run in runs if not run.ok and not run.warmup]
    if failed and not allow_failures:
        counted = sum(1 for run in runs if not run.warmup)
        warmups = sum(1 for run in runs if not run.ok and run.warmup)
        also = f" (and {warmups} warm-up{'s' if warmups != 1 else ''})" if warmups else ""
        raise click.ClickException(f"{len(failed)} of {counted} counted runs failed{also}; the report lists them, "
                                   f"first: {failed[0].error}; --allow-failures to exit 0 all the same")


def _resumed(experiment: Experiment, options: dict[str, Any]) -> tuple[Path, Results] | None:
    """With --resume, the folder to continue and its results; None without. Checked before any work."""
    from harness.results.folder import ResultsError, latest_results_dir, load_results
    from harness.run.runner import compatible

    if not options["resume"]:
        return None
    folder = options["out"] or latest_results_dir(options["results_dir"], experiment.name)
    if folder is None:
        raise ResultsError(f"nothing to resume: no {options['results_dir']}/*-{experiment.name} folder; drop --resume")
    previous = load_results(folder)
    differences = compatible(previous.experiment, experiment)
    if differences:
        raise ResultsError(f"{folder} was made with other settings ({', '.join(differences)}); "
                           "resume with the same spec and flags (only --runs may grow), or start a new folder")
    return folder, previous


def _new_folder(experiment: Experiment, options: dict[str, Any]) -> Path:
    """A new results folder: --out if given (and free), else results/<timestamp>-<experiment>."""
    from harness.results.folder import ResultsError, new_results_dir

    out: Path | None = options["out"]
    if out is None:
        return new_results_dir(options["results_dir"], experiment.name)
    if (out / "results.json").exists():
        raise ResultsError(f"{out} already holds results; add --resume to continue them, or choose another --out")
    out.mkdir(parents=True, exist_ok=True)
    return out
