"""What a results folder shows, shaped once: the one object every output renders.

The terminal, summary.md and report.html each used to shape the results themselves, so a sentence
or a verdict's colour could differ between them. `build_view` turns the results, their analysis and
the plots into text once: titles, table rows, sentences, each pair's verdict and its direction, the
warnings. The exporters (harness.report.terminal, .markdown, .html) only lay that text out.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.analysis import calibration
from harness.analysis.auto import auto_verdicts
from harness.analysis.findings import Analysis, Pair
from harness.analysis.sweep import recommend, recommendation_sentence, setting_label
from harness.experiment.spec import Experiment
from harness.experiment.variant import PulpSyncVariant
from harness.report import wording
from harness.results.folder import RESULTS_FILE, Results
from harness.results.outputs import perf_data_name
from harness.results.records import RUN_FIELDS
from harness.results.warning import FigureWarning
from harness.run.machine import warnings_for

__all__ = ["REPORT_FILE", "SUMMARY_FILE", "Table", "PairLine", "SweepView", "AutoView", "ReportView", "build_view"]

REPORT_FILE = "report.html"
SUMMARY_FILE = "summary.md"


@dataclass(frozen=True)
class Table:
    """A table's header and rows, every cell already text."""

    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]


@dataclass(frozen=True)
class PairLine:
    """One variant against the baseline on one manifest: its row of the comparison table and the
    direction of its verdict ("faster", "slower" or "no-difference"), which outputs draw in colour."""

    manifest: str
    variant: str
    change: str
    sentence: str
    p_adjusted: str
    p_welch: str
    verdict: str
    direction: str

    @property
    def row(self) -> tuple[str, ...]:
        """The pair as a row under wording.PAIR_HEADER."""
        return (self.manifest, self.variant, self.change, self.sentence, self.p_adjusted, self.p_welch, self.verdict)


@dataclass(frozen=True)
class SweepView:
    """A sweep's recommendations: the setting as the spec names it and as sentences name it, the rule's
    tolerance and significance level, and a row and a sentence per manifest and downloader."""

    setting: str
    label: str
    tolerance: str
    alpha: str
    table: Table
    sentences: tuple[str, ...]


@dataclass(frozen=True)
class AutoView:
    """auto against the fixed settings of a sweep (harness.analysis.auto): the targets it is judged by, a row
    per auto variant and manifest, and a sentence each saying whether it met them."""

    targets: str
    table: Table
    sentences: tuple[str, ...]


@dataclass(frozen=True)
class ReportView:
    """Everything the outputs show of one results folder, in words and rows.

    `splits` says, a line per cell whose syncs were split, how many processes shared how many connections.
    `auto` is None unless a sweep of download_concurrency holds auto variants.
    `disagreements` explains, in a line each, where an average's verdict and its manifests' differ in kind.
    `calibration` is None for an experiment of one variant (nothing compared, nothing to calibrate);
    `sweep` is None unless the experiment is a sweep. `folder` and `plots` say where the plot files are
    and their base names, for the outputs that link or embed them.
    """

    name: str
    description: str
    setup: str
    when: str
    sources: tuple[str, ...]
    means: Table
    stdevs: Table
    cells: Table
    splits: tuple[str, ...]
    resources: Table
    baseline: str
    pairs: tuple[PairLine, ...]
    averages: tuple[str, ...]
    disagreements: tuple[str, ...]
    peers: tuple[str, ...]
    sweep: SweepView | None
    auto: AutoView | None
    calibration: str | None
    warnings: tuple[FigureWarning, ...]
    overhead: str
    failed: Table
    runs: Table
    environment: str
    spec: str
    files: tuple[str, ...]
    folder: Path
    plots: tuple[str, ...]

    @property
    def pair_table(self) -> Table:
        """Every pair under wording.PAIR_HEADER."""
        return Table(wording.PAIR_HEADER, tuple(pair.row for pair in self.pairs))

    @property
    def conclusions(self) -> tuple[str, ...]:
        """What the figures add up to: the averages against the baseline, why an average and its manifests
        differ where they do, the peers, a sweep's picks, auto against the fixed settings."""
        return (*self.averages, *self.disagreements, *self.peers, *(self.sweep.sentences if self.sweep else ()),
                *(self.auto.sentences if self.auto else ()))


def _auto(spec: Experiment) -> set[str]:
    """The variants whose processes the sync chose (`processes = "auto"`): what it chose is worth a line."""
    return {v.name for v in spec.variants if isinstance(v, PulpSyncVariant) and v.processes == "auto"}


def build_view(results: Results, analysis: Analysis, folder: Path, plots: Sequence[str]) -> ReportView:
    """The view of `results` (analysed as `analysis`) rendered into `folder`, whose plots are `plots`.
    Reads the machine's calibration stored beside the folder (harness.analysis.calibration)."""
    spec = results.experiment
    baseline = spec.baseline_variant.name
    failed = [run for run in results.runs if not run.ok]
    return ReportView(
        name=spec.name,
        description=spec.description,
        setup=wording.setup_line(results),
        when=wording.when_line(results),
        sources=tuple(wording.source_lines(results)),
        means=Table(*wording.matrix(results, analysis, "mean")),
        stdevs=Table(*wording.matrix(results, analysis, "stdev")),
        cells=Table(wording.TIME_HEADER, tuple(wording.time_row(cell) for cell in analysis.cells)),
        splits=tuple(wording.split_lines(analysis, _auto(spec))),
        resources=Table(wording.RESOURCE_HEADER, tuple(wording.resource_row(cell) for cell in analysis.cells)),
        baseline=baseline,
        pairs=tuple(_pair_line(pair) for pair in analysis.pairs),
        averages=tuple(wording.average_sentences(analysis, baseline)),
        disagreements=tuple(wording.disagreement_lines(analysis)),
        peers=tuple(wording.peer_sentences(analysis)),
        sweep=_sweep(results, analysis),
        auto=_auto_view(spec, analysis),
        calibration=_calibration(folder, results),
        warnings=(*analysis.warnings, *warnings_for(results.environment)),
        overhead=wording.overhead_line(analysis),
        failed=Table(wording.FAILED_HEADER, tuple(wording.failed_row(run) for run in failed)),
        runs=Table(RUN_FIELDS, tuple(wording.run_row(run) for run in results.runs)),
        environment=json.dumps(results.environment, indent=2),
        spec=json.dumps(spec.as_dict(), indent=2),
        files=_files(results),
        folder=folder,
        plots=tuple(plots),
    )


def _pair_line(pair: Pair) -> PairLine:
    comparison = pair.comparison
    return PairLine(
        manifest=pair.manifest,
        variant=pair.variant,
        change=f"{comparison.percent_change:+.1f}%" if comparison else "–",
        sentence=wording.ratio_sentence(pair),
        p_adjusted=wording.p_text(comparison.p_value_adjusted) if comparison else "–",
        p_welch=wording.p_text(comparison.p_value_welch) if comparison else "–",
        verdict=wording.verdict(comparison),
        direction=wording.direction(comparison),
    )


def _sweep(results: Results, analysis: Analysis) -> SweepView | None:
    spec = results.experiment
    if spec.kind != "sweep":
        return None
    picks = recommend(spec, analysis)
    return SweepView(
        setting=spec.sweep_setting,
        label=setting_label(spec.sweep_setting),
        tolerance=f"{spec.tolerance:.0%}",
        alpha=f"{spec.alpha:g}",
        table=Table(wording.SWEEP_HEADER, tuple(wording.sweep_row(pick) for pick in picks)),
        sentences=tuple(recommendation_sentence(pick) for pick in picks),
    )


def _auto_view(spec: Experiment, analysis: Analysis) -> AutoView | None:
    verdicts = auto_verdicts(spec, analysis)
    if not verdicts:
        return None
    return AutoView(targets=wording.AUTO_TARGETS,
                    table=Table(wording.AUTO_HEADER, tuple(wording.auto_row(verdict) for verdict in verdicts)),
                    sentences=tuple(wording.auto_sentence(verdict) for verdict in verdicts))


def _calibration(folder: Path, results: Results) -> str | None:
    """The machine's calibration, stored beside the results folders, as the report quotes it; None with
    one variant."""
    if not results.experiment.variants[1:]:
        return None
    stored = calibration.load(folder.resolve().parent)
    return calibration.quote(stored, results.environment.get("machine", {}))


def _files(results: Results) -> tuple[str, ...]:
    """The folder's data files beside the report: results.json, runs.csv, summary.md, the perf_data files."""
    spec = results.experiment
    perf_data = (perf_data_name(variant.name, manifest) for manifest, variant in spec.cells)
    return (RESULTS_FILE, "runs.csv", SUMMARY_FILE, *perf_data)
