"""The study plan's computation (metrics.power): the normal formula by hand, the simulated sample size
held to its promise by fresh simulated studies, the minimum detectable difference as the power's
inverse, the non-gendered share's interval and the pooled count."""

import math

import numpy as np
import pytest
from scipy import stats

from metrics import power

# Standard normal quantiles, from tables: z_0.975 and z_0.8.
Z975, Z80 = 1.959964, 0.841621


def test_the_normal_formula_on_a_hand_computed_example():
    # σ = 0.05, Δ = 0.01, α = 0.05, power 0.8: ((1.959964 + 0.841621) · 0.05 / 0.01)² = 14.007925² = 196.22 → 197.
    assert power.normal_quantiles(0.05, 0.8) == (pytest.approx(Z975, abs=1e-6), pytest.approx(Z80, abs=1e-6))
    assert power.normal_sample_size(0.01, 0.05) == 197
    assert power.normal_sample_size(-0.01, 0.05) == 197  # the direction does not matter to a two-sided test
    # The minimum detectable difference at that n: 2.801585 · 0.05 / √197 = 0.0099802.
    assert power.normal_mdd(0.05, 197) == pytest.approx(2.801585 * 0.05 / math.sqrt(197), rel=1e-6)
    assert power.normal_mdd(0.05, 197) == pytest.approx(0.0099802, abs=1e-7)
    # The power there: Φ(√197 · 0.2 − 1.959964) = Φ(0.847165) = 0.80155 (the other tail: Φ(−4.767) ≈ 1e-6).
    assert power.normal_power(0.01, 0.05, 197) == pytest.approx(0.80155, abs=2e-5)
    # Rounded up: (2.801585 · 2.5)² = 49.06 → 50.
    assert power.normal_sample_size(0.02, 0.05) == 50


def _known_differences(rng, size):
    """Per-query differences A − B from a known, skewed law: Gamma(2, 0.03) − 0.06 (mean 0, σ = 0.0424,
    skewness 1.41), as bias differences are: most queries move little, a few move much."""
    return rng.gamma(2.0, 0.03, size=size) - 0.06


def test_at_the_planned_size_the_paired_test_has_the_requested_power():
    """The promise, by fresh simulated studies independent of the planner's own draws: another
    generator, another pilot-free law (the known one), and scipy's ttest_rel on (A, B) pairs.

    Monte-Carlo error: 4,000 fresh studies give the rejection rate's s.e. √(0.8·0.2/4000) = 0.0063;
    the planner's own power at its n has s.e. 0.009 (2,000 draws) and rounds up to a whole n; its
    pilot (3,000 queries of the law) estimates σ within about 1.3%. The tolerance, 0.04, is over
    2.5 times the combined error (≈ 0.015).
    """
    pilot = _known_differences(np.random.default_rng(7), 3000)
    delta, target = 0.012, 0.8
    plan = power.sample_size(pilot, delta, alpha=0.05, power=target, draws=2000, seed=1)
    assert plan.n is not None and plan.power >= target
    assert plan.steps[0][0] == plan.normal_n  # the search started at the normal formula
    # docs/metrics.md's worked example: the normal formula says 100, the simulation 95 (power 0.812).
    assert (plan.normal_n, plan.n, plan.power) == (100, 95, 0.812)

    fresh = np.random.default_rng(20260101)
    studies = 4000
    baseline = fresh.uniform(-0.2, 0.2, size=(studies, plan.n))  # B's values: any law, the test pairs them
    run_a = baseline + _known_differences(fresh, (studies, plan.n)) + delta
    rejected = stats.ttest_rel(run_a, baseline, axis=1).pvalue < 0.05
    assert abs(rejected.mean() - target) <= 0.04, (plan.n, rejected.mean())  # 0.807 (docs/metrics.md)
    # A tenth fewer queries than planned fall short: the plan is not wastefully large.
    smaller = stats.ttest_rel(run_a[:, : plan.n * 9 // 10], baseline[:, : plan.n * 9 // 10], axis=1).pvalue < 0.05
    assert smaller.mean() < target


def test_the_search_finds_the_smallest_size_its_simulation_accepts():
    pilot = _known_differences(np.random.default_rng(3), 500)
    plan = power.sample_size(pilot, 0.01, draws=1000, seed=5)
    tried = dict(plan.steps)
    assert tried[plan.n] >= 0.8
    assert tried[plan.n - 1] < 0.8  # bisection ends on adjacent sizes
    # Each size's power is its own seeded simulation: asking again gives the same figure.
    assert power.simulated_power(pilot, 0.01, plan.n, draws=1000, seed=5) == tried[plan.n]


def test_the_minimum_detectable_difference_inverts_the_power():
    pilot = _known_differences(np.random.default_rng(11), 200)
    n = len(pilot)
    mdd = power.minimum_detectable_difference(pilot, n, draws=2000, seed=2)
    assert power.simulated_power(pilot, mdd, n, draws=2000, seed=2) >= 0.8
    assert power.simulated_power(pilot, mdd * 0.99, n, draws=2000, seed=2) < 0.8
    # Near the normal formula's (the law is skewed, so not equal): within 10%.
    assert mdd == pytest.approx(power.normal_mdd(np.std(pilot, ddof=1), n), rel=0.1)


def test_wilson_interval_by_hand():
    # 8 of 10: centre (0.8 + 1.920729/10) / 1.384146 = 0.716740, half-width
    # 1.959964 · √(0.016 + 0.0096036) / 1.384146 = 0.226577.
    low, high = power.wilson_interval(8, 10)
    assert low == pytest.approx(0.490163, abs=1e-5)
    assert high == pytest.approx(0.943317, abs=1e-5)
    # The SIGIR 2020 default: 1,765 of 3,750.
    low, high = power.wilson_interval(*power.SIGIR2020_NON_GENDERED)
    assert (low, high) == (pytest.approx(0.454729, abs=1e-5), pytest.approx(0.486665, abs=1e-5))


def test_pooled_queries_to_annotate_by_hand():
    assert power.pooled_to_annotate(100, 0.4) == 250  # exact: no rounding up of 250.000…
    assert power.pooled_to_annotate(197, 1765 / 3750) == 419  # 197 / 0.470667 = 418.55
    with pytest.raises(ValueError):
        power.pooled_to_annotate(10, 0.0)


@pytest.mark.parametrize(
    ("differences", "message"),
    [([0.1], "at least 2"), ([0.1, 0.1, 0.1], "do not vary")],
)
def test_a_pilot_that_cannot_be_resampled_is_refused(differences, message):
    with pytest.raises(ValueError, match=message):
        power.sample_size(differences, 0.01)


def test_a_difference_out_of_reach_is_said_so_without_simulating_a_huge_study():
    pilot = _known_differences(np.random.default_rng(3), 100)
    assert power.normal_sample_size(1e-300, 0.05) == 10**18  # no float overflow
    plan = power.sample_size(pilot, 1e-300)
    assert (plan.n, plan.power, plan.steps) == (None, None, ())
    # Reachable only past the largest simulated size (the normal n is within 4 × max_n): simulated, not reached.
    plan = power.sample_size(pilot, 0.002, draws=200, max_n=2000)  # normal n: 4,312
    assert plan.n is None and plan.steps == ((2000, plan.steps[0][1]),) and plan.steps[0][1] < 0.8
