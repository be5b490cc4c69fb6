"""The verdict rule on synthetic experiments, no network: how often it calls an A/A pair different, how
often it finds a true 5% difference, and Holm's correction over a family of manifests.

Each synthetic experiment is made as the harness makes a real one: rounds of the two variants back to
back, their order alternating (A B, B A, ...; harness/run/schedule.py), on a machine whose speed drifts
slowly (a linear trend of up to ±20% over the experiment) with lognormal noise of the given CV on
every run. Seeded: the figures are the same on every machine.
"""

from __future__ import annotations

import numpy as np
import pytest

from harness.analysis.stats import compare, holm, verdict

pytestmark = pytest.mark.slow

RUNS = 10


def _experiment(generator: np.random.Generator, cv: float, true_ratio: float,
                trend: float | None = None) -> tuple[list[float], list[float]]:
    """Baseline and variant times of RUNS interleaved rounds, the variant `true_ratio` times as slow, the
    machine `trend` (default: drawn from ±20%) slower at the end than at the start."""
    trend = generator.uniform(-0.2, 0.2) if trend is None else trend
    positions = np.arange(2 * RUNS)
    drift = 1 + trend * positions / (2 * RUNS)
    times = 10.0 * drift * np.exp(generator.normal(0, cv, 2 * RUNS))
    first, second = times[0::2], times[1::2]
    variant_first = np.arange(RUNS) % 2 == 1  # A B, B A, A B, ...
    baseline = np.where(variant_first, second, first)
    variant = np.where(variant_first, first, second) * true_ratio
    return list(baseline), list(variant)


def test_a_a_experiments_are_called_different_at_most_one_time_in_twenty() -> None:
    generator = np.random.default_rng(2026)
    called = 0
    for _ in range(1000):
        baseline, variant = _experiment(generator, generator.uniform(0.05, 0.20), 1.0)
        called += compare(baseline, variant, paired=True).verdict != "no difference"
    assert called <= 50, f"{called} of 1000 A/A experiments called different"


def test_a_true_five_percent_slowdown_at_cv_3_percent_is_found_four_times_in_five() -> None:
    generator = np.random.default_rng(17)
    found = sum(compare(*_experiment(generator, 0.03, 1.05), paired=True).verdict == "slower" for _ in range(1000))
    assert found >= 800, f"found {found} of 1000"


def test_holm_keeps_the_family_wise_false_alarms_at_most_alpha_over_ten_manifests() -> None:
    generator = np.random.default_rng(5)
    families_with_an_alarm = 0
    for _ in range(300):
        comparisons = [compare(*_experiment(generator, generator.uniform(0.05, 0.20), 1.0), paired=True)
                       for _ in range(10)]
        adjusted = holm([c.p_value for c in comparisons])
        families_with_an_alarm += any(
            verdict(c.ratio, p, c.alpha, c.band) != "no difference" for c, p in zip(comparisons, adjusted, strict=True))
    assert families_with_an_alarm <= 15, f"{families_with_an_alarm} of 300 families had a false alarm"


def test_without_pairing_the_drift_hides_what_pairing_finds() -> None:
    """Why the rounds are paired: a 4% slowdown on a machine 20% slower at the end, at CV 2%."""
    generator = np.random.default_rng(3)
    paired = unpaired = 0
    for _ in range(200):
        baseline, variant = _experiment(generator, 0.02, 1.04, trend=0.2)
        paired += compare(baseline, variant, paired=True).verdict == "slower"
        unpaired += compare(baseline, variant).verdict == "slower"
    assert paired > 2 * unpaired, (paired, unpaired)
