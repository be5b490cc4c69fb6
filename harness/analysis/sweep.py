"""A sweep: throughput against one numeric setting per downloader, and a value to use.

A sweep is an ordinary experiment (one variant per downloader x value, interleaved, reset before
every run) whose `kind` is "sweep" and whose `sweep_setting` names the setting varied:
download_concurrency by default, any int or float Remote setting (rate_limit, max_retries, ...), or
the processes a pulp-sync sync splits its downloads across.
This module builds it and reads a recommendation out of its statistics: the smallest value whose
throughput is within 5% of the best one's, unless the runs cannot tell the values apart.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any, NamedTuple

import numpy as np

from downloaders.settings import DownloaderSettings, remote_setting
from harness import defaults
from harness.analysis.findings import Analysis
from harness.analysis.stats import Summary, welch_p
from harness.experiment.spec import SWEEPABLE, Experiment, SpecError, sweep_value, validate
from harness.experiment.variant import InlineVariant, Variant
from pulp_base.download_processes import AUTO, parse_processes

__all__ = [
    "SweepLine",
    "RECOMMENDED",
    "INDISTINGUISHABLE",
    "Recommendation",
    "sweep_experiment",
    "sweep_values",
    "parse_sweep",
    "sweep_value",
    "setting_label",
    "value_text",
    "recommend",
    "sweep_lines",
    "recommendation_sentence",
]

SweepLine = tuple[str, Sequence[float], Sequence[float], Sequence[float], Sequence[float], float | None]
"""(downloader, values of the swept setting, geometric mean MB/s, CI low, CI high, recommended value
or None): one downloader's line of a sweep, as the report plots it."""

RECOMMENDED = "recommended"
"""Verdict: the runs separate the values; use `Recommendation.value`."""
INDISTINGUISHABLE = "indistinguishable"
"""Verdict: the runs cannot tell the values apart, so no value is recommended; run more or accept any."""


@dataclass(frozen=True)
class Recommendation:
    """The value of the swept setting to use for one downloader on one manifest, with the evidence.

    Throughputs are geometric means in MB/s, the centre of their 95% interval (Cell.throughput).
    `value` is the smallest value within `tolerance` of the best, `mb_per_s`, `ci_low` and `ci_high`
    its throughput: the value to use when `verdict` is RECOMMENDED. When it is INDISTINGUISHABLE the
    runs cannot tell the values apart, so this one will do as well as any other, but is no finding.
    `p_value` is the best value's sync times against the worst one's (Welch, Bonferroni-adjusted;
    see recommend); None when `few_runs` names values with fewer than 2 counted runs, or when only
    one value has runs. `values` are the values with runs.
    """

    manifest: str
    downloader: str
    setting: str
    verdict: str
    value: float
    mb_per_s: float
    ci_low: float | None
    ci_high: float | None
    best_value: float
    best_mb_s: float
    worst_value: float
    worst_mb_s: float
    p_value: float | None
    values: tuple[float, ...]
    few_runs: tuple[float, ...]
    tolerance: float

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return asdict(self)


class _Point(NamedTuple):
    """One value of the swept setting with runs: its throughput (MB/s) and sync time (s) statistics."""

    value: float
    throughput: Summary
    time: Summary

    @property
    def mb_s(self) -> float:
        """The geometric mean throughput, the centre of its interval (analysis describes it so)."""
        assert self.throughput.geometric_mean is not None, "Cell.throughput has a log interval"
        return self.throughput.geometric_mean


def sweep_experiment(
    downloaders: Sequence[str],
    values: Sequence[Any],
    manifests: Sequence[str],
    sweep_setting: str = defaults.SWEEP_SETTING,
    **settings: Any,
) -> Experiment:
    """The experiment of a sweep of `sweep_setting` over `values` (see sweep_values): one variant per
    downloader x value, named "<downloader>-c<N>" for download_concurrency, "<downloader>-p<N>" for
    processes and "<downloader>-<setting>-<value>" otherwise, the value in the variant's `remote`.
    `settings` are any other Experiment fields (runs, warmup, scale, profile, ...), None meaning the default."""
    try:
        checked = sweep_values(sweep_setting, values)
    except ValueError as error:
        raise SpecError(f"sweep: {error}") from error
    variants = tuple(_variant(downloader, sweep_setting, value) for downloader in downloaders for value in checked)
    given = {key: value for key, value in settings.items() if value is not None}
    given.setdefault("runs", defaults.SWEEP_RUNS)
    given.setdefault("name", "sweep")
    return validate(Experiment(variants=variants, manifests=tuple(manifests), kind="sweep",
                               sweep_setting=sweep_setting, **given))


def sweep_values(name: str, values: Sequence[Any]) -> tuple[float, ...]:
    """`values` (text or numbers) of the setting `name` as a variant takes them, sorted, once each.

    ValueError when `name` is not SWEEPABLE (only ordered values have a smallest) or when a value
    would be refused (_remote_value, _processes_value): a bad value fails before the first run, not in it.
    """
    if name not in SWEEPABLE:
        raise ValueError(f"{name!r} is neither a numeric Remote setting nor processes; "
                         f"sweep one of: {', '.join(SWEEPABLE)}")
    rule = _FIELDS[name].value if name in _FIELDS else _remote_value
    checked = sorted({rule(name, value) for value in values})
    if not checked:
        raise ValueError(f"{name}: no values to sweep")
    return tuple(checked)


def _remote_value(name: str, value: Any) -> Any:
    """A Remote setting's value as the Remote takes it, refused as the Remote would refuse it
    (DownloaderSettings' own checks: max_retries >= 0, rate_limit > 0, ...)."""
    coerced = remote_setting(name).coerce(value)
    DownloaderSettings(**{name: coerced})
    return coerced


def _processes_value(name: str, value: Any) -> int:
    """A number of processes by the rule of `pulp-sync sync --processes` (1 to 256). Not auto: it is no
    number, so it has no place on the sweep's ordered axis nor a smallest to recommend."""
    number = parse_processes(value, name)
    if number == AUTO:
        raise ValueError(f"{name}: auto is not a number, so a sweep cannot order it; sweep numbers "
                         "(e.g. processes=1,2,4) and measure auto with --processes auto")
    return number


class _Field(NamedTuple):
    """A swept setting that is a field of the variant itself rather than a Remote setting in its `remote`."""

    letter: str
    """What its variants' names say after the downloader: asyncio-c8, asyncio-p4."""
    value: Callable[[str, Any], Any]
    """A value as given (text or number) as the field takes it; ValueError saying why it is refused."""


_FIELDS: dict[str, _Field] = {"download_concurrency": _Field("c", _remote_value),
                              "processes": _Field("p", _processes_value)}
"""The swept settings that are a variant's own fields, and how their variants are made and named."""


def parse_sweep(text: str) -> tuple[str, tuple[float, ...]]:
    """`NAME=V1,V2,...` (`bench sweep --sweep`) as the setting's name and its values (sweep_values);
    ValueError saying what is wrong."""
    name, equals, listed = text.partition("=")
    if not equals:
        raise ValueError(f"{text!r}: expected NAME=V1,V2,..., e.g. rate_limit=5,10,20")
    return name.strip(), sweep_values(name.strip(), [item.strip() for item in listed.split(",") if item.strip()])


def setting_label(setting: str) -> str:
    """How sentences and plots name the swept setting: "concurrency", or the setting's own name."""
    return "concurrency" if setting == "download_concurrency" else setting


def value_text(value: float) -> str:
    """A value as a variant name and a sentence write it: 8, 0.5, 10 (for 10.0), never in exponent form."""
    return str(value) if isinstance(value, int) else np.format_float_positional(value, trim="-")


def _variant(downloader: str, setting: str, value: float) -> Variant:
    """asyncio-c8 or asyncio-p4, the value in that field of the variant (_FIELDS), or asyncio-rate_limit-10,
    the value in its `remote`."""
    if setting in _FIELDS:
        field: dict[str, Any] = {setting: value}
        return InlineVariant(f"{downloader}-{_FIELDS[setting].letter}{value_text(value)}", downloader, **field)
    return InlineVariant(f"{downloader}-{setting}-{value_text(value)}", downloader, remote={setting: value})


def recommend(experiment: Experiment, analysis: Analysis) -> list[Recommendation]:
    """Per manifest and downloader: the smallest value of the swept setting whose throughput is at
    least (1 - tolerance) x the best value's (tolerance: the experiment's, default 5%).

    Smallest is the rule for every setting: a smaller value is gentler on the remote and the worker
    (fewer connections, fewer processes, fewer requests per second, fewer retries, shorter waits), so a
    larger one must earn its place by throughput. Throughputs are geometric means (Cell.throughput).

    No value is recommended (verdict INDISTINGUISHABLE) when the runs cannot tell the values apart:
    a value has fewer than 2 counted runs, or the best value's sync times are not significantly
    shorter than the worst one's (see _separation; p >= the experiment's alpha). Values whose every
    run failed are no candidates. Past that test the pick is a decision on means, as the tolerance
    is a margin of practical equivalence: its interval is reported so a reader sees how close it
    is. Testing each step as well (the pick against the next smaller value) would refuse nearly
    every sweep at 3 runs per value, and multiply the tests to correct for.
    """
    picks = []
    for manifest in experiment.manifests:
        for downloader, points in _points(experiment, analysis, manifest).items():
            if points:
                picks.append(_recommendation(experiment, manifest, downloader, points))
    return picks


def sweep_lines(experiment: Experiment, analysis: Analysis, manifest: str) -> list[SweepLine]:
    """What plot_sweep draws for one manifest: a line per downloader (geometric mean throughputs and
    their intervals) and its recommended value, None when the runs cannot tell the values apart."""
    picks = recommend(experiment, analysis)
    chosen = {r.downloader: r.value for r in picks if r.manifest == manifest and r.verdict == RECOMMENDED}
    lines: list[SweepLine] = []
    for downloader, points in _points(experiment, analysis, manifest).items():
        if points:
            centres = [point.mb_s for point in points]
            lows = [p.throughput.ci_low if p.throughput.ci_low is not None else p.mb_s for p in points]
            highs = [p.throughput.ci_high if p.throughput.ci_high is not None else p.mb_s for p in points]
            lines.append((downloader, [p.value for p in points], centres, lows, highs, chosen.get(downloader)))
    return lines


def recommendation_sentence(pick: Recommendation) -> str:
    """"asyncio on 100: use concurrency 8 (41.2 MB/s, 95% CI 39.0–43.1; best 42.0 MB/s at 32; smallest
    within 5% of the best)", or "...: the runs cannot tell concurrency 1, 2, 4 apart (...); run more
    (--runs) or accept any"."""
    head = f"{pick.downloader} on {pick.manifest}: "
    if pick.verdict == INDISTINGUISHABLE:
        return head + _cannot_tell(pick)
    interval = f", 95% CI {pick.ci_low:.1f}–{pick.ci_high:.1f}" if pick.ci_low is not None else ""
    return head + (
        f"use {setting_label(pick.setting)} {value_text(pick.value)} ({pick.mb_per_s:.1f} MB/s{interval}; "
        f"best {pick.best_mb_s:.1f} MB/s at {value_text(pick.best_value)}; "
        f"smallest within {pick.tolerance:.0%} of the best){_at_the_edge(pick)}"
    )


def _at_the_edge(pick: Recommendation) -> str:
    """A warning when the best value is the largest one tried: throughput may still rise beyond it."""
    if len(pick.values) < 2 or pick.best_value != max(pick.values):
        return ""
    largest = value_text(pick.best_value)
    return f"; the best is the largest value tried, so larger ones may be faster still: sweep beyond {largest}"


def _cannot_tell(pick: Recommendation) -> str:
    if pick.few_runs:
        why = f"fewer than 2 counted runs at {', '.join(map(value_text, pick.few_runs))}"
    else:
        why = (f"best {pick.best_mb_s:.1f} MB/s at {value_text(pick.best_value)}, worst {pick.worst_mb_s:.1f} "
               f"at {value_text(pick.worst_value)}, Bonferroni-adjusted p = {pick.p_value:.2g}")
    values = ", ".join(map(value_text, pick.values))
    return f"the runs cannot tell {setting_label(pick.setting)} {values} apart ({why}); run more (--runs) or accept any"


def _recommendation(experiment: Experiment, manifest: str, downloader: str, points: list[_Point]) -> Recommendation:
    """recommend's rule for the points of one downloader on one manifest."""
    best, worst = max(points, key=lambda p: p.mb_s), min(points, key=lambda p: p.mb_s)
    pick = next(point for point in points if point.mb_s >= (1 - experiment.tolerance) * best.mb_s)
    few_runs = tuple(point.value for point in points if point.throughput.n < 2)
    p_value = None if few_runs else _separation(points, best, worst)
    separated = not few_runs and (p_value is None or p_value < experiment.alpha)
    return Recommendation(
        manifest=manifest, downloader=downloader, setting=experiment.sweep_setting,
        verdict=RECOMMENDED if separated else INDISTINGUISHABLE, value=pick.value, mb_per_s=pick.mb_s,
        ci_low=pick.throughput.ci_low, ci_high=pick.throughput.ci_high, best_value=best.value, best_mb_s=best.mb_s,
        worst_value=worst.value, worst_mb_s=worst.mb_s, p_value=p_value, values=tuple(p.value for p in points),
        few_runs=few_runs, tolerance=experiment.tolerance,
    )


def _separation(points: Sequence[_Point], best: _Point, worst: _Point) -> float | None:
    """Whether the runs tell the values apart at all: the two-sided p-value of Welch's t-test of the
    best value's sync times against the worst one's (harness.analysis.stats.welch_p), times the number of
    pairs of values, at most 1. That is the Bonferroni correction (Dunn 1961, "Multiple comparisons
    among means", JASA 56:52), needed because the pair tested is the most different one, chosen
    after seeing the data: it is as if every pair had been tested (8 values of 3 runs of pure
    normal noise: 21% of sweeps significant uncorrected, 0.8% corrected). None with a single value.
    """
    if len(points) < 2:
        return None
    p_value = welch_p(best.time, worst.time)
    pairs = len(points) * (len(points) - 1) // 2
    return None if p_value is None else min(1.0, p_value * pairs)


def _points(experiment: Experiment, analysis: Analysis, manifest: str) -> dict[str, list[_Point]]:
    """Per downloader, its values with counted runs in increasing order; every downloader has a key."""
    points: dict[str, list[_Point]] = {}
    for variant in sorted(experiment.variants, key=lambda v: (v.engine, sweep_value(experiment, v))):
        cell = analysis.cell(manifest, variant.name)
        points.setdefault(variant.engine, [])
        if cell.throughput is not None and cell.time is not None:
            points[variant.engine].append(_Point(sweep_value(experiment, variant), cell.throughput, cell.time))
    return points
