"""A sweep: throughput against one numeric setting per downloader, and a value to use.

A sweep is an ordinary experiment (one variant per downloader x value, interleaved, reset before
every run) whose `kind` is "sweep" and whose `sweep_setting` names the setting varied:
download_concurrency by default, any int or float Remote setting (rate_limit, max_retries, ...), or
the processes a pulp-sync sync splits its downloads across.
This module builds it and reads a recommendation out of its statistics: the smallest value whose
throughput is within 5% of the best one's, unless the runs cannot tell the values apart.

A sweep of download_concurrency may also hold auto variants (`download_concurrency = "auto"`, `--concurrency
4,16,auto`): no value on the ordered axis, so no point of a curve nor a candidate for the recommendation, but
a level drawn across its group's values (AutoLine; harness.analysis.auto judges it against them). A curve is
a group's (Experiment.group_of): one engine, on one profile where the variants' profiles differ.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any, NamedTuple

import numpy as np

from downloaders.settings import AUTO, DownloaderSettings, remote_setting
from harness import defaults
from harness.analysis.findings import Analysis
from harness.analysis.stats import Summary, welch_p
from harness.experiment.spec import SWEEPABLE, Experiment, SpecError, sweep_value, validate
from harness.experiment.variant import InlineVariant, Variant
from pulp_base.download_processes import AUTO as AUTO_PROCESSES, parse_processes

__all__ = [
    "SweepLine",
    "AutoLine",
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
    "auto_lines",
    "recommendation_sentence",
]


class SweepLine(NamedTuple):
    """One group's curve of a sweep (a downloader, on its profile where profiles differ), as the report plots
    it: the values of the swept setting, their geometric mean MB/s and its interval, the recommended value
    (None when the runs cannot tell the values apart)."""

    group: str
    values: Sequence[float]
    centres: Sequence[float]
    lows: Sequence[float]
    highs: Sequence[float]
    recommended: float | None


class AutoLine(NamedTuple):
    """An auto variant of a sweep of download_concurrency, as the report draws it across its group's values:
    its geometric mean MB/s and 95% interval (a band), and where it settled, the median of its runs'
    `concurrency` (None without one)."""

    group: str
    variant: str
    mb_s: float
    ci_low: float
    ci_high: float
    settled: float | None

    @property
    def label(self) -> str:
        """"auto (settled at 12)": what the legend says of the level."""
        return "auto" if self.settled is None else f"auto (settled at {self.settled:g})"


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
    group: str
    """The curve: the downloader, with its profile in brackets where the variants' profiles differ."""
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
    downloader x value, named "<downloader>-c<N>" for download_concurrency ("<downloader>-auto" for auto),
    "<downloader>-p<N>" for processes and "<downloader>-<setting>-<value>" otherwise, the value in the
    variant's `remote`.
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


def sweep_values(name: str, values: Sequence[Any]) -> tuple[float | str, ...]:
    """`values` (text or numbers) of the setting `name` as a variant takes them, sorted, once each; "auto"
    (download_concurrency only) after the numbers.

    ValueError when `name` is not SWEEPABLE (only ordered values have a smallest) or when a value
    would be refused (_remote_value, _processes_value): a bad value fails before the first run, not in it.
    """
    if name not in SWEEPABLE:
        raise ValueError(f"{name!r} is neither a numeric Remote setting nor processes; "
                         f"sweep one of: {', '.join(SWEEPABLE)}")
    rule = _FIELDS[name].value if name in _FIELDS else _remote_value
    checked = sorted({rule(name, value) for value in values}, key=_numbers_then_auto)
    if not checked:
        raise ValueError(f"{name}: no values to sweep")
    return tuple(checked)


def _remote_value(name: str, value: Any) -> Any:
    """A Remote setting's value as the Remote takes it, refused as the Remote would refuse it
    (DownloaderSettings' own checks: max_retries >= 0, rate_limit > 0, ...)."""
    coerced = remote_setting(name).coerce(value)
    DownloaderSettings(**{name: coerced})
    return coerced


def _numbers_then_auto(value: float | str) -> tuple[bool, float]:
    """The order of a sweep's values: the numbers increasing, then auto, which has no place among them."""
    return (True, 0.0) if value == AUTO else (False, float(value))


def _concurrency_value(name: str, value: Any) -> int | str:
    """A download_concurrency as a variant takes it: a number by the Remote's rule, or "auto", which the
    sweep draws across the numbers rather than among them."""
    return AUTO if value == AUTO else _remote_value(name, value)


def _processes_value(name: str, value: Any) -> int:
    """A number of processes by the rule of `pulp-sync sync --processes` (1 to 256). Not auto: it is no
    number, so it has no place on the sweep's ordered axis nor a smallest to recommend."""
    number = parse_processes(value, name)
    if number == AUTO_PROCESSES:
        raise ValueError(f"{name}: auto is not a number, so a sweep cannot order it; sweep numbers "
                         "(e.g. processes=1,2,4) and measure auto with --processes auto")
    return number


class _Field(NamedTuple):
    """A swept setting that is a field of the variant itself rather than a Remote setting in its `remote`."""

    letter: str
    """What its variants' names say after the downloader: asyncio-c8, asyncio-p4."""
    value: Callable[[str, Any], Any]
    """A value as given (text or number) as the field takes it; ValueError saying why it is refused."""


_FIELDS: dict[str, _Field] = {"download_concurrency": _Field("c", _concurrency_value),
                              "processes": _Field("p", _processes_value)}
"""The swept settings that are a variant's own fields, and how their variants are made and named."""


def parse_sweep(text: str) -> tuple[str, tuple[float | str, ...]]:
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


def _variant(downloader: str, setting: str, value: float | str) -> Variant:
    """asyncio-c8 or asyncio-p4, the value in that field of the variant (_FIELDS), asyncio-auto for auto, or
    asyncio-rate_limit-10, the value in its `remote`."""
    if isinstance(value, str):  # AUTO, the one word sweep_values lets through
        return InlineVariant(f"{downloader}-{value}", downloader, download_concurrency="auto")
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
        for (group, downloader), points in _points(experiment, analysis, manifest).items():
            if points:
                picks.append(_recommendation(experiment, manifest, (group, downloader), points))
    return picks


def sweep_lines(experiment: Experiment, analysis: Analysis, manifest: str) -> list[SweepLine]:
    """What plot_sweep draws for one manifest: a line per group (geometric mean throughputs and their
    intervals) and its recommended value, None when the runs cannot tell the values apart."""
    picks = recommend(experiment, analysis)
    chosen = {r.group: r.value for r in picks if r.manifest == manifest and r.verdict == RECOMMENDED}
    lines: list[SweepLine] = []
    for (group, _), points in _points(experiment, analysis, manifest).items():
        if points:
            lines.append(SweepLine(group, [p.value for p in points], [p.mb_s for p in points],
                                   [_or(p.throughput.ci_low, p.mb_s) for p in points],
                                   [_or(p.throughput.ci_high, p.mb_s) for p in points], chosen.get(group)))
    return lines


def auto_lines(experiment: Experiment, analysis: Analysis, manifest: str) -> list[AutoLine]:
    """The auto variants of a sweep with counted runs on `manifest`, as plot_sweep draws them across their
    group's values: a level at their geometric mean MB/s, its 95% interval a band."""
    lines = []
    for variant in experiment.variants_of(manifest):
        cell = analysis.cell(manifest, variant.name)
        rate = cell.throughput
        if variant.auto_concurrency and rate is not None and rate.geometric_mean is not None:
            centre = rate.geometric_mean
            lines.append(AutoLine(experiment.group_of(variant), variant.name, centre, _or(rate.ci_low, centre),
                                  _or(rate.ci_high, centre), cell.concurrency))
    return lines


def _or(value: float | None, instead: float) -> float:
    """An interval's end, or the centre where one run leaves none."""
    return instead if value is None else value


def recommendation_sentence(pick: Recommendation) -> str:
    """"asyncio on 100: use concurrency 8 (41.2 MB/s, 95% CI 39.0–43.1; best 42.0 MB/s at 32; smallest
    within 5% of the best)", or "...: the runs cannot tell concurrency 1, 2, 4 apart (...); run more
    (--runs) or accept any"."""
    head = f"{pick.group} on {pick.manifest}: "
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


def _recommendation(experiment: Experiment, manifest: str, curve: tuple[str, str],
                    points: list[_Point]) -> Recommendation:
    """recommend's rule for the points of one curve, (group, downloader), on one manifest."""
    best, worst = max(points, key=lambda p: p.mb_s), min(points, key=lambda p: p.mb_s)
    pick = next(point for point in points if point.mb_s >= (1 - experiment.tolerance) * best.mb_s)
    few_runs = tuple(point.value for point in points if point.throughput.n < 2)
    p_value = None if few_runs else _separation(points, best, worst)
    separated = not few_runs and (p_value is None or p_value < experiment.alpha)
    return Recommendation(
        manifest=manifest, downloader=curve[1], group=curve[0], setting=experiment.sweep_setting,
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


def _points(experiment: Experiment, analysis: Analysis, manifest: str) -> dict[tuple[str, str], list[_Point]]:
    """Per curve, (group, downloader), the values of its variants that run `manifest` with counted runs, in
    increasing order; every curve of those variants has a key. Auto variants are no value (auto_lines)."""
    fixed = [variant for variant in experiment.variants_of(manifest) if not variant.auto_concurrency]
    points: dict[tuple[str, str], list[_Point]] = {}
    for variant in sorted(fixed, key=lambda v: (experiment.group_of(v), sweep_value(experiment, v))):
        cell = analysis.cell(manifest, variant.name)
        curve = points.setdefault((experiment.group_of(variant), variant.engine), [])
        if cell.throughput is not None and cell.time is not None:
            curve.append(_Point(sweep_value(experiment, variant), cell.throughput, cell.time))
    return points
