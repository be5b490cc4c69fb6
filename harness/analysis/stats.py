"""The statistics of a benchmark, with scipy doing the maths: describe one cell, compare two.

Every method is named where it is used, so a reader can check it against its source.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np
from scipy import optimize, stats

from harness import defaults

__all__ = ["Summary", "Comparison", "AverageChange", "describe", "compare", "average_change", "verdict", "holm",
           "welch_p", "modified_z_scores", "mean_or_none", "median_or_none", "bootstrap_min_rounds"]


@dataclass(frozen=True)
class Summary:
    """n, centre, spread and a confidence interval of the mean of some measurements.

    `stdev`, `ci_low` and `ci_high` are None below two values: one run has no spread.
    `geometric_mean` is set when the interval is of it (`describe(..., log_interval=True)`, for
    rates), None when the interval is of the arithmetic `mean` (Student's t, or with `lognormal`, for
    times, from the logs).
    `outliers` are indexes into the values given.
    """

    n: int
    mean: float
    stdev: float | None
    median: float
    min: float
    max: float
    ci_low: float | None
    ci_high: float | None
    cv: float | None
    outliers: tuple[int, ...]
    geometric_mean: float | None = None

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return dict(asdict(self), outliers=list(self.outliers))


@dataclass(frozen=True)
class Comparison:
    """A variant against the baseline on one manifest (times: lower is better).

    `ratio` is the variant's time over the baseline's as a geometric mean, so 0.8 reads "took 0.8 times
    as long", with `ratio_ci` its interval at defaults.CONFIDENCE. `paired`: the runs were compared
    round by round (interleaved rounds share the machine's drift, which the per-round ratio cancels);
    `n` is then the number of rounds compared, else the smaller side's runs.
    `p_value` is the primary test's: the paired t-test on the log times (paired), Welch's t-test on
    the log times (not paired). `p_value_wilcoxon` is the Wilcoxon signed-rank test on the per-round log
    ratios (paired only), `p_value_welch` Welch's t-test on the times themselves (the figure of before).
    `p_value_adjusted` is `p_value` after Holm's correction across the experiment's pairs (see `holm`);
    the `verdict` ("faster", "slower" or "no difference") uses it and the band of practical
    equivalence `band`. `log_se` and `log_df` are the standard error and degrees of freedom of the mean
    log ratio, `log_spread` the standard error it would have at one run (see _LogRatio): from them come
    `mde_percent` and `runs_to_resolve`, computed when asked (they take a root-finding each).
    `percent_change` is the seed's figure: (variant - baseline) / baseline of the means.
    """

    percent_change: float
    ratio: float
    ratio_ci: tuple[float, float] | None
    paired: bool
    n: int
    p_value: float | None
    p_value_wilcoxon: float | None
    p_value_welch: float | None
    p_value_adjusted: float | None
    log_se: float | None
    log_df: float | None
    log_spread: float | None
    alpha: float
    band: float
    verdict: str

    @property
    def faster(self) -> str:
        """Which ran faster by the ratio: "variant" or "baseline"."""
        return "variant" if self.ratio < 1 else "baseline"

    @property
    def speedup(self) -> float:
        """How many times faster the faster one ran (>= 1), as hyperfine says it."""
        return 1 / self.ratio if self.ratio < 1 else self.ratio

    @functools.cached_property
    def mde_percent(self) -> float | None:
        """The smallest slowdown, in percent, this comparison's noise and number of runs detect with
        defaults.POWER at `alpha` (see _mde_percent)."""
        return _mde_percent(self._log_ratio, self.alpha)

    @functools.cached_property
    def runs_to_resolve(self) -> int | None:
        """Runs per variant that would detect defaults.RESOLVE at this spread (see _runs_to_resolve)."""
        return _runs_to_resolve(self._log_ratio, self.alpha, self.paired)

    @property
    def _log_ratio(self) -> _LogRatio:
        return _LogRatio(math.log(self.ratio), self.log_se, self.log_df, self.log_spread)

    @property
    def significant(self) -> bool:
        """Whether the adjusted p is below alpha (the band aside)."""
        return self.p_value_adjusted is not None and self.p_value_adjusted < self.alpha

    def adjusted(self, p_value: float | None) -> Comparison:
        """This comparison with its p-value adjusted for the other comparisons made (Holm), and the verdict on it."""
        return replace(self, p_value_adjusted=p_value, verdict=verdict(self.ratio, p_value, self.alpha, self.band))

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready, with the derived `faster`, `speedup`, `significant`, `mde_percent` and `runs_to_resolve`."""
        data = asdict(self)
        data["ratio_ci"] = list(self.ratio_ci) if self.ratio_ci else None
        return dict(data, faster=self.faster, speedup=self.speedup, significant=self.significant,
                    mde_percent=self.mde_percent, runs_to_resolve=self.runs_to_resolve)


@dataclass(frozen=True)
class AverageChange:
    """The seed's conclusion for one variant: the mean over the manifests of its percent change in time (the
    seed's figure, of the arithmetic means), its percentile-bootstrap interval over rounds, and a verdict by
    the rule of every manifest's.

    `rounds` is the fewest rounds that any of the `manifests` averaged has in common with the baseline.
    Below bootstrap_min_rounds() of them there is no interval, no p-value and no verdict (`judged` is
    False, `verdict` "no difference"): the bootstrap cannot support one. Else `p_value` is the bootstrap's
    (see average_change), `p_value_adjusted` it after Holm's correction together with the experiment's
    pairs (see `holm`), and `verdict` is `verdict()` of the ratio 1 + percent/100 at that p, with the
    manifests' alpha and band of practical equivalence.
    """

    percent: float
    ci_low: float | None
    ci_high: float | None
    rounds: int
    manifests: int
    p_value: float | None
    p_value_adjusted: float | None
    alpha: float
    band: float
    verdict: str

    @property
    def judged(self) -> bool:
        """Whether there were rounds enough for a bootstrap verdict (bootstrap_min_rounds())."""
        return self.p_value is not None

    @property
    def ratio(self) -> float:
        """The average change as a ratio of times, 1 + percent/100: what the band is applied to."""
        return 1 + self.percent / 100

    @property
    def significant(self) -> bool:
        """Whether the adjusted p is below alpha (the band aside)."""
        return self.p_value_adjusted is not None and self.p_value_adjusted < self.alpha

    def adjusted(self, p_value: float | None) -> AverageChange:
        """This average with its p-value adjusted for the other comparisons made (Holm), and the verdict on it."""
        return replace(self, p_value_adjusted=p_value, verdict=verdict(self.ratio, p_value, self.alpha, self.band))

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready, with the derived `judged`, `significant` and `min_rounds` (bootstrap_min_rounds())."""
        return dict(asdict(self), judged=self.judged, significant=self.significant, min_rounds=bootstrap_min_rounds())


@dataclass(frozen=True)
class _LogRatio:
    """The mean difference of log times (variant - baseline), its standard error, degrees of freedom and
    the spread that sets the standard error for n runs (`spread / sqrt(n)`)."""

    mean: float
    se: float | None
    df: float | None
    spread: float | None


def describe(
    values: Sequence[float], confidence: float = defaults.CONFIDENCE, *, log_interval: bool = False,
    lognormal: bool = False,
) -> Summary:
    """Summarise measurements; needs at least one value.

    `log_interval` is for rates (MB/s), which are positive and right-skewed: the interval is then
    of the geometric mean, from the logs (see _log_interval), so it never reaches below zero as
    Student's t on the rates themselves does with few, spread runs. `lognormal` is for times, whose
    table shows the arithmetic mean: the interval is still of that mean, but computed on the log
    scale (see _lognormal_mean_interval), so it never reaches below zero either. Either needs every
    value above 0; without them the interval is Student's t on the values.
    """
    if not values:
        raise ValueError("describe() needs at least one value")
    if log_interval and lognormal:
        raise ValueError("describe() takes log_interval or lognormal, not both")
    data = np.asarray(values, dtype=float)
    if (log_interval or lognormal) and not (data > 0).all():
        raise ValueError("describe(log_interval=True) and describe(lognormal=True) need values above 0")
    mean = float(data.mean())
    stdev = float(data.std(ddof=1)) if len(data) > 1 else None  # sample stddev (Bessel's correction)
    if log_interval:
        low, high = _log_interval(data, confidence)
    elif lognormal:
        low, high = _lognormal_mean_interval(data, confidence)
    else:
        low, high = _mean_interval(data, confidence)
    return Summary(
        n=len(data),
        mean=mean,
        stdev=stdev,
        median=float(np.median(data)),
        min=float(data.min()),
        max=float(data.max()),
        ci_low=low,
        ci_high=high,
        cv=stdev / mean if stdev is not None and mean > 0 else None,
        outliers=_outliers(data),
        geometric_mean=float(stats.gmean(data)) if log_interval else None,
    )


def compare(
    baseline: Sequence[float],
    variant: Sequence[float],
    alpha: float = defaults.ALPHA,
    band: float = defaults.BAND,
    *,
    paired: bool = False,
) -> Comparison:
    """How `variant`'s times differ from `baseline`'s; both need at least one value, all above 0.

    With `paired`, baseline[i] and variant[i] were measured in the same round (same length): the
    comparison is of the per-round log ratios. The p-value is not yet adjusted for other comparisons:
    `holm` does that across an experiment, until then `p_value_adjusted` is `p_value`.
    """
    if paired and len(baseline) != len(variant):
        raise ValueError("paired comparisons need one baseline time per variant time")
    base, other = np.log(np.asarray(baseline, dtype=float)), np.log(np.asarray(variant, dtype=float))
    log_ratio = _paired_log_ratio(other - base) if paired else _unpaired_log_ratio(base, other)
    p_value = _t_p(log_ratio)
    means = float(np.mean(baseline)), float(np.mean(variant))
    return Comparison(
        percent_change=(means[1] - means[0]) / means[0] * 100,
        ratio=math.exp(log_ratio.mean),
        ratio_ci=_ratio_interval(log_ratio),
        paired=paired,
        n=len(base) if paired else min(len(base), len(other)),
        p_value=p_value,
        p_value_wilcoxon=_wilcoxon_p(other - base) if paired else None,
        p_value_welch=welch_p(describe(baseline), describe(variant)),
        p_value_adjusted=p_value,
        log_se=log_ratio.se,
        log_df=log_ratio.df,
        log_spread=log_ratio.spread,
        alpha=alpha,
        band=band,
        verdict=verdict(math.exp(log_ratio.mean), p_value, alpha, band),
    )


def average_change(
    manifests: Sequence[tuple[Sequence[float], Sequence[float]]],
    alpha: float = defaults.ALPHA,
    band: float = defaults.BAND,
    confidence: float = defaults.CONFIDENCE,
    resamples: int = defaults.BOOTSTRAP_RESAMPLES,
) -> AverageChange:
    """The mean over manifests of (mean variant - mean baseline) / mean baseline, in percent, from each
    manifest's (baseline times, variant times) in the rounds both ran (aligned, one round each, at least one).

    Its interval is scipy.stats.bootstrap's percentile interval (Efron & Tibshirani 1993, "An
    Introduction to the Bootstrap", ch. 13), each manifest's rounds resampled on their own and by their
    indexes, so that a round's pair of times stays together. Its p-value is the test the interval makes:
    "no change" is rejected at level a when 0 lies outside the 1 - a percentile interval (the duality
    of intervals and tests, Efron & Tibshirani 1993, section 15.4), so p is twice the smaller share of
    resamples on either side of 0, each share counted as (1 + count) / (1 + resamples) so that finitely
    many resamples never claim p = 0 (Davison & Hinkley 1997, "Bootstrap Methods and their Application",
    ch. 4). Below bootstrap_min_rounds(confidence) rounds on a manifest there is neither: no verdict.
    Seeded, so a report is the same every time it is made. The p-value is not yet adjusted: the caller
    adjusts it with the experiment's pairs (`holm`), until then `p_value_adjusted` is `p_value`.
    """
    data = [(np.asarray(base, dtype=float), np.asarray(other, dtype=float)) for base, other in manifests]
    if not data or any(len(base) != len(other) or not len(base) for base, other in data):
        raise ValueError("average_change() needs at least one manifest, with one variant time per baseline time")

    def statistic(*indexes: np.ndarray, axis: int = -1) -> np.ndarray:
        """The average change of the manifests' rounds at `indexes` (one array per manifest; a batch of
        resamples along the first axes, the rounds along the last)."""
        changes = []
        for (base, other), index in zip(data, indexes, strict=True):
            picked = np.asarray(index, dtype=np.intp)
            base_mean, other_mean = base[picked].mean(axis=axis), other[picked].mean(axis=axis)
            changes.append((other_mean - base_mean) / base_mean * 100)
        return np.mean(changes, axis=0)

    rounds = [np.arange(len(base)) for base, _ in data]
    point = float(statistic(*rounds))
    fewest = min(len(index) for index in rounds)
    unjudged = AverageChange(point, None, None, fewest, len(data), None, None, alpha, band, "no difference")
    if fewest < bootstrap_min_rounds(confidence):
        return unjudged
    result = stats.bootstrap(rounds, statistic, n_resamples=resamples, vectorized=True, paired=False,
                             confidence_level=confidence, method="percentile", random_state=np.random.default_rng(0))
    draws = np.asarray(result.bootstrap_distribution, dtype=float)
    below, above = int((draws <= 0).sum()), int((draws >= 0).sum())
    p_value = min(1.0, 2 * (1 + min(below, above)) / (1 + draws.size))
    low, high = float(result.confidence_interval.low), float(result.confidence_interval.high)
    return replace(unjudged, ci_low=low, ci_high=high, p_value=p_value, p_value_adjusted=p_value,
                   verdict=verdict(1 + point / 100, p_value, alpha, band))


def bootstrap_min_rounds(confidence: float = defaults.CONFIDENCE) -> int:
    """The fewest rounds per manifest from which the average's percentile-bootstrap interval at `confidence`
    may give a verdict: 6 at 95%.

    Why. A resample of a manifest's n rounds only repeats and leaves out rounds, and its change,
    sum(variant) / sum(baseline) - 1, is a weighted mean of the per-round ratios: every bootstrap value,
    and so the percentile interval, lies within the range of those n ratios. All n fall on one side of
    their distribution's median with probability 2 * 2^-n, so where the true change is that median (as
    with noise symmetric about it) the interval misses it at least that often: its coverage is at most
    1 - 2^(1 - n), which reaches `confidence` only for n >= 1 + log2(1 / (1 - confidence)) = 5.3 at
    95% (coverage at most 50% from 2 rounds, 75% from 3, 93.8% from 5, 96.9% from 6). The bound is
    necessary, not sufficient, and is one manifest's; the rule asks it of the manifest with the fewest
    rounds. Few rounds also leave few distinct resamples (C(2n - 1, n): 3 from 2 rounds, 462 from 6),
    and a percentile interval is narrow at small n (the bootstrap's variance of a mean is (n - 1)/n of
    s^2/n, and it has normal tails where Student's t has n - 1 degrees of freedom: from 2 rounds it is
    about a ninth of the width of Student's interval on the same rounds).
    """
    return math.ceil(1 + math.log2(1 / (1 - confidence)))


def verdict(ratio: float, p_value: float | None, alpha: float, band: float) -> str:
    """"faster" or "slower" when the test rejects "equally fast" at `alpha` AND the ratio lies outside
    the band of practical equivalence (1 ± band, symmetric on the log scale); else "no difference".

    The two-condition rule of criterion (significance, then a noise threshold) and asv (`--factor`):
    a significant 0.3% on a shared machine is within noise, and a 10% seen twice is no finding.
    """
    if p_value is None or p_value >= alpha or abs(math.log(ratio)) < math.log1p(band):
        return "no difference"
    return "faster" if ratio < 1 else "slower"


def holm(p_values: Sequence[float | None]) -> list[float | None]:
    """Holm's step-down adjustment (Holm 1979, "A simple sequentially rejective multiple test
    procedure", Scand. J. Statist. 6:65): with the m p-values sorted, p_(i) becomes
    max over j <= i of min(1, (m - j + 1) p_(j)). Rejecting where the adjusted p < alpha keeps the
    chance of any false "different" among the m comparisons at most alpha. None (no test) is kept
    and does not count in m.
    """
    present = sorted((p, i) for i, p in enumerate(p_values) if p is not None)
    adjusted: list[float | None] = list(p_values)
    running, m = 0.0, len(present)
    for rank, (p, index) in enumerate(present):
        running = max(running, min(1.0, (m - rank) * p))
        adjusted[index] = running
    return adjusted


def modified_z_scores(values: Sequence[float] | np.ndarray) -> np.ndarray:
    """Robust outlier scores: M_i = 0.6745 (x_i - median) / MAD.

    The modified Z-score of Iglewicz & Hoaglin (1993), "How to Detect and Handle Outliers", ASQC
    Basic References in Quality Control vol. 16. They label |M_i| > 3.5 potential outliers; hyperfine
    uses the same score with a cut-off of |x - median| > 14.826 MAD, i.e. |M_i| > 10, which is
    defaults.OUTLIER_Z (see there why).
    The MAD is scipy's unscaled median absolute deviation; when it is 0 (most values equal), every
    value off the median is infinitely far and every value on it scores 0.
    """
    data = np.asarray(values, dtype=float)
    deviation = data - np.median(data)
    mad = float(stats.median_abs_deviation(data, scale=1.0))
    if mad == 0:
        return np.where(deviation == 0, 0.0, np.inf)
    return 0.6745 * deviation / mad


def mean_or_none(values: Sequence[float | None]) -> float | None:
    """Mean of the values that are there; None when there are none."""
    present = [value for value in values if value is not None and not math.isnan(value)]
    return float(np.mean(present)) if present else None


def median_or_none(values: Sequence[float | None]) -> float | None:
    """Median of the values that are there; None when there are none."""
    present = [value for value in values if value is not None]
    return float(np.median(present)) if present else None


def _outliers(data: np.ndarray) -> tuple[int, ...]:
    """Indexes of values whose modified Z-score exceeds defaults.OUTLIER_Z (none below OUTLIER_MIN_RUNS)."""
    if len(data) < defaults.OUTLIER_MIN_RUNS:
        return ()
    return tuple(int(i) for i in np.flatnonzero(np.abs(modified_z_scores(data)) > defaults.OUTLIER_Z))


def _mean_interval(data: np.ndarray, confidence: float) -> tuple[float | None, float | None]:
    """Confidence interval of the mean from Student's t-distribution with n - 1 degrees of freedom.

    mean ± t(1 - (1 - confidence)/2, n - 1) * s / sqrt(n), via scipy.stats.t.interval and
    scipy.stats.sem; all runs equal gives a zero-width interval.
    """
    if len(data) < 2:
        return None, None
    mean, sem = float(data.mean()), float(stats.sem(data))
    if sem == 0:
        return mean, mean
    low, high = stats.t.interval(confidence, len(data) - 1, loc=mean, scale=sem)
    return float(low), float(high)


def _log_interval(data: np.ndarray, confidence: float) -> tuple[float | None, float | None]:
    """Confidence interval of the geometric mean: Student's t interval of the mean of log(x), exponentiated.

    The log-transform interval for positive, right-skewed data (Bland & Altman 1996, "Transforming
    data", BMJ 312:770): exp(mean(ln x) ± t * sem(ln x)), always above 0, around the geometric mean
    exp(mean(ln x)), and as asymmetric as the rates are.
    """
    low, high = _mean_interval(np.log(data), confidence)
    if low is None or high is None:
        return None, None
    return math.exp(low), math.exp(high)


def _lognormal_mean_interval(data: np.ndarray, confidence: float) -> tuple[float | None, float | None]:
    """Confidence interval of the arithmetic mean of positive, lognormal-like values, from their logs.

    The modified Cox method (Olsson 2005, "Confidence intervals for the mean of a log-normal
    distribution", J. Statist. Educ. 13(1)): with y = ln x, its mean ybar and variance s^2 over n values,
    exp(ybar + s^2/2 ± t(n - 1) * sqrt(s^2/n + s^4 / (2(n - 1)))). It is an interval of the mean that
    the table shows beside it (not of the geometric mean), always above 0, wider above than below, as
    run times are; at the spread of a quiet machine (CV 1-2%) it is Student's t interval to the
    displayed digit. All runs equal gives a zero-width interval.
    """
    if len(data) < 2:
        return None, None
    logs = np.log(data)
    centre, variance, n = float(logs.mean()), float(logs.var(ddof=1)), len(logs)
    if variance == 0:
        return float(data.mean()), float(data.mean())
    centre += variance / 2
    half = float(stats.t.ppf(0.5 + confidence / 2, n - 1)) * math.sqrt(variance / n + variance**2 / (2 * (n - 1)))
    return math.exp(centre - half), math.exp(centre + half)


def welch_p(a: Summary, b: Summary) -> float | None:
    """Two-sided p-value of Welch's unequal-variances t-test (Welch 1947) of the means of two samples.

    From their summaries, with scipy.stats.ttest_ind_from_stats (sample stddevs, ddof = 1): the
    same test as scipy.stats.ttest_ind on the values. None when a side has fewer than two runs.
    When neither side has any spread the test is undefined (scipy returns nan): equal values give
    1.0, different values 0.0.
    """
    if a.stdev is None or b.stdev is None:
        return None
    if a.stdev == 0 and b.stdev == 0:
        return 1.0 if a.mean == b.mean else 0.0
    result = stats.ttest_ind_from_stats(a.mean, a.stdev, a.n, b.mean, b.stdev, b.n, equal_var=False)
    return float(result.pvalue)


def _paired_log_ratio(differences: np.ndarray) -> _LogRatio:
    """Per-round differences of log times: their mean, and Student's standard error with n - 1 degrees
    of freedom (the paired t-test is the one-sample t-test of these differences; Student 1908)."""
    n = len(differences)
    if n < 2:
        return _LogRatio(float(differences.mean()), None, None, None)
    spread = float(differences.std(ddof=1))
    return _LogRatio(float(differences.mean()), spread / math.sqrt(n), n - 1, spread)


def _unpaired_log_ratio(base: np.ndarray, other: np.ndarray) -> _LogRatio:
    """Difference of the mean log times with Welch's standard error and the Welch-Satterthwaite degrees
    of freedom (Welch 1947); `spread` is the root of the summed variances, the standard error at one
    run per side."""
    if len(base) < 2 or len(other) < 2:
        return _LogRatio(float(other.mean() - base.mean()), None, None, None)
    v_base, v_other = base.var(ddof=1) / len(base), other.var(ddof=1) / len(other)
    se = math.sqrt(v_base + v_other)
    df = (v_base + v_other) ** 2 / (v_base**2 / (len(base) - 1) + v_other**2 / (len(other) - 1)) if se else None
    spread = math.sqrt(base.var(ddof=1) + other.var(ddof=1))
    return _LogRatio(float(other.mean() - base.mean()), se, df, spread)


def _t_p(log_ratio: _LogRatio) -> float | None:
    """Two-sided p of the t statistic mean / se; with no spread at all, 1.0 for equal and 0.0 for unequal."""
    if log_ratio.se is None:
        return None
    if log_ratio.se == 0 or log_ratio.df is None:
        return 1.0 if log_ratio.mean == 0 else 0.0
    return float(2 * stats.t.sf(abs(log_ratio.mean / log_ratio.se), log_ratio.df))


def _ratio_interval(log_ratio: _LogRatio, confidence: float = defaults.CONFIDENCE) -> tuple[float, float] | None:
    """exp(mean ± t * se): the interval of the ratio of (geometric mean) times, from the logs."""
    if log_ratio.se is None:
        return None
    if log_ratio.se == 0 or log_ratio.df is None:
        return math.exp(log_ratio.mean), math.exp(log_ratio.mean)
    half = float(stats.t.ppf(0.5 + confidence / 2, log_ratio.df)) * log_ratio.se
    return math.exp(log_ratio.mean - half), math.exp(log_ratio.mean + half)


def _wilcoxon_p(differences: np.ndarray) -> float | None:
    """Two-sided p of the Wilcoxon signed-rank test (Wilcoxon 1945) of the per-round log ratios, by
    scipy.stats.wilcoxon (exact for small n without ties); None below 2 rounds or when all are 0."""
    if len(differences) < 2 or not np.any(differences):
        return None
    return float(stats.wilcoxon(differences).pvalue)


def _power(effect: float, se: float, df: float, alpha: float) -> float:
    """Power of the two-sided t-test at `alpha` against a true log ratio `effect`: the chance that the
    noncentral t (noncentrality effect / se; Cohen 1988, ch. 2) falls beyond the critical values."""
    critical = float(stats.t.ppf(1 - alpha / 2, df))
    shift = effect / se
    power = float(stats.nct.sf(critical, df, shift) + stats.nct.cdf(-critical, df, shift))
    if math.isnan(power):  # scipy's nct gives up far out in the tail, where the answer is plain
        return 1.0 if abs(shift) > critical else 0.0
    return power


def _mde_percent(log_ratio: _LogRatio, alpha: float, power: float = defaults.POWER) -> float | None:
    """The minimum detectable effect: the slowdown, in percent, that this comparison's standard error and
    degrees of freedom detect with `power` at `alpha` (solved for with Brent's method)."""
    if log_ratio.se is None or log_ratio.df is None:
        return None
    if log_ratio.se == 0:
        return 0.0
    se, df = log_ratio.se, log_ratio.df
    effect = optimize.brentq(lambda e: _power(e, se, df, alpha) - power, 0.0, 50 * se)
    return math.expm1(effect) * 100


def _runs_to_resolve(log_ratio: _LogRatio, alpha: float, paired: bool, wanted: float = defaults.RESOLVE,
                     power: float = defaults.POWER, most: int = 1000) -> int | None:
    """Runs per variant at which a `wanted` difference is detected with `power`, at this comparison's
    spread: the smallest n whose standard error spread / sqrt(n) gives that power (df n - 1 paired,
    2n - 2 not), found by bisection (power grows with n); None without a spread, or beyond `most`."""
    if log_ratio.spread is None:
        return None
    spread, effect = log_ratio.spread, math.log1p(wanted)

    def enough(n: int) -> bool:
        return spread == 0 or _power(effect, spread / math.sqrt(n), n - 1 if paired else 2 * n - 2, alpha) >= power

    if not enough(most):
        return None
    low, high = 2, most
    while low < high:
        middle = (low + high) // 2
        low, high = (low, middle) if enough(middle) else (middle + 1, high)
    return low
