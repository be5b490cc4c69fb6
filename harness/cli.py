"""`pulp-sync bench ...` (also `python -m harness ...`): run, sweep, report, compare.

Errors a user can fix are one `Error:` line and exit status 1; an interrupted experiment says how to
continue it. Each command imports what it needs when it runs (scipy and matplotlib take over a
second to import): mounting `bench_group` adds nothing to the start-up of other pulp-sync commands,
whose timings the harness measures.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, TypeVar

import click

from harness import defaults
from harness.errors import HarnessError

if TYPE_CHECKING:
    from rich.console import Console

    from harness.compare import CellChange
    from harness.report import Rendered
    from harness.results import Results
    from harness.spec import Experiment

__all__ = ["bench_group", "main"]

F = TypeVar("F", bound=Callable[..., Any])


class _BenchGroup(click.Group):
    """Turns the harness's errors into one `Error:` line and exit status 1."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except HarnessError as error:
            raise click.ClickException(str(error)) from error


@click.group(cls=_BenchGroup)
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


def _common_options(function: F) -> F:
    """Options shared by `run` and `sweep`: what to override and where results and state go."""
    options = [
        click.option("--runs", type=click.IntRange(min=1), help="Counted runs per cell [spec's, default 10]."),
        click.option("--warmup", type=click.IntRange(min=0), help="Uncounted runs per cell first [default 1]."),
        click.option("--scale", type=click.FloatRange(min=0, min_open=True), help="Fixture size; 1 is the seed's."),
        click.option("--profile", help="Network profile of the fixture server (loopback, lan, wan, slow)."),
        click.option("--server", type=click.Choice(["builtin", "nginx"]),
                     help="Fixture server (nginx: loopback only)."),
        click.option("--restart-server/--no-restart-server", default=None, help="Restart the server before each run."),
        click.option("--fixtures", type=click.Path(file_okay=False), help="Fixture tree [default: per scale]."),
        click.option("--base-url", help="Sync from this remote instead of a fixture server."),
        click.option("--timeout", type=click.FloatRange(min=0, min_open=True), help="Seconds one sync may take."),
        click.option("--out", type=click.Path(file_okay=False, path_type=Path), help="Results folder to write."),
        click.option("--results-dir", type=click.Path(file_okay=False, path_type=Path), default=defaults.RESULTS_DIR,
                     show_default=True, help="Where new results folders go."),
        click.option("--resume", is_flag=True, help="Continue the newest (or --out) folder of this experiment."),
        click.option("--state-dir", type=click.Path(file_okay=False, path_type=Path), default=defaults.STATE_DIR,
                     show_default=True, help="PULP_SYNC_HOME of the benchmarked syncs (emptied every run)."),
        click.option("--quiet", is_flag=True, help="No progress display."),
    ]
    for option in reversed(options):
        function = option(function)
    return function


@bench_group.command("run")
@click.argument("spec", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--manifests", callback=_csv(str), help="Manifests to run, e.g. 100,200 [spec's].")
@click.option("--variants", callback=_csv(str), help="Only these variants of the spec, e.g. asyncio,futures.")
@_common_options
def run_command(
    spec: Path, manifests: tuple[str, ...] | None, variants: tuple[str, ...] | None, **options: Any
) -> None:
    """Run the experiment in SPEC (a TOML file); flags override the spec's values."""
    from harness.spec import load_spec

    experiment = load_spec(spec)
    if variants:
        experiment = experiment.with_overrides(variants=tuple(experiment.variant(name) for name in variants),
                                               baseline=_kept_baseline(experiment, variants))
    experiment = _overridden(experiment, options, manifests=manifests)
    _execute(experiment, options)


@bench_group.command("sweep")
@click.option("--downloader", "downloader_names", callback=_csv(str), required=True,
              help="Downloader(s) to sweep, e.g. asyncio,futures.")
@click.option("--concurrency", "concurrencies", callback=_csv(int),
              default=",".join(map(str, defaults.SWEEP_CONCURRENCY)), show_default=True, help="Values to try.")
@click.option("--manifest", "manifests", callback=_csv(str), default="100", show_default=True, help="Manifest(s).")
@click.option("--tolerance", type=click.FloatRange(0, 1), default=defaults.SWEEP_TOLERANCE, show_default=True,
              help="Recommend the smallest concurrency within this fraction of the best throughput.")
@_common_options
def sweep_command(downloader_names: tuple[str, ...], concurrencies: tuple[int, ...], manifests: tuple[str, ...],
                  tolerance: float, **options: Any) -> None:
    """Measure throughput against concurrency per downloader and recommend a setting."""
    if any(value < 1 for value in concurrencies):
        raise click.BadParameter("concurrency values must be 1 or more", param_hint="--concurrency")
    from harness.sweep import recommend, recommendation_sentence, sweep_experiment

    experiment = sweep_experiment(downloader_names, concurrencies, manifests, runs=options["runs"], tolerance=tolerance)
    rendered = _execute(_overridden(experiment, options), options)
    for pick in recommend(rendered.results.experiment, rendered.analysis):
        click.echo(recommendation_sentence(pick))


@bench_group.command("report")
@click.argument("folder", type=click.Path(exists=True, file_okay=False, path_type=Path))
def report_command(folder: Path) -> None:
    """Re-render summary.md, the plots and report.html of a results FOLDER from its results.json."""
    from harness.report import render
    from harness.summary import print_summary

    rendered = render(folder)
    print_summary(_console(), rendered.results, rendered.analysis)
    click.echo(f"Report: {rendered.report}")


@bench_group.command("compare")
@click.argument("old", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.argument("new", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the comparison as one JSON object instead of a table.")
@click.option("--fail-on-regression", "threshold", type=click.FloatRange(min=0), metavar="PCT",
              help="Exit 3 if a cell is significantly slower in NEW by more than PCT percent of OLD's mean.")
def compare_command(old: Path, new: Path, as_json: bool, threshold: float | None) -> None:
    """Per-cell change of sync time from results folder OLD to NEW, with Welch's t-test.

    With --fail-on-regression, a cell that NEW made significantly slower (Welch's p below the
    experiment's alpha) by more than PCT percent of OLD's mean time fails the command, as asv's
    `continuous` gates a CI; each such cell is named on stderr.

    \b
    Exit status:
      0  no regression beyond PCT (or no --fail-on-regression)
      1  an error, e.g. a folder that holds no results.json
      2  a usage error: a bad flag or argument
      3  some cell regressed beyond PCT
    """
    from harness.compare import change_document, compare_results, setup_differences
    from harness.results import load_results

    before, after = load_results(old), load_results(new)
    changes, notes, alpha = compare_results(before, after), setup_differences(before, after), after.experiment.alpha
    if as_json:
        click.echo(json.dumps(change_document(changes, notes, alpha, threshold), indent=2))
    else:
        _print_changes(f"{old.name} -> {new.name}", changes, notes, alpha)
    if threshold is not None:
        _gate(changes, threshold)


def _gate(changes: list[CellChange], threshold: float) -> None:
    """Name each cell that regressed beyond `threshold` percent on stderr; exit 3 if one did."""
    from harness.compare import regression_line, regressions

    regressed = regressions(changes, threshold)
    for change in regressed:
        click.echo(regression_line(change, threshold), err=True)
    if regressed:
        sys.exit(3)


def _print_changes(title: str, changes: list[CellChange], notes: list[str], alpha: float) -> None:
    """The setup differences, then the COMPARE_HEADER table."""
    from rich.table import Table

    from harness.compare import COMPARE_HEADER, change_rows

    console = _console()
    for note in notes:
        console.print(f"[yellow]Differs:[/yellow] {note}", highlight=False)
    table = Table(*COMPARE_HEADER, title=title)
    for row in change_rows(changes, alpha):
        table.add_row(*row)
    console.print(table)


def _console() -> Console:
    """Standard output; tables get 140 columns when it is a file or pipe (rich would wrap at 80)."""
    from rich.console import Console

    console = Console()
    return console if console.is_terminal else Console(width=140)


def main() -> None:
    """`python -m harness`."""
    bench_group(prog_name="python -m harness")


def _overridden(experiment: Experiment, options: dict[str, Any], **extra: Any) -> Experiment:
    """The experiment with every flag given applied (flags left out keep the spec's values)."""
    fields = ("runs", "warmup", "scale", "profile", "server", "restart_server", "fixtures", "base_url", "timeout")
    return experiment.with_overrides(**{name: options[name] for name in fields}, **extra)


def _kept_baseline(experiment: Experiment, variants: tuple[str, ...]) -> str | None:
    """The spec's baseline if it is among the chosen variants, else the first chosen one."""
    return experiment.baseline if experiment.baseline in variants else variants[0]


def _execute(experiment: Experiment, options: dict[str, Any]) -> Rendered:
    """Run (or resume) the experiment into its folder, render everything, print the summary."""
    from rich.console import Console

    from harness.progress import progress_for
    from harness.report import render
    from harness.runner import RunOptions, check_runnable, run_experiment
    from harness.summary import print_summary

    check_runnable(experiment)  # before a folder is made: a spec that cannot run leaves nothing behind
    folder, previous = _folder(experiment, options)
    run_options = RunOptions(state_dir=options["state_dir"],
                             progress=progress_for(Console(stderr=True), quiet=options["quiet"]))
    click.echo(f"Results: {folder}", err=True)
    try:
        run_experiment(experiment, folder, run_options, previous)
    except KeyboardInterrupt:
        click.echo(f"\nInterrupted. The runs made so far are saved in {folder}; continue with the same "
                   f"command and `--resume --out {folder}`, or see them with `bench report {folder}`.", err=True)
        sys.exit(130)
    rendered = render(folder)
    print_summary(_console(), rendered.results, rendered.analysis)
    click.echo(f"Report: {rendered.report}")
    return rendered


def _folder(experiment: Experiment, options: dict[str, Any]) -> tuple[Path, Results | None]:
    """Where the results go, and the results already there when resuming."""
    from harness.results import ResultsError, latest_results_dir, load_results, new_results_dir
    from harness.runner import compatible

    out: Path | None = options["out"]
    if not options["resume"]:
        if out is None:
            return new_results_dir(options["results_dir"], experiment.name), None
        if (out / "results.json").exists():
            raise ResultsError(f"{out} already holds results; add --resume to continue them, or choose another --out")
        out.mkdir(parents=True, exist_ok=True)
        return out, None
    folder = out or latest_results_dir(options["results_dir"], experiment.name)
    if folder is None:
        raise ResultsError(f"nothing to resume: no {options['results_dir']}/*-{experiment.name} folder; drop --resume")
    previous = load_results(folder)
    differences = compatible(previous.experiment, experiment)
    if differences:
        raise ResultsError(f"{folder} was made with other settings ({', '.join(differences)}); "
                           "resume with the same spec and flags (only --runs may grow), or start a new folder")
    return folder, previous
