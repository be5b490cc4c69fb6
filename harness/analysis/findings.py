"""From runs to findings: per-cell statistics, each variant against the baseline, warnings.

Only counted runs (successful, not warm-up) enter a statistic; failed runs are counted and named.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from harness import defaults
from harness.analysis.stats import (
    AverageChange,
    Comparison,
    Summary,
    average_change,
    compare,
    describe,
    holm,
    mean_or_none,
    median_or_none,
)
from harness.experiment.spec import Experiment
from harness.experiment.variant import CommandVariant
from harness.results.records import RunRecord
from harness.results.warning import FigureWarning, Kind

__all__ = ["Cell", "Pair", "PeerRatio", "AverageChange", "Analysis", "analyse", "throughput_mb_s",
           "files_per_second"]


@dataclass(frozen=True)
class Cell:
    """One manifest x variant: its sync times (seconds), throughputs (MB/s, 10^6 bytes) and files/s.

    The time's interval is of its mean, computed on the log scale (harness.analysis.stats.describe with
    lognormal); the rates' are of their geometric means, from the logs (with log_interval): none goes
    below 0.
    """

    manifest: str
    variant: str
    time: Summary | None
    throughput: Summary | None
    files_per_second: Summary | None
    failed: int
    """Its counted runs that failed: what every output counts (a CI's exit status, `bench compare`)."""
    failed_warmups: int
    """Its warm-up runs that failed, shown apart: they are never counted."""
    cpu_seconds: float | None
    peak_rss_mb: float | None
    latency_p50: float | None
    latency_p90: float | None
    latency_p99: float | None
    processes: float | None
    """The median of the processes its counted runs split their syncs across (what `auto` came to)."""
    connections: float | None
    """The median of its counted runs' connections, their processes together (RunRecord.connections)."""
    concurrency: float | None = None
    """The median of its counted runs' concurrency: the fixed one, or where `download_concurrency = "auto"`
    settled (RunRecord.concurrency)."""

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        data = dict(self.__dict__)
        data["time"] = self.time.as_dict() if self.time else None
        data["throughput"] = self.throughput.as_dict() if self.throughput else None
        data["files_per_second"] = self.files_per_second.as_dict() if self.files_per_second else None
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
    """Everything the summary, the plots and the report show. `auto_pairs` are, in a sweep of
    download_concurrency, each auto variant (as `variant`) against each fixed one of its group (as `baseline`;
    Experiment.group_of) on every manifest both run: harness.analysis.auto reads its verdicts from them."""

    cells: list[Cell]
    pairs: list[Pair]
    average_change: dict[str, AverageChange]
    overhead: dict[str, float | None]
    warnings: list[FigureWarning] = field(default_factory=list)
    peer_ratios: list[PeerRatio] = field(default_factory=list)
    auto_pairs: list[Pair] = field(default_factory=list)

    def cell(self, manifest: str, variant: str) -> Cell:
        """The cell of `manifest` x `variant`, which the experiment runs."""
        found = self.find(manifest, variant)
        assert found is not None, f"{variant} does not run {manifest}"
        return found

    def find(self, manifest: str, variant: str) -> Cell | None:
        """The cell of `manifest` x `variant`; None where the variant does not run the manifest."""
        return next((c for c in self.cells if c.manifest == manifest and c.variant == variant), None)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {
            "cells": [cell.as_dict() for cell in self.cells],
            "pairs": [pair.as_dict() for pair in self.pairs],
            "auto_pairs": [pair.as_dict() for pair in self.auto_pairs],
            "average_percent_change": {variant: change.as_dict() for variant, change in self.average_change.items()},
            "overhead": self.overhead,
            "warnings": [warning.as_dict() for warning in self.warnings],
            "peer_ratios": [ratio.as_dict() for ratio in self.peer_ratios],
        }


def analyse(experiment: Experiment, runs: Sequence[RunRecord]) -> Analysis:
    """Statistics of every cell and pair of `experiment` from the runs made so far."""
    cells = [_cell(manifest, variant.name, runs) for manifest, variant in experiment.cells]
    pairs, auto_pairs, averages = _adjusted(_pairs(experiment, runs), _auto_pairs(experiment, runs),
                                            _average_change(experiment, runs))
    analysis = Analysis(cells, pairs, averages, _overhead(experiment, runs), auto_pairs=auto_pairs)
    analysis.peer_ratios = _peer_ratios(experiment, analysis)
    analysis.warnings = _warnings(analysis, runs)
    return analysis


def throughput_mb_s(run: RunRecord) -> float | None:
    """MB (10^6 bytes) per second of the sync alone; None for a run without bytes or time (a rate
    of 0 has no logarithm, and no place in the throughput's interval)."""
    if not run.sync_seconds or not run.bytes_downloaded:
        return None
    return run.bytes_downloaded / 1e6 / run.sync_seconds


def files_per_second(run: RunRecord) -> float | None:
    """Files downloaded per second of the sync alone: for many small files what matters, where MB/s says
    little; None for a run without downloads or time."""
    if not run.sync_seconds or not run.artifacts_downloaded:
        return None
    return run.artifacts_downloaded / run.sync_seconds


def _counted(runs: Sequence[RunRecord], manifest: str, variant: str) -> list[RunRecord]:
    return [r for r in runs if r.manifest == manifest and r.variant == variant and r.counted]


def _cell(manifest: str, variant: str, runs: Sequence[RunRecord]) -> Cell:
    counted = _counted(runs, manifest, variant)
    failures = [r for r in runs if r.manifest == manifest and r.variant == variant and not r.ok]
    times = [r.sync_seconds for r in counted if r.sync_seconds is not None]
    rates = [rate for rate in map(throughput_mb_s, counted) if rate is not None]
    files = [rate for rate in map(files_per_second, counted) if rate is not None]
    return Cell(
        manifest=manifest,
        variant=variant,
        time=describe(times, lognormal=True) if times else None,
        throughput=describe(rates, log_interval=True) if rates else None,
        files_per_second=describe(files, log_interval=True) if files else None,
        failed=sum(1 for r in failures if not r.warmup),
        failed_warmups=sum(1 for r in failures if r.warmup),
        cpu_seconds=mean_or_none([r.cpu_seconds for r in counted]),
        peak_rss_mb=mean_or_none([r.peak_rss_mb for r in counted]),
        latency_p50=mean_or_none([r.latency_p50 for r in counted]),
        latency_p90=mean_or_none([r.latency_p90 for r in counted]),
        latency_p99=mean_or_none([r.latency_p99 for r in counted]),
        processes=median_or_none([r.processes for r in counted]),
        connections=median_or_none([r.connections for r in counted]),
        concurrency=median_or_none([r.concurrency for r in counted]),
    )


def _pairs(experiment: Experiment, runs: Sequence[RunRecord]) -> list[Pair]:
    """Each variant against the baseline per manifest, paired by round where both ran in the same rounds,
    their p-values not yet adjusted (see _adjusted); none in a sweep, whose variants form a curve."""
    if experiment.kind == "sweep":
        return []
    baseline = experiment.baseline_variant
    return [_pair(experiment, runs, manifest, variant.name, baseline.name)
            for manifest, variant in experiment.cells
            if variant.name != baseline.name and manifest in experiment.manifests_of(baseline)]


def _auto_pairs(experiment: Experiment, runs: Sequence[RunRecord]) -> list[Pair]:
    """In a sweep of download_concurrency, each auto variant against every fixed variant of its group (same
    engine, same profile: Experiment.group_of) on each manifest both run, paired by round as every pair is:
    whether finding the limit while syncing costs time against the values a sweep tries by hand."""
    if experiment.kind != "sweep" or experiment.sweep_setting != "download_concurrency":
        return []
    return [_pair(experiment, runs, manifest, auto.name, fixed.name)
            for manifest, auto in experiment.cells if auto.auto_concurrency
            for fixed in experiment.variants_of(manifest)
            if not fixed.auto_concurrency and experiment.group_of(fixed) == experiment.group_of(auto)]


def _pair(experiment: Experiment, runs: Sequence[RunRecord], manifest: str, variant: str, baseline: str) -> Pair:
    """`variant` against `baseline` on `manifest` (_comparison), its p-value not yet adjusted."""
    return Pair(manifest, variant, baseline, _comparison(_times_by_round(runs, manifest, baseline),
                                                         _times_by_round(runs, manifest, variant), experiment))


def _adjusted(pairs: list[Pair], auto_pairs: list[Pair],
              averages: dict[str, AverageChange]) -> tuple[list[Pair], list[Pair], dict[str, AverageChange]]:
    """The pairs, auto's pairs and the averages with their p-values adjusted together by Holm's method: the
    experiment's family of tests is every pair and every average with a test, so the chance of any false
    "faster" or "slower" among everything the report states stays at alpha. An average without a verdict (too
    few rounds) has no p-value and does not count."""
    every = [*pairs, *auto_pairs]
    tested = [pair.comparison.p_value if pair.comparison else None for pair in every]
    adjusted = holm([*tested, *(change.p_value for change in averages.values())])
    every = [replace(pair, comparison=pair.comparison.adjusted(p)) if pair.comparison else pair
             for pair, p in zip(every, adjusted[:len(tested)], strict=True)]
    averages = {variant: change.adjusted(p)
                for (variant, change), p in zip(averages.items(), adjusted[len(tested):], strict=True)}
    return every[:len(pairs)], every[len(pairs):], averages


def _times_by_round(runs: Sequence[RunRecord], manifest: str, variant: str) -> dict[int, float]:
    return {r.round: r.sync_seconds for r in _counted(runs, manifest, variant) if r.sync_seconds}


def _comparison(base: dict[int, float], other: dict[int, float], experiment: Experiment) -> Comparison | None:
    """Paired on the rounds both sides have, when there are two or more (the harness interleaves the
    variants round by round, so a round's pair shares the machine's state); else every run, unpaired."""
    if not base or not other:
        return None
    paired = _in_common_rounds(base, other)
    if len(paired[0]) >= 2:
        return compare(*paired, experiment.alpha, experiment.band, paired=True)
    return compare(list(base.values()), list(other.values()), experiment.alpha, experiment.band)


def _in_common_rounds(base: dict[int, float], other: dict[int, float]) -> tuple[list[float], list[float]]:
    """Both sides' times in the rounds both have, aligned round by round."""
    rounds = sorted(base.keys() & other.keys())
    return [base[r] for r in rounds], [other[r] for r in rounds]


def _peer_ratios(experiment: Experiment, analysis: Analysis) -> list[PeerRatio]:
    """Each pulp-sync variant against the fastest command variant (by median time) of each manifest."""
    ratios = []
    for manifest in experiment.manifests:
        peers = [v.name for v in experiment.variants_of(manifest) if isinstance(v, CommandVariant)]
        ours = [v.name for v in experiment.variants_of(manifest) if not isinstance(v, CommandVariant)]
        timed = [(cell.time.median, cell.variant) for name in peers if (cell := analysis.cell(manifest, name)).time]
        if not timed:
            continue
        fastest_time, fastest = min(timed)
        for name in ours:
            cell = analysis.cell(manifest, name)
            if cell.time is not None and cell.time.median > 0:
                ratios.append(PeerRatio(manifest, name, fastest, fastest_time / cell.time.median))
    return ratios


def _average_change(experiment: Experiment, runs: Sequence[RunRecord]) -> dict[str, AverageChange]:
    """The seed's conclusion, each variant's per-manifest percent changes averaged, with an interval and a
    verdict (harness.analysis.stats.average_change); their p-values not yet adjusted (see _adjusted)."""
    if experiment.kind == "sweep":
        return {}
    baseline = experiment.baseline_variant.name
    averages = {}
    for variant in (v.name for v in experiment.variants if v.name != baseline):
        rounds = [_in_common_rounds(_times_by_round(runs, manifest, baseline), _times_by_round(runs, manifest, variant))
                  for manifest in experiment.manifests]
        present = [times for times in rounds if times[0]]
        if present:
            averages[variant] = average_change(present, experiment.alpha, experiment.band)
    return averages


def _overhead(experiment: Experiment, runs: Sequence[RunRecord]) -> dict[str, float | None]:
    """What the harness spent around the syncs: resets, server restarts, pulp-sync's start-up (external
    commands are timed whole, so they have none to report)."""
    commands = {variant.name for variant in experiment.variants if isinstance(variant, CommandVariant)}
    return {
        "reset_seconds_mean": mean_or_none([r.reset_seconds for r in runs]),
        "reset_seconds_total": sum(r.reset_seconds for r in runs),
        "restart_seconds_mean": mean_or_none([r.restart_seconds for r in runs]),
        "startup_seconds_mean": mean_or_none(
            [r.wall_seconds - r.sync_seconds for r in runs
             if r.counted and r.sync_seconds is not None and r.variant not in commands]
        ),
    }


def _blind_spot(pair: Pair) -> FigureWarning | None:
    """A warning when the smallest difference this pair could detect is wider than the band; else None."""
    comparison = pair.comparison
    if comparison is None or comparison.mde_percent is None or comparison.mde_percent <= 100 * comparison.band:
        return None
    resolve = comparison.runs_to_resolve
    return FigureWarning(
        Kind.BLIND_SPOT, f"{pair.manifest} x {pair.variant}",
        f"a difference below {comparison.mde_percent:.1f}% could go undetected in this noise, wider than the "
        f"±{comparison.band:.0%} band"
        + (f"; about {resolve} runs would resolve {defaults.RESOLVE:.0%}" if resolve else ""))


def _carryover(runs: Sequence[RunRecord], manifest: str, variant: str) -> str:
    """What ran earlier in a round, when it splits the cell: the alternating order puts a variant's runs
    after different sets of variants, and when every run after one set is slower than every run after the
    other, by CARRYOVER_RATIO or more at the medians, the earlier variants the slow runs alone followed
    left something behind (a warm server, a busy disk, a long cleanup). Pairing by round keeps the
    comparisons fair, but the cell's spread is the order's, not the variant's. "" when no split shows."""
    groups: dict[frozenset[str], list[float]] = {}
    for run in _counted(runs, manifest, variant):
        if run.sync_seconds is not None:
            before = frozenset(r.variant for r in runs if r.manifest == manifest and r.round == run.round
                               and r.position < run.position)
            groups.setdefault(before, []).append(run.sync_seconds)
    if len(groups) != 2 or min(map(len, groups.values())) < 2:
        return ""
    (fast_before, fast), (slow_before, slow) = sorted(groups.items(), key=lambda item: float(np.median(item[1])))
    ratio = float(np.median(slow) / np.median(fast))
    if min(slow) <= max(fast) or ratio < defaults.CARRYOVER_RATIO:
        return ""
    suspects = ", ".join(sorted(slow_before - fast_before)) or "nothing else"
    return (f"its runs that came after {suspects} in their round took {ratio:.1f}x as long as its others "
            f"({min(slow):.3g}-{max(slow):.3g} s against {min(fast):.3g}-{max(fast):.3g} s): what ran before "
            "them left something behind; pairing by round keeps the comparisons fair, but this spread is the order's")


def _warnings(analysis: Analysis, runs: Sequence[RunRecord]) -> list[FigureWarning]:
    warnings = [warning for cell in analysis.cells for warning in _cell_warnings(cell, runs)]
    warnings += [warning for warning in map(_blind_spot, analysis.pairs) if warning]
    retried = sum(r.retries or 0 for r in runs if r.counted)
    if retried:
        warnings.append(FigureWarning(Kind.RETRIES, "", f"{retried} download retries in counted runs: their times "
                                                        "include backoff"))
    return warnings


def _failed_text(cell: Cell) -> str:
    """"4 counted runs (and 1 warm-up)": a cell's failed runs, the counted ones first, as every output says
    them; the warm-ups apart, since no statistic and no exit status counts them."""
    said = f"{cell.failed} counted run{'s' if cell.failed != 1 else ''}"
    if cell.failed_warmups:
        said += f" (and {cell.failed_warmups} warm-up{'s' if cell.failed_warmups != 1 else ''})"
    return said


def _cell_warnings(cell: Cell, runs: Sequence[RunRecord]) -> list[FigureWarning]:
    """A cell's failed runs, its noise, a spread that the order of variants made, and its outliers."""
    label = f"{cell.manifest} x {cell.variant}"
    warnings = []
    if cell.failed or cell.failed_warmups:
        warnings.append(FigureWarning(Kind.FAILED_RUNS, label, f"{_failed_text(cell)} failed, left out of every "
                                                                "statistic (see runs.csv)"))
    if cell.time is None:
        return warnings
    if cell.time.cv is not None and cell.time.cv > defaults.HIGH_CV:
        warnings.append(FigureWarning(Kind.NOISY, label, f"stddev is {cell.time.cv:.0%} of the mean (above "
                                      f"{defaults.HIGH_CV:.0%}); the machine or network was noisy, consider more runs"))
    carryover = _carryover(runs, cell.manifest, cell.variant)
    if carryover:
        warnings.append(FigureWarning(Kind.CARRYOVER, label, carryover))
    if cell.time.outliers:
        rounds = [r.round for r in _counted(runs, cell.manifest, cell.variant)]
        flagged = ", ".join(str(rounds[i]) for i in cell.time.outliers)
        warnings.append(FigureWarning(
            Kind.OUTLIERS, label, f"outlier run(s) in round {flagged} (modified Z-score > {defaults.OUTLIER_Z:g}, "
            "Iglewicz & Hoaglin, hyperfine's cut-off); kept in the statistics"))
    return warnings
