"""Statistics against hand-checked values and scipy's own definitions."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as scipy_stats

from harness.analysis.stats import compare, describe, holm, modified_z_scores, welch_p


def test_describe_matches_the_textbook_formulas() -> None:
    values = [10.0, 11.0, 12.0, 13.0, 14.0]
    summary = describe(values)
    assert (summary.n, summary.mean, summary.median, summary.min, summary.max) == (5, 12.0, 12.0, 10.0, 14.0)
    assert summary.stdev == pytest.approx(math.sqrt(2.5))  # sample stddev, n - 1
    half = scipy_stats.t.ppf(0.975, 4) * math.sqrt(2.5) / math.sqrt(5)
    assert summary.ci_low == pytest.approx(12.0 - half)
    assert summary.ci_high == pytest.approx(12.0 + half)
    assert summary.ci_low < summary.mean < summary.ci_high
    assert summary.cv == pytest.approx(math.sqrt(2.5) / 12.0)


def test_one_run_has_no_spread_and_no_interval() -> None:
    summary = describe([3.0])
    assert (summary.stdev, summary.ci_low, summary.ci_high, summary.cv) == (None, None, None, None)


def test_equal_runs_have_a_zero_width_interval() -> None:
    summary = describe([2.0, 2.0, 2.0])
    assert (summary.stdev, summary.ci_low, summary.ci_high) == (0.0, 2.0, 2.0)


def test_a_spread_throughput_interval_stays_above_zero() -> None:
    rates = [10.0, 1.0, 20.0]  # MB/s of three runs: Student's t on the rates reaches about -13 MB/s
    assert describe(rates).ci_low < 0
    summary = describe(rates, log_interval=True)
    geometric = scipy_stats.gmean(rates)
    assert summary.geometric_mean == pytest.approx(geometric)
    assert summary.ci_low is not None and summary.ci_high is not None
    assert 0 < summary.ci_low <= geometric <= summary.ci_high
    assert summary.mean == pytest.approx(31 / 3)  # the arithmetic mean is still there


def test_the_log_interval_is_students_t_on_the_logs_exponentiated() -> None:
    rates = [40.0, 42.0, 39.0, 44.0]
    logs = np.log(rates)
    half = scipy_stats.t.ppf(0.975, 3) * np.std(logs, ddof=1) / math.sqrt(4)
    summary = describe(rates, log_interval=True)
    expected = (math.exp(logs.mean() - half), math.exp(logs.mean() + half))
    assert (summary.ci_low, summary.ci_high) == pytest.approx(expected)
    assert describe([5.0, 5.0], log_interval=True).ci_low == pytest.approx(5.0)
    assert describe([5.0], log_interval=True).ci_low is None
    assert describe([5.0], log_interval=True).geometric_mean == pytest.approx(5.0)
    assert describe(rates).geometric_mean is None  # set only when the interval is of it


def test_a_spread_time_interval_is_of_the_mean_on_the_log_scale_and_stays_above_zero() -> None:
    times = [0.6, 1.0, 2.2]  # three spread runs: Student's t on the times reaches -0.80 s
    assert describe(times).ci_low < 0
    summary = describe(times, lognormal=True)
    logs, n = np.log(times), len(times)
    variance = float(np.var(logs, ddof=1))
    half = scipy_stats.t.ppf(0.975, n - 1) * math.sqrt(variance / n + variance**2 / (2 * (n - 1)))
    centre = logs.mean() + variance / 2  # the modified Cox interval (Olsson 2005)
    assert (summary.ci_low, summary.ci_high) == pytest.approx((math.exp(centre - half), math.exp(centre + half)))
    assert summary.ci_low is not None and summary.ci_high is not None
    assert 0 < summary.ci_low < summary.mean < summary.ci_high
    assert (summary.ci_low, summary.ci_high) == pytest.approx((0.2096, 8.810), abs=1e-3)  # as docs/harness.md says
    assert summary.mean == pytest.approx(3.8 / 3) and summary.geometric_mean is None  # of the mean, not the geometric


def test_a_quiet_cells_time_interval_is_students_to_the_displayed_digit() -> None:
    times = [0.799, 0.782, 0.815, 0.801, 0.795, 0.790, 0.808, 0.812, 0.786, 0.804]  # CV 1.4%, as the main job's
    student, log_scale = describe(times), describe(times, lognormal=True)
    assert (round(log_scale.ci_low, 3), round(log_scale.ci_high, 3)) == (round(student.ci_low, 3),
                                                                         round(student.ci_high, 3))
    assert describe([2.0, 2.0, 2.0], lognormal=True).ci_low == pytest.approx(2.0)
    assert describe([2.0], lognormal=True).ci_low is None
    with pytest.raises(ValueError, match="above 0"):
        describe([1.0, 0.0], lognormal=True)


def test_a_log_interval_needs_positive_values() -> None:
    with pytest.raises(ValueError, match="above 0"):
        describe([1.0, 0.0], log_interval=True)


def test_welch_from_summaries_is_welch_on_the_values() -> None:
    a, b = [1.0, 1.2, 0.9, 1.1], [1.5, 1.3, 1.9]
    expected = scipy_stats.ttest_ind(a, b, equal_var=False).pvalue
    assert welch_p(describe(a), describe(b)) == pytest.approx(expected)


def test_describe_refuses_no_values() -> None:
    with pytest.raises(ValueError):
        describe([])


def test_compare_gives_the_seeds_percent_change_and_the_ratio_of_geometric_means() -> None:
    futures = [10.0, 10.5, 9.5, 10.2, 9.8]
    asyncio = [8.0, 8.2, 7.8, 8.1, 7.9]
    result = compare(futures, asyncio)
    assert result.percent_change == pytest.approx((8.0 - 10.0) / 10.0 * 100)
    assert result.faster == "variant" and not result.paired
    assert result.ratio == pytest.approx(scipy_stats.gmean(asyncio) / scipy_stats.gmean(futures))
    assert result.speedup == pytest.approx(1 / result.ratio)
    welch_on_logs = scipy_stats.ttest_ind(np.log(asyncio), np.log(futures), equal_var=False)
    assert result.p_value == pytest.approx(welch_on_logs.pvalue)
    low, high = welch_on_logs.confidence_interval(0.95)
    assert result.ratio_ci == pytest.approx((math.exp(low), math.exp(high)))
    assert result.p_value_welch == pytest.approx(scipy_stats.ttest_ind(futures, asyncio, equal_var=False).pvalue)
    assert result.significant and result.verdict == "faster"


def test_paired_compare_is_the_paired_t_test_on_log_times_with_wilcoxon_beside_it() -> None:
    baseline = [10.0, 12.0, 9.0, 11.0, 10.5, 13.0]  # a drifting machine: rounds differ by 40%
    variant = [9.6, 11.4, 8.7, 10.5, 10.1, 12.4]  # and the variant about 4% faster in each
    result = compare(baseline, variant, paired=True)
    differences = np.log(variant) - np.log(baseline)
    assert result.paired and result.n == 6
    assert result.ratio == pytest.approx(math.exp(differences.mean()))
    assert result.p_value == pytest.approx(scipy_stats.ttest_rel(np.log(variant), np.log(baseline)).pvalue)
    assert result.p_value_wilcoxon == pytest.approx(scipy_stats.wilcoxon(differences).pvalue)
    assert result.p_value < 0.001 < result.p_value_welch, "pairing cancels the drift that hides the change"
    assert result.verdict == "faster"


def test_compare_says_when_the_baseline_is_faster() -> None:
    result = compare([1.0, 1.1, 0.9], [2.0, 2.1, 1.9])
    assert result.faster == "baseline" and result.verdict == "slower"
    assert result.ratio == pytest.approx(scipy_stats.gmean([2.0, 2.1, 1.9]) / scipy_stats.gmean([1.0, 1.1, 0.9]))
    assert result.percent_change == pytest.approx(100.0)


def test_a_significant_change_inside_the_band_is_no_difference() -> None:
    baseline = [10.0, 10.01, 9.99, 10.0, 10.02, 9.98]
    result = compare(baseline, [t * 1.005 for t in baseline], paired=True)
    assert result.significant and result.verdict == "no difference", "0.5% is within the ±2% band"
    assert compare(baseline, [t * 1.005 for t in baseline], band=0.001, paired=True).verdict == "slower"


def test_the_minimum_detectable_effect_has_the_power_it_claims() -> None:
    generator = np.random.default_rng(7)
    baseline = list(10 * (1 + 0.05 * generator.standard_normal(10)))
    variant = list(10 * (1 + 0.05 * generator.standard_normal(10)))
    result = compare(baseline, variant, paired=True)
    assert result.mde_percent is not None and 3 < result.mde_percent < 15
    assert result.runs_to_resolve is not None and result.runs_to_resolve > 10, "5% needs more than 10 runs here"
    spread = float(np.std(np.log(variant) - np.log(baseline), ddof=1))
    detected = 0
    for _ in range(2000):  # differences of that size, at that spread: detected in about 80% of runs
        noise = generator.normal(math.log1p(result.mde_percent / 100), spread, 10)
        detected += scipy_stats.ttest_1samp(noise, 0).pvalue < 0.05
    assert 0.75 < detected / 2000 < 0.85


def test_holm_adjusts_step_down_and_keeps_missing_tests() -> None:
    assert holm([0.01, 0.04, None, 0.03]) == pytest.approx([0.03, 0.06, None, 0.06])
    assert holm([0.5]) == [0.5] and holm([]) == []


def test_overlapping_samples_are_not_significant() -> None:
    result = compare([1.0, 1.2, 0.8, 1.1, 0.9], [1.05, 0.85, 1.15, 0.95, 1.0])
    assert result.p_value is not None and result.p_value > 0.5
    assert not result.significant


def test_one_run_per_side_has_no_test() -> None:
    result = compare([1.0], [2.0])
    assert result.p_value is None and result.ratio_ci is None and result.mde_percent is None
    assert not result.significant and result.verdict == "no difference"


def test_identical_constant_samples_are_not_significant() -> None:
    assert compare([1.0, 1.0], [1.0, 1.0]).p_value == 1.0
    assert compare([1.0, 1.0], [2.0, 2.0]).significant


def test_modified_z_scores_follow_iglewicz_and_hoaglin() -> None:
    values = [1.0, 2.0, 3.0, 4.0, 100.0]  # median 3, MAD 1
    assert modified_z_scores(values) == pytest.approx([0.6745 * d for d in (-2, -1, 0, 1, 97)])


def test_outliers_are_flagged_from_five_runs() -> None:
    assert describe([10.0, 10.1, 9.9, 10.0, 10.2, 30.0]).outliers == (5,)
    assert describe([10.0, 10.1, 30.0]).outliers == ()  # too few runs to judge
    assert describe([5.0, 5.0, 5.0, 5.0, 5.0]).outliers == ()
