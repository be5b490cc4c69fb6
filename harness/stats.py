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

__all__ = ["Summary", "Comparison", "describe", "compare", "modified_z_scores", "mean_or_none"]


@dataclass(frozen=True)
class Summary:
    """n, centre, spread and a confidence interval of the mean of some measurements.

    `stdev`, `ci_low` and `ci_high` are None below two values: one run has no spread.
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


def describe(values: Sequence[float], confidence: float = defaults.CONFIDENCE) -> Summary:
    """Summarise measurements; needs at least one value."""
    if not values:
        raise ValueError("describe() needs at least one value")
    data = np.asarray(values, dtype=float)
    mean = float(data.mean())
    stdev = float(data.std(ddof=1)) if len(data) > 1 else None  # sample stddev (Bessel's correction)
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
    )


def compare(baseline: Sequence[float], variant: Sequence[float], alpha: float = defaults.ALPHA) -> Comparison:
    """How `variant`'s times differ from `baseline`'s; both need at least one value."""
    base, other = describe(baseline), describe(variant)
    percent = (other.mean - base.mean) / base.mean * 100
    faster, slower = (other, base) if other.mean < base.mean else (base, other)
    ratio = slower.mean / faster.mean
    p_value = _welch_p(baseline, variant)
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


def _welch_p(a: Sequence[float], b: Sequence[float]) -> float | None:
    """Two-sided p-value of Welch's unequal-variances t-test (Welch 1947), scipy.stats.ttest_ind.

    None when a side has fewer than two runs. When neither side has any spread the test is undefined
    (scipy returns nan): equal values give 1.0, different values 0.0.
    """
    if len(a) < 2 or len(b) < 2:
        return None
    if np.ptp(a) == 0 and np.ptp(b) == 0:
        return 1.0 if a[0] == b[0] else 0.0
    return float(stats.ttest_ind(a, b, equal_var=False).pvalue)


def _ratio_uncertainty(ratio: float, slower: Summary, faster: Summary) -> float | None:
    """Uncertainty of slower/faster by propagation of relative errors, as hyperfine reports it.

    sigma_R = R * sqrt((s_slow / m_slow)^2 + (s_fast / m_fast)^2), the first-order (Gaussian)
    propagation for a quotient of independent quantities (hyperfine's `compute_relative_speed`).
    """
    if slower.stdev is None or faster.stdev is None:
        return None
    return ratio * math.sqrt((slower.stdev / slower.mean) ** 2 + (faster.stdev / faster.mean) ** 2)
