"""From runs to findings: per-cell statistics, each variant against the baseline, warnings.

Only counted runs (successful, not warm-up) enter a statistic; failed runs are counted and named.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from harness import defaults
from harness.records import RunRecord
from harness.spec import Experiment
from harness.stats import Comparison, Summary, compare, describe, mean_or_none

__all__ = ["Cell", "Pair", "PeerRatio", "Analysis", "analyse", "throughput_mb_s"]


@dataclass(frozen=True)
class Cell:
    """One manifest x variant: its sync times (seconds) and throughputs (MB/s, 10^6 bytes).

    The time's interval is Student's t of the mean; the throughput's is of its geometric mean, from
    the logs (harness.stats.describe with log_interval), so it never goes below 0 MB/s.
    """

    manifest: str
    variant: str
    time: Summary | None
    throughput: Summary | None
    failed: int
    cpu_seconds: float | None
    peak_rss_mb: float | None
    latency_p50: float | None
    latency_p90: float | None
    latency_p99: float | None

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        data = dict(self.__dict__)
        data["time"] = self.time.as_dict() if self.time else None
        data["throughput"] = self.throughput.as_dict() if self.throughput else None
        return data


@dataclass(frozen=True)
class Pair:
    """A variant against the baseline on one manifest; `comparison` is None without runs on a side."""

    manifest: str
    variant: str
    baseline: str
    comparison: Comparison | None

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return dict(self.__dict__, comparison=self.comparison.as_dict() if self.comparison else None)


@dataclass(frozen=True)
class PeerRatio:
    """A pulp-sync variant's throughput as a fraction of the fastest external program's on one manifest,
    from the medians of their sync times (same files, so time ratio = throughput ratio = files/s ratio)."""

    manifest: str
    variant: str
    peer: str
    ratio: float

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return dict(self.__dict__)


@dataclass
class Analysis:
    """Everything the summary, the plots and the report show."""

    cells: list[Cell]
    pairs: list[Pair]
    average_change: dict[str, float]
    overhead: dict[str, float | None]
    warnings: list[str] = field(default_factory=list)
    peer_ratios: list[PeerRatio] = field(default_factory=list)

    def cell(self, manifest: str, variant: str) -> Cell:
        """The cell of `manifest` x `variant`."""
        return next(c for c in self.cells if c.manifest == manifest and c.variant == variant)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {
            "cells": [cell.as_dict() for cell in self.cells],
            "pairs": [pair.as_dict() for pair in self.pairs],
            "average_percent_change": self.average_change,
            "overhead": self.overhead,
            "warnings": self.warnings,
            "peer_ratios": [ratio.as_dict() for ratio in self.peer_ratios],
        }


def analyse(experiment: Experiment, runs: Sequence[RunRecord]) -> Analysis:
    """Statistics of every cell and pair of `experiment` from the runs made so far."""
    cells = [_cell(m, v.name, runs) for m in experiment.manifests for v in experiment.variants]
    pairs = _pairs(experiment, runs)
    analysis = Analysis(cells, pairs, _average_change(pairs), _overhead(experiment, runs))
    analysis.peer_ratios = _peer_ratios(experiment, analysis)
    analysis.warnings = _warnings(analysis, runs)
    return analysis


def throughput_mb_s(run: RunRecord) -> float | None:
    """MB (10^6 bytes) per second of the sync alone; None for a run without bytes or time (a rate
    of 0 has no logarithm, and no place in the throughput's interval)."""
    if not run.sync_seconds or not run.bytes_downloaded:
        return None
    return run.bytes_downloaded / 1e6 / run.sync_seconds


def _counted(runs: Sequence[RunRecord], manifest: str, variant: str) -> list[RunRecord]:
    return [r for r in runs if r.manifest == manifest and r.variant == variant and r.counted]


def _cell(manifest: str, variant: str, runs: Sequence[RunRecord]) -> Cell:
    counted = _counted(runs, manifest, variant)
    failed = sum(1 for r in runs if r.manifest == manifest and r.variant == variant and not r.ok)
    times = [r.sync_seconds for r in counted if r.sync_seconds is not None]
    rates = [rate for rate in map(throughput_mb_s, counted) if rate is not None]
    return Cell(
        manifest=manifest,
        variant=variant,
        time=describe(times) if times else None,
        throughput=describe(rates, log_interval=True) if rates else None,
        failed=failed,
        cpu_seconds=mean_or_none([r.cpu_seconds for r in counted]),
        peak_rss_mb=mean_or_none([r.peak_rss_mb for r in counted]),
        latency_p50=mean_or_none([r.latency_p50 for r in counted]),
        latency_p90=mean_or_none([r.latency_p90 for r in counted]),
        latency_p99=mean_or_none([r.latency_p99 for r in counted]),
    )


def _pairs(experiment: Experiment, runs: Sequence[RunRecord]) -> list[Pair]:
    """Each variant against the baseline per manifest; none in a sweep, whose variants form a curve."""
    if experiment.kind == "sweep":
        return []
    baseline = experiment.baseline_variant.name
    pairs = []
    for manifest in experiment.manifests:
        base_times = [r.sync_seconds for r in _counted(runs, manifest, baseline)]
        for variant in experiment.variants:
            if variant.name == baseline:
                continue
            times = [r.sync_seconds for r in _counted(runs, manifest, variant.name)]
            comparison = compare(base_times, times, experiment.alpha) if base_times and times else None
            pairs.append(Pair(manifest, variant.name, baseline, comparison))
    return pairs


def _peer_ratios(experiment: Experiment, analysis: Analysis) -> list[PeerRatio]:
    """Each pulp-sync variant against the fastest command variant (by median time) of each manifest."""
    peers = [v.name for v in experiment.variants if v.is_command]
    ours = [v.name for v in experiment.variants if not v.is_command]
    ratios = []
    for manifest in experiment.manifests:
        timed = [(cell.time.median, cell.variant) for name in peers if (cell := analysis.cell(manifest, name)).time]
        if not timed:
            continue
        fastest_time, fastest = min(timed)
        for name in ours:
            cell = analysis.cell(manifest, name)
            if cell.time is not None and cell.time.median > 0:
                ratios.append(PeerRatio(manifest, name, fastest, fastest_time / cell.time.median))
    return ratios


def _average_change(pairs: Sequence[Pair]) -> dict[str, float]:
    """The seed's conclusion: the plain mean of the per-manifest percent changes of each variant."""
    changes: dict[str, list[float]] = {}
    for pair in pairs:
        if pair.comparison is not None:
            changes.setdefault(pair.variant, []).append(pair.comparison.percent_change)
    return {variant: sum(values) / len(values) for variant, values in changes.items()}


def _overhead(experiment: Experiment, runs: Sequence[RunRecord]) -> dict[str, float | None]:
    """What the harness spent around the syncs: resets, server restarts, pulp-sync's start-up (external
    commands are timed whole, so they have none to report)."""
    commands = {variant.name for variant in experiment.variants if variant.is_command}
    return {
        "reset_seconds_mean": mean_or_none([r.reset_seconds for r in runs]),
        "reset_seconds_total": sum(r.reset_seconds for r in runs),
        "restart_seconds_mean": mean_or_none([r.restart_seconds for r in runs]),
        "startup_seconds_mean": mean_or_none(
            [r.wall_seconds - r.sync_seconds for r in runs if r.counted and r.variant not in commands]
        ),
    }


def _warnings(analysis: Analysis, runs: Sequence[RunRecord]) -> list[str]:
    warnings = []
    for cell in analysis.cells:
        label = f"{cell.manifest} x {cell.variant}"
        if cell.failed:
            warnings.append(f"{label}: {cell.failed} failed run(s), left out of every statistic (see runs.csv)")
        if cell.time is None:
            continue
        if cell.time.cv is not None and cell.time.cv > defaults.HIGH_CV:
            warnings.append(
                f"{label}: stddev is {cell.time.cv:.0%} of the mean (above {defaults.HIGH_CV:.0%}); "
                "the machine or network was noisy, consider more runs"
            )
        if cell.time.outliers:
            rounds = [r.round for r in _counted(runs, cell.manifest, cell.variant)]
            flagged = ", ".join(str(rounds[i]) for i in cell.time.outliers)
            warnings.append(
                f"{label}: outlier run(s) in round {flagged} (modified Z-score > {defaults.OUTLIER_Z:g}, "
                "Iglewicz & Hoaglin, hyperfine's cut-off); kept in the statistics"
            )
    retried = sum(r.retries or 0 for r in runs if r.counted)
    if retried:
        warnings.append(f"{retried} download retries in counted runs: their times include backoff")
    return warnings
