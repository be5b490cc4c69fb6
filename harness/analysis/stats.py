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

__all__ = ["Summary", "Comparison", "describe", "compare", "verdict", "holm", "welch_p", "modified_z_scores",
           "mean_or_none"]


@dataclass(frozen=True)
class Summary:
    """n, centre, spread and a confidence interval of the mean of some measurements.

    `stdev`, `ci_low` and `ci_high` are None below two values: one run has no spread.
    `geometric_mean` is set when the interval is of it (`describe(..., log_interval=True)`, for
    rates), None when the interval is of the arithmetic `mean`.
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
class _LogRatio:
    """The mean difference of log times (variant - baseline), its standard error, degrees of freedom and
    the spread that sets the standard error for n runs (`spread / sqrt(n)`)."""

    mean: float
    se: float | None
    df: float | None
    spread: float | None


def describe(
    values: Sequence[float], confidence: float = defaults.CONFIDENCE, *, log_interval: bool = False
) -> Summary:
    """Summarise measurements; needs at least one value.

    `log_interval` is for rates (MB/s), which are positive and right-skewed: the interval is then
    of the geometric mean, from the logs (see _log_interval), so it never reaches below zero as
    Student's t on the rates themselves does with few, spread runs. Every value must be above 0.
    """
    if not values:
        raise ValueError("describe() needs at least one value")
    data = np.asarray(values, dtype=float)
    if log_interval and not (data > 0).all():
        raise ValueError("describe(log_interval=True) needs values above 0")
    mean = float(data.mean())
    stdev = float(data.std(ddof=1)) if len(data) > 1 else None  # sample stddev (Bessel's correction)
    low, high = _log_interval(data, confidence) if log_interval else _mean_interval(data, confidence)
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
