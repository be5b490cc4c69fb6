"""A concurrency sweep: throughput against download concurrency per downloader, and a setting to use.

A sweep is an ordinary experiment (one variant per downloader x concurrency, interleaved, reset
before every run) whose `kind` is "sweep"; this module builds it and reads a recommendation out of
its statistics: the smallest concurrency whose mean throughput is within 5% of the best one's.
Smaller is preferred because every extra connection costs the remote and the worker something.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Sequence

from harness import defaults
from harness.analysis import Analysis
from harness.plots import SweepLine
from harness.spec import Experiment, Variant, validate

__all__ = ["Recommendation", "sweep_experiment", "recommend", "sweep_lines", "recommendation_sentence"]


@dataclass(frozen=True)
class Recommendation:
    """The setting to use for one downloader on one manifest, with the evidence for it."""

    manifest: str
    downloader: str
    concurrency: int
    mb_per_s: float
    ci_low: float | None
    ci_high: float | None
    best_concurrency: int
    best_mb_s: float
    tolerance: float

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return asdict(self)


def sweep_experiment(
    downloaders: Sequence[str], concurrencies: Sequence[int], manifests: Sequence[str], **settings: Any
) -> Experiment:
    """The experiment of a sweep: variants named "<downloader>-c<concurrency>"; `settings` are any
    other Experiment fields (runs, warmup, scale, profile, ...), None meaning the default."""
    variants = tuple(
        Variant(name=f"{downloader}-c{concurrency}", downloader=downloader, download_concurrency=concurrency)
        for downloader in downloaders
        for concurrency in sorted(set(concurrencies))
    )
    given = {key: value for key, value in settings.items() if value is not None}
    given.setdefault("runs", defaults.SWEEP_RUNS)
    given.setdefault("name", "sweep")
    return validate(Experiment(variants=variants, manifests=tuple(manifests), kind="sweep", **given))


def recommend(experiment: Experiment, analysis: Analysis) -> list[Recommendation]:
    """Per manifest and downloader: the smallest concurrency with mean throughput >= (1 - tolerance)
    x the best mean throughput of that downloader (tolerance: the experiment's, default 5%). Means
    are compared, not CI bounds: the pick's CI is reported so a reader sees when it is within noise."""
    tolerance = experiment.tolerance
    picks = []
    for manifest in experiment.manifests:
        for downloader, points in _points(experiment, analysis, manifest).items():
            if not points:
                continue
            best_concurrency, best = max(points, key=lambda point: point[1].mean)
            concurrency, pick = next((c, s) for c, s in points if s.mean >= (1 - tolerance) * best.mean)
            picks.append(Recommendation(manifest, downloader, concurrency, pick.mean, pick.ci_low, pick.ci_high,
                                        best_concurrency, best.mean, tolerance))
    return picks


def sweep_lines(experiment: Experiment, analysis: Analysis, manifest: str) -> list[SweepLine]:
    """What plot_sweep draws for one manifest: a line per downloader and its recommended point."""
    chosen = {r.downloader: r.concurrency for r in recommend(experiment, analysis) if r.manifest == manifest}
    lines = []
    for downloader, points in _points(experiment, analysis, manifest).items():
        if points:
            means = [s.mean for _, s in points]
            lows = [s.ci_low if s.ci_low is not None else s.mean for _, s in points]
            highs = [s.ci_high if s.ci_high is not None else s.mean for _, s in points]
            lines.append((downloader, [c for c, _ in points], means, lows, highs, chosen.get(downloader)))
    return lines


def recommendation_sentence(pick: Recommendation) -> str:
    """"asyncio on 100: use concurrency 8 (41.2 MB/s, 95% CI 39.0–43.1; best 42.0 MB/s at 32)"."""
    interval = f", 95% CI {pick.ci_low:.1f}–{pick.ci_high:.1f}" if pick.ci_low is not None else ""
    return (
        f"{pick.downloader} on {pick.manifest}: use concurrency {pick.concurrency} "
        f"({pick.mb_per_s:.1f} MB/s{interval}; "
        f"best {pick.best_mb_s:.1f} MB/s at {pick.best_concurrency}; smallest within {pick.tolerance:.0%} of the best)"
    )


def _points(experiment: Experiment, analysis: Analysis, manifest: str) -> dict[str, list[tuple[int, Any]]]:
    """Per downloader, (concurrency, throughput Summary) in increasing concurrency, measured ones only."""
    points: dict[str, list[tuple[int, Any]]] = {}
    for variant in sorted(experiment.variants, key=lambda v: (v.downloader, v.download_concurrency)):
        throughput = analysis.cell(manifest, variant.name).throughput
        points.setdefault(variant.downloader, [])
        if throughput is not None:
            points[variant.downloader].append((variant.download_concurrency, throughput))
    return points
