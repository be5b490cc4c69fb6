"""The statistics of a benchmark, with scipy doing the maths: describe one cell, compare two.

Every method is named where it is used, so a reader can check it against its source.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Sequence

import numpy as np
from scipy import stats

from harness import defaults

__all__ = ["Summary", "Comparison", "describe", "compare", "welch_p", "modified_z_scores", "mean_or_none"]


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

    `percent_change` is the seed's figure: (variant - baseline) / baseline, in percent of the
    baseline's mean time, so -19.5 reads "took 19.5% less time". `ratio` >= 1 is how many times
    faster the faster one ran (`faster` names which: "variant" or "baseline"), as hyperfine says it.
    """

    percent_change: float
    ratio: float
    ratio_uncertainty: float | None
    faster: str
    p_value: float | None
    significant: bool

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return asdict(self)


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


def compare(baseline: Sequence[float], variant: Sequence[float], alpha: float = defaults.ALPHA) -> Comparison:
    """How `variant`'s times differ from `baseline`'s; both need at least one value."""
    base, other = describe(baseline), describe(variant)
    percent = (other.mean - base.mean) / base.mean * 100
    faster, slower = (other, base) if other.mean < base.mean else (base, other)
    ratio = slower.mean / faster.mean
    p_value = welch_p(base, other)
    return Comparison(
        percent_change=percent,
        ratio=ratio,
        ratio_uncertainty=_ratio_uncertainty(ratio, slower, faster),
        faster="variant" if faster is other else "baseline",
        p_value=p_value,
        significant=p_value is not None and p_value < alpha,
    )


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


def _ratio_uncertainty(ratio: float, slower: Summary, faster: Summary) -> float | None:
    """Uncertainty of slower/faster by propagation of relative errors, as hyperfine reports it.

    sigma_R = R * sqrt((s_slow / m_slow)^2 + (s_fast / m_fast)^2), the first-order (Gaussian)
    propagation for a quotient of independent quantities (hyperfine's `compute_relative_speed`).
    """
    if slower.stdev is None or faster.stdev is None:
        return None
    return ratio * math.sqrt((slower.stdev / slower.mean) ** 2 + (faster.stdev / faster.mean) ** 2)
