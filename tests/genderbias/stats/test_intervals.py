"""The bootstrap interval constructions of :mod:`genderbias.stats.intervals`, against hand-computed values.

The draws are the skewed set k², k = 1..20 (sorted; numpy's linear quantile: position p·19), the
point estimate 50: 7 of the 20 draws (1, 4, …, 49) lie below it.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from genderbias.stats import intervals

DRAWS = np.arange(1, 21, dtype=np.float64) ** 2
POINT = 50.0


def test_percentile_basic_and_normal_by_hand():
    # Percentile: positions 0.025·19 = 0.475 → 1 + 0.475·3 = 2.425; 0.975·19 = 18.525 → 361 + 0.525·39 = 381.475.
    assert intervals.bootstrap_interval(DRAWS, POINT, 0.95, "percentile") == pytest.approx((2.425, 381.475))
    # Basic: 2·50 − 381.475 and 2·50 − 2.425.
    assert intervals.bootstrap_interval(DRAWS, POINT, 0.95, "basic") == pytest.approx((-281.475, 97.575))
    sd = float(np.std(DRAWS, ddof=1))  # 127.9023…
    half = 1.959963984540054 * sd
    assert intervals.bootstrap_interval(DRAWS, POINT, 0.95, "normal") == pytest.approx((POINT - half, POINT + half))


def test_bias_corrected_percentile_by_hand():
    """BC (Efron 1987): z₀ = Φ⁻¹(7/20) = −0.385320; levels Φ(2z₀ ∓ 1.959964) = Φ(−2.730605) = 0.0031609
    and Φ(1.189323) = 0.8828437; positions 0.0600573 and 16.774031 of the sorted draws:
    1 + 0.0600573·(4 − 1) = 1.180172 and 289 + 0.774031·(324 − 289) = 316.091071 (scipy.stats.norm
    gives the same levels). The draws below the point are fewer than half: the bootstrap says the
    estimator runs high, and the interval moves down from the percentile one."""
    low, high = intervals.bootstrap_interval(DRAWS, POINT, 0.95, "bc")
    assert (low, high) == pytest.approx((1.180172, 316.091071), abs=1e-5)
    assert high < intervals.bootstrap_interval(DRAWS, POINT, 0.95, "percentile")[1]


def test_bca_with_a_given_acceleration_and_the_jackknife_acceleration_by_hand():
    """BCa with a = 0.1: levels Φ(z₀ + (z₀ + z)/(1 − a(z₀ + z))), z = ∓1.959964: 0.0111546 and 0.9310443,
    positions 0.2119376 and 17.689841: 1 + 0.2119376·3 = 1.635813, 324 + 0.689841·37 = 349.524116."""
    low, high = intervals.bootstrap_interval(DRAWS, POINT, 0.95, "bca", accel=0.1)
    assert (low, high) == pytest.approx((1.635813, 349.524116), abs=1e-5)
    # a = 0 is BC.
    assert intervals.bootstrap_interval(DRAWS, POINT, 0.95, "bca", accel=0.0) == pytest.approx(
        intervals.bootstrap_interval(DRAWS, POINT, 0.95, "bc")
    )
    # Jackknife values 1, 2, 4, 9: mean 4, d = 3, 2, 0, −5; Σd³ = 27 + 8 − 125 = −90, Σd² = 38;
    # a = −90 / (6 · 38^1.5) = −0.0640348.
    assert intervals.acceleration(np.array([1.0, 2.0, 4.0, 9.0])) == pytest.approx(-0.0640348, abs=1e-7)
    assert intervals.acceleration(np.array([[3.0, 1.0], [3.0, 2.0]])) == pytest.approx([0.0, 0.0])


def test_columns_nan_draws_and_bad_input():
    draws = np.column_stack([DRAWS, DRAWS[::-1], np.full(20, np.nan)])
    draws[0, 1] = np.nan  # one draw left out of the second column: 19 draws
    low, high = intervals.bootstrap_interval(draws, [POINT, POINT, 1.0], 0.95, "bc", min_usable=0.9)
    assert low[0] == pytest.approx(1.180172, abs=1e-5) and high[0] == pytest.approx(316.091071, abs=1e-5)
    assert not math.isnan(low[1]) and math.isnan(low[2]) and math.isnan(high[2])
    with pytest.raises(ValueError, match="interval construction 'studentised'"):
        intervals.bootstrap_interval(DRAWS, POINT, 0.95, "studentised")
    with pytest.raises(ValueError, match="acceleration"):
        intervals.bootstrap_interval(DRAWS, POINT, 0.95, "bca")


def test_all_draws_on_one_side_keep_a_finite_bc_interval():
    """z₀ from a share kept within half a draw of 0 and 1: all 20 draws above the point → share 1/40."""
    low, high = intervals.bootstrap_interval(DRAWS, 0.0, 0.95, "bc")
    assert np.isfinite([low, high]).all() and 1.0 <= low <= high <= 400.0


def test_jackknife_weights_leave_out_one_block_each():
    w = intervals.jackknife_weights(7, blocks=3)
    assert w.tolist() == [
        [0, 1, 1, 0, 1, 1, 0],
        [1, 0, 1, 1, 0, 1, 1],
        [1, 1, 0, 1, 1, 0, 1],
    ]
    assert intervals.jackknife_weights(2, blocks=20).shape == (2, 2)


@pytest.mark.parametrize("construction", intervals.CONSTRUCTIONS)
def test_the_p_value_inverts_each_interval(construction):
    """p ≤ α exactly when the (1 − α) interval excludes 0, up to the draws' resolution (B = 4,000: a
    share moves by 1/4,001, so α within 0.004 of p is not judged). Skewed draws (shifted gamma) placed
    so that 0 sits in either tail, around and between the estimate and the draws' centre."""
    rng = np.random.default_rng(7)
    base = rng.gamma(2.0, 1.0, 4000)
    for shift, point in ((-0.3, 1.2), (-1.5, 0.6), (-2.2, 0.2), (-3.4, -0.3), (-5.0, -1.0)):
        draws = base + shift
        accel = 0.05 if construction == "bca" else None
        extra = 0.4 if intervals.needs_workers(construction) else None
        p = intervals.bootstrap_p(draws, point, construction, accel, extra=extra)[0]
        assert 0 < p <= 1
        for alpha in np.linspace(0.01, 0.6, 60):
            if abs(alpha - p) < 0.004:
                continue
            low, high = intervals.bootstrap_interval(draws, point, 1 - alpha, construction, accel, extra=extra)
            assert (low > 0 or high < 0) == (p < alpha), (shift, point, alpha, p, low, high)


def test_percentile_p_by_hand():
    """Draws −1, 1, 2, 3 (B = 4): one ≤ 0, three ≥ 0: p = 2·(1 + 1)/5 = 0.8."""
    assert intervals.bootstrap_p(np.array([-1.0, 1.0, 2.0, 3.0]), 1.5, "percentile")[0] == pytest.approx(0.8)


def test_worker_jackknife_variance_and_the_widened_intervals_by_hand():
    """Owen's crossed construction from its parts.

    Jackknife over 4 groups of workers, values 1, 2, 4, 9: mean 4, squares 9 + 4 + 0 + 25 = 38,
    V_workers = 3/4 · 38 = 28.5; over answers 2, 3, 3, 4: squares 1 + 0 + 0 + 1 = 2, V_answers = 1.5;
    net 27. The draws k², k = 1..20, have variance v = 16,359 (ddof 1); adding 3v doubles their
    spread (c = √(4v/v) = 2) about their median (100 + 121)/2 = 110.5: the percentile interval
    (2.425, 381.475) becomes (110.5 + 2·(2.425 − 110.5), 110.5 + 2·(381.475 − 110.5)) = (−105.65, 652.45);
    the normal one is the estimate ± 1.96·2·sd.
    """
    assert intervals.jackknife_variance(np.array([1.0, 2.0, 4.0, 9.0])) == pytest.approx(28.5)
    # Per column, NaN rows left out: G = 4 for the first; 2, 3, 3, 4, 7 (mean 3.8, squares 14.8) for the second.
    columns = np.array([[1.0, 2.0], [2.0, 3.0], [4.0, 3.0], [9.0, 4.0], [np.nan, 7.0]])
    assert intervals.jackknife_variance(columns) == pytest.approx([28.5, 4 / 5 * 14.8])
    values = {"workers": np.array([1.0, 2.0, 4.0, 9.0]), "answers": np.array([2.0, 3.0, 3.0, 4.0])}
    assert intervals.extra_variance("crossed", values.__getitem__) == pytest.approx([28.5])
    assert intervals.extra_variance("crossed_net", values.__getitem__) == pytest.approx([27.0])
    # The answers' jackknife varying more than the workers' adds nothing: never narrower than the bootstrap's.
    swapped = {"workers": values["answers"], "answers": values["workers"]}
    assert intervals.extra_variance("crossed_net_normal", swapped.__getitem__) == pytest.approx([0.0])
    with pytest.raises(ValueError, match="adds no variance"):
        intervals.extra_variance("percentile", values.__getitem__)

    v = float(np.var(DRAWS, ddof=1))
    assert v == pytest.approx(16359.0)
    assert intervals.widening(DRAWS, 3 * v) == pytest.approx([2.0])
    # 1..5: v = 2.5, median 3; extra 7.5 → c = 2.
    assert intervals.widen(np.array([1.0, 2.0, 3.0, 4.0, 5.0]), 7.5).tolist() == pytest.approx([-1, 1, 3, 5, 7])
    assert intervals.bootstrap_interval(DRAWS, POINT, 0.95, "crossed", extra=3 * v) == pytest.approx((-105.65, 652.45))
    half = 1.959963984540054 * 2 * float(np.std(DRAWS, ddof=1))
    assert intervals.bootstrap_interval(DRAWS, POINT, 0.95, "crossed_normal", extra=3 * v) == pytest.approx(
        (POINT - half, POINT + half)
    )
    # No added variance (or none known: NaN) is the bootstrap's own interval.
    for extra in (0.0, np.nan):
        assert intervals.bootstrap_interval(DRAWS, POINT, 0.95, "crossed", extra=extra) == pytest.approx(
            (2.425, 381.475)
        )
    with pytest.raises(ValueError, match="workers' variance"):
        intervals.bootstrap_interval(DRAWS, POINT, 0.95, "crossed_net")


def test_unit_groups_deal_the_largest_units_first():
    """Sizes 5, 1, 9, 3, 7 in 2 groups: in decreasing size 9 (unit 2), 7 (4), 5 (0), 3 (3), 1 (1) dealt
    0, 1, 0, 1, 0; more groups than units: one unit a group."""
    assert intervals.unit_groups(np.array([5, 1, 9, 3, 7]), 2).tolist() == [0, 0, 0, 1, 1]
    assert sorted(intervals.unit_groups(np.array([5, 1, 9]), 20).tolist()) == [0, 1, 2]


def test_the_widened_interval_contains_the_percentile_one():
    """For any draws, estimate and added variance ≥ 0, the crossed interval holds the percentile
    interval (it widens about the draws' median, which lies inside it; about the estimate, one that
    lies outside the interval would move it, not widen it), and more added variance never narrows it."""
    rng = np.random.default_rng(11)
    for _ in range(200):
        draws = rng.gamma(rng.uniform(0.5, 5), 1.0, 200) + rng.normal()
        point = float(np.quantile(draws, rng.uniform(0.01, 0.99)))
        extra = float(rng.exponential(np.var(draws)))
        low, high = intervals.bootstrap_interval(draws, point, 0.95, "percentile")
        wide_low, wide_high = intervals.bootstrap_interval(draws, point, 0.95, "crossed", extra=extra)
        wider_low, wider_high = intervals.bootstrap_interval(draws, point, 0.95, "crossed", extra=2 * extra)
        assert wider_low <= wide_low <= low + 1e-12 and high - 1e-12 <= wide_high <= wider_high


def test_an_interval_extended_by_a_bias_reaches_to_the_side_where_the_truth_lies():
    """[2, 5] and [−1, 1] with biases +0.5 (the estimate too high: the truth may lie lower) and −0.25
    (too low): [1.5, 5] and [−1, 1.25]; a NaN bias and None change nothing."""
    low, high = np.array([2.0, -1.0, 0.0]), np.array([5.0, 1.0, 3.0])
    moved = intervals.extended(low, high, np.array([0.5, -0.25, np.nan]))
    assert moved[0] == pytest.approx([1.5, -1.0, 0.0])
    assert moved[1] == pytest.approx([5.0, 1.25, 3.0])
    same = intervals.extended(low, high, None)
    assert same[0] is low and same[1] is high


def test_the_label_rule_takes_its_construction_by_the_check():
    """``checked`` takes the refitted bootstrap's normal interval where the crowd model is trusted and the
    crossed one where it is not; a construction's own name (the rules before it) takes that construction either
    way; anything else is an error naming what is known."""
    assert intervals.RULES[intervals.LABEL_INTERVAL] == ("normal", "crossed")
    assert intervals.construction_for("checked", trusted=True) == "normal"
    assert intervals.construction_for("checked", trusted=False) == "crossed"
    for construction in intervals.CONSTRUCTIONS:
        assert intervals.construction_for(construction, trusted=True) == construction
        assert intervals.construction_for(construction, trusted=False) == construction
    with pytest.raises(ValueError, match=r"'studentised'.*checked.*percentile"):
        intervals.construction_for("studentised", trusted=True)
    assert (
        "normal bootstrap interval" in intervals.describe()
        and intervals.DESCRIPTIONS["crossed"] in intervals.describe()
    )
