"""genderbias.machine.routing_statistics's guarantee: the betting test against a plain scalar re-implementation, the
worked example of docs/prelabelling.md, and simulations that show the risk is held.

The simulations draw a known-truth population (confidence that tracks correctness imperfectly,
accuracies near the target, a noisy three-vote crowd whose majority is the "truth" the guarantee
is stated against) and redraw the blind sample R times. The violation rate v̂ over R
independent redraws has Monte-Carlo standard error √(δ(1 − δ)/R) under v = δ, 0.0069 for δ = 0.05
and R = 1,000; the tests allow δ + 3 s.e. (a true rate at δ passes with probability ≈ 0.999).

genderbias.machine.routing_statistics: threshold choice on the calibration sample, and the split of a batch.

Intervals are checked against statsmodels; the rest is worked out by hand in comments.
"""

from __future__ import annotations

import math
from decimal import Decimal

import numpy as np
import pytest
from statsmodels.stats.proportion import proportion_confint

from genderbias.machine.calibration_sample import random_sample
from genderbias.machine.certification import (
    DEFAULT_RISK,
    candidate_thresholds,
    certify_threshold,
    null_errors,
    perfect_record,
)
from genderbias.machine.routing_audit import _certify_many, audit, oracle_threshold
from genderbias.machine.routing_statistics import (
    RoutingSplit,
    accuracy_at,
    choose_threshold,
    split_by_threshold,
    tied,
)
from genderbias.stats.intervals import wilson_interval

REDRAWS = 1000
MC_SE = math.sqrt(DEFAULT_RISK * (1 - DEFAULT_RISK) / REDRAWS)  # 0.0069
ALLOWED = DEFAULT_RISK + 3 * MC_SE  # 0.0707


def certified_thresholds(confidence, correct, samples, *, target: float, planned: int | None = None) -> np.ndarray:
    """The threshold :func:`certify_threshold` chooses on each sample (NaN: none), vectorised over the redraws."""
    c, ok = tied(confidence), np.asarray(correct, dtype=bool)
    planned = planned or len(samples[0])
    thresholds = candidate_thresholds(c, planned, target=target, risk=DEFAULT_RISK)
    sizes = (c[None, :] >= thresholds[:, None]).sum(axis=1).astype(float)
    last, _, _ = _certify_many(c, ok, samples, thresholds, sizes, target, DEFAULT_RISK, planned, 50, None)
    return np.where(last >= 0, thresholds[np.maximum(last, 0)], np.nan)


def _reference_capital(errors: list[int], size: int, target: float) -> float:
    """sup_i M_i of the module docstring, one item at a time in plain Python (no numpy)."""
    k = math.floor((1 - target) * size + 1e-9) + 1
    capital, best, seen = 1.0, 1.0, 0
    for i, x in enumerate(errors):
        eps = (k - seen) / (size - i)
        if eps >= 1:
            capital = math.inf if x == 0 else capital
        elif eps > 0:
            p_hat = (seen + 10 * (1 - target) / 2) / (i + 10)
            lam = min(max((eps - p_hat) / (eps * (1 - eps)), 0.0), 0.9 / (1 - eps))
            capital *= 1 + lam * (eps - x)
        best = max(best, capital)
        seen += x
    return best


# --- the worked example (docs/prelabelling.md, "Routing: a worked example") --------------------


def _worked_example():
    """1,000 routable queries: 600 at confidence 0.9, 400 at 0.7. The blind sample of 200 in draw order
    repeats 0.9, 0.9, 0.9, 0.7, 0.7; the machine is wrong on the 40th and 80th of its 120 items at 0.9
    and on every 8th of its 80 items at 0.7 (10)."""
    confidence, correct, at9, at7 = [], [], 0, 0
    for _ in range(40):
        for c in (0.9, 0.9, 0.9, 0.7, 0.7):
            confidence.append(c)
            if c == 0.9:
                at9 += 1
                correct.append(at9 not in (40, 80))
            else:
                at7 += 1
                correct.append(at7 % 8 != 0)
    return confidence, correct, [0.9] * 600 + [0.7] * 400


def _reference_exact_p(errors: int, size: int, target: float, items: int) -> float:
    """P(E ≤ errors) for E hypergeometric: ``items`` drawn from ``size`` of which k_t are errors (math.comb)."""
    k = math.floor((1 - target) * size + 1e-9) + 1
    return sum(math.comb(k, e) * math.comb(size - k, items - e) for e in range(errors + 1)) / math.comb(size, items)


def test_the_worked_example_at_0_9():
    confidence, correct, population = _worked_example()
    result = certify_threshold(confidence, correct, population, target=0.9, risk=0.05)
    # Candidates 0.9 (600 queries, 120 sample items, 2 wrong) and 0.7 (all 1,000; 200 items, 12 wrong).
    first, second = result.candidates
    assert (first["population"], first["sample_accepted"], first["sample_errors"]) == (600, 120, 2)
    assert (second["population"], second["sample_accepted"], second["sample_errors"]) == (1000, 200, 12)
    # The exact test of the first draw at δ₁ = 0.8·0.05 = 0.04: hypergeometric p-values.
    assert first["exact_p"] == pytest.approx(_reference_exact_p(2, 600, 0.9, 120), rel=1e-9)
    assert second["exact_p"] == pytest.approx(_reference_exact_p(12, 1000, 0.9, 200), rel=1e-9)
    assert f"{first['exact_p']:.1e}" == "8.9e-05" and round(second["exact_p"], 4) == 0.0178  # the docs' numbers
    # The betting test at δ − δ₁ = 0.01 (passes at capital 100).
    errors9 = [0 if ok else 1 for c, ok in zip(confidence, correct, strict=True) if c == 0.9]
    errors_all = [0 if ok else 1 for ok in correct]
    assert first["capital"] == pytest.approx(_reference_capital(errors9, 600, 0.9), rel=1e-9)
    assert second["capital"] == pytest.approx(_reference_capital(errors_all, 1000, 0.9), rel=1e-9)
    assert round(first["capital"]) == 1174 and round(second["capital"], 2) == 4.41  # the docs' numbers
    # The docs' first step: ε₁ = 61/600, p̂ = 0.05, λ₁ = (ε₁ − 0.05)/(ε₁(1 − ε₁)) = 0.566, M₁ = 1.0575.
    eps = 61 / 600
    lam = (eps - 0.05) / (eps * (1 - eps))
    assert round(lam, 3) == 0.566 and _reference_capital([0], 600, 0.9) == pytest.approx(1 + lam * eps)
    assert round(1 + lam * eps, 4) == 1.0575
    # 0.9 passes both ways; 0.7 passes on the exact test (0.0178 ≤ 0.04) though its capital 4.41 < 100:
    # 0.7 is chosen, all 1,000 queries kept.
    assert [c["passed"] for c in result.candidates] == [True, True]
    assert (result.threshold, result.accepted_population) == (0.7, 1000)
    assert result.observed_accuracy == pytest.approx(188 / 200)


def test_the_worked_example_at_0_95_and_0_96_says_how_many_more():
    confidence, correct, population = _worked_example()
    result = certify_threshold(confidence, correct, population, target=0.95, risk=0.05)
    first, second = result.candidates
    assert round(first["exact_p"], 3) == 0.034 == round(_reference_exact_p(2, 600, 0.95, 120), 3)
    assert round(first["capital"], 2) == 5.63 and first["passed"]  # on the exact test alone
    assert round(second["exact_p"], 3) == 0.799 and round(second["capital"], 2) == 2.07 and not second["passed"]
    assert (result.threshold, result.accepted_population) == (0.9, 600)

    result = certify_threshold(confidence, correct, population, target=0.96, risk=0.05)
    assert result.threshold is None and result.accepted_population == 0
    first = result.candidates[0]
    assert round(first["exact_p"], 3) == 0.093 and round(first["capital"], 2) == 4.01 and not first["passed"]
    assert result.candidates[1]["tested"] is False  # the sequence stopped at the first failure
    assert result.first_failure["threshold"] == 0.9
    # Only the betting test (at 0.01) can use more items: at the observed 118/120 the 0.9 set needs 178
    # more; new draws fall in it at 480/800.
    assert result.more_needed == 297 == math.ceil(178 / (480 / 800))
    errors9 = [0 if ok else 1 for c, ok in zip(confidence, correct, strict=True) if c == 0.9]
    future = [math.floor(j * 2 / 120) - math.floor((j - 1) * 2 / 120) for j in range(1, 179)]
    assert _reference_capital(errors9 + future, 600, 0.96) >= 100 > _reference_capital(errors9 + future[:-1], 600, 0.96)


def test_nothing_is_certified_while_sample_items_are_pending():
    confidence, correct, population = _worked_example()
    result = certify_threshold(confidence, correct, population, target=0.9, risk=0.05, pending=3)
    assert result.threshold is None and result.more_needed is None
    assert result.more_reason.startswith("3 sample queries still pending")
    assert [c["passed"] for c in result.candidates] == [True, True]  # the tests are still shown


def test_the_betting_capital_equals_the_scalar_definition_on_random_sequences():
    rng = np.random.default_rng(7)
    for _ in range(30):
        size = int(rng.integers(50, 400))
        n = int(rng.integers(5, min(size, 150)))
        target = float(rng.choice([0.8, 0.9, 0.95]))
        errors = (rng.random(n) < rng.uniform(0, 0.2)).astype(int).tolist()
        population = [0.5] * size
        result = certify_threshold([0.5] * n, [x == 0 for x in errors], population, target=target, risk=0.05)
        assert result.candidates[0]["capital"] == pytest.approx(_reference_capital(errors, size, target), rel=1e-9)


def test_a_fully_sampled_set_is_decided_exactly():
    # The whole set of 20 in the sample, all right: "accuracy < 1" is refuted for certain (ε reaches 1).
    result = certify_threshold([0.9] * 20, [True] * 20, [0.9] * 20, target=1.0, risk=0.05, planned=2000)
    assert result.threshold == 0.9
    wrong = certify_threshold([0.9] * 20, [True] * 19 + [False], [0.9] * 20, target=1.0, risk=0.05, planned=2000)
    assert wrong.threshold is None


def test_the_candidates_depend_on_the_population_only_and_start_where_a_set_can_pass():
    population = np.linspace(0.5, 1.0, 1000)
    perfect = perfect_record(0.9, 0.05)
    # 31 right items pass the exact test at 0.04 (0.9^31 = 0.038; the betting test at 0.01 needs more).
    assert perfect == 31 == math.ceil(math.log(0.04) / math.log(0.9))
    thresholds = candidate_thresholds(population, 200, target=0.9, risk=0.05, max_candidates=20)
    assert list(thresholds) == sorted(thresholds, reverse=True) and thresholds[-1] == 0.5
    sizes = (population[None, :] >= thresholds[:, None]).sum(axis=1)
    assert 200 * sizes[0] / 1000 >= 1.5 * perfect  # the first: expected ≥ 1.5 × 31 sample items
    assert 200 * (sizes[0] - 50) / 1000 < 1.5 * perfect  # the grid step above it would hold fewer
    assert list(null_errors(np.array([100, 600, 1000]), 0.9)) == [11, 61, 101]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"target": 0.0}, r"target must be in \(0, 1\]"),
        ({"risk": 0.0}, "risk must be between 0 and 1"),
        ({"risk": 1.0}, "risk must be between 0 and 1"),
        ({"population_confidence": [0.5]}, "include the sample"),
        ({"sample_confidence": [], "sample_correct": []}, "no sample items"),
    ],
)
def test_certify_rejects_bad_input(kwargs, message):
    arguments = {
        "sample_confidence": [0.5, 0.6],
        "sample_correct": [True, False],
        "population_confidence": [0.5, 0.6, 0.7],
        "target": 0.9,
        **kwargs,
    }
    with pytest.raises(ValueError, match=message):
        certify_threshold(**arguments)


# --- simulations ------------------------------------------------------------------------------------


def _population(seed: int, size: int = 2000):
    """A known-truth batch: machine confidence c ~ Beta(5, 1); the machine is right about the true label
    with probability clip(c + 0.06 + N(0, 0.05)) (confidence tracks correctness imperfectly); three crowd
    votes, each right with probability 0.9 (else one of the three other labels at random), and the
    crowd-majority label (the first vote when all three differ) is what the guarantee is judged against.
    Returns confidences and whether the machine agrees with the crowd majority."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 4, size)
    confidence = rng.beta(5, 1, size)
    right = rng.random(size) < np.clip(confidence + 0.06 + rng.normal(0, 0.05, size), 0, 1)
    machine = np.where(right, truth, (truth + rng.integers(1, 4, size)) % 4)
    votes = np.where(rng.random((3, size)) < 0.9, truth, (truth + rng.integers(1, 4, (3, size))) % 4)
    majority = np.where(votes[1] == votes[2], votes[1], votes[0])
    return confidence, machine == majority


@pytest.mark.slow
@pytest.mark.parametrize(("target", "size"), [(0.9, 200), (0.93, 600)])
def test_the_guarantee_holds_over_a_thousand_redraws(target, size):
    confidence, correct = _population(1)
    _, kept = oracle_threshold(confidence, correct, target)
    assert 0.2 < kept / len(confidence) < 0.9  # the target sits inside the batch's accuracy profile
    rng = np.random.default_rng(2)
    samples = [rng.choice(len(confidence), size, replace=False) for _ in range(REDRAWS)]
    result = audit(confidence, correct, samples, target=target, risk=DEFAULT_RISK)
    assert result.redraws == REDRAWS
    assert result.violation_rate <= ALLOWED
    # (result.violation_rate_unsampled, the same for the accepted queries outside the sample, is printed
    # only: the guarantee is about the accepted set as a whole, which the sample's crowd labels are part of.)
    assert result.certified_rate > 0.2  # useful as well as valid: it does keep labels
    assert 0 < result.kept_share <= result.oracle_kept_share == kept / len(confidence)
    # The point-estimate rule on the same redraws falls short far more often than δ: the simulation
    # can see a violation when there is one.
    estimate_violations = 0
    for sample in samples:
        choice = choose_threshold(confidence[sample], correct[sample], target=target)
        if choice.threshold is not None:
            accepted = confidence >= choice.threshold
            estimate_violations += correct[accepted].mean() < target
    assert estimate_violations / REDRAWS > DEFAULT_RISK + 3 * MC_SE
    print(
        f"target {target}: violation {result.violation_rate:.3f} (point estimate {estimate_violations / REDRAWS:.3f}), "
        f"kept {result.kept_share:.3f} of the oracle's {result.oracle_kept_share:.3f}; outside the sample "
        f"{result.violation_rate_unsampled:.3f} (empirical)"
    )


@pytest.mark.slow
def test_extending_the_sample_when_nothing_is_certified_keeps_the_guarantee():
    """A researcher draws 100, extends by 100 when nothing is certified, and once more: three looks at
    a data-dependent moment. The union is a prefix of one random permutation, so the test stays valid."""
    target = 0.9
    confidence, correct = _population(3)
    orders = _production_draws(len(confidence), REDRAWS, (100, 100, 100))
    chosen = np.full(REDRAWS, np.nan)
    for size in (100, 200, 300):
        undecided = np.flatnonzero(np.isnan(chosen))
        found = certified_thresholds(confidence, correct, orders[undecided, :size], target=target, planned=100)
        chosen[undecided] = found
    certified = ~np.isnan(chosen)
    accuracy = np.array([correct[confidence >= t].mean() for t in chosen[certified]])
    violation = np.sum(accuracy < target) / REDRAWS
    assert violation <= ALLOWED
    assert certified.mean() > 0.3
    # Extending helped: more redraws certified than at the first look alone.
    first = certified_thresholds(confidence, correct, orders[:, :100], target=target)
    assert certified.mean() > (~np.isnan(first)).mean()


def _production_draws(size: int, redraws: int, looks: tuple[int, ...]) -> np.ndarray:
    """Per redraw r, the sample as the service draws it (``calibrate --seed r``, then each
    ``calibrate --extend`` by ``looks[1:]``: random_sample with the first draw's seed, the sample so
    far excluded), as indices into the population in draw order."""
    qids = [f"q{i:05d}" for i in range(size)]
    orders = []
    for r in range(redraws):
        drawn: list[str] = []
        for n in looks:
            drawn += random_sample(qids, n, seed=r, exclude=drawn)
        orders.append([int(q[1:]) for q in drawn])
    return np.array(orders)


@pytest.mark.slow
def test_the_least_favourable_population_is_certified_at_most_delta_of_the_time():
    """Every candidate's accepted set is just below the target (errors ⌈0.101·i⌉ among the i most
    confident), so any certification is a violation: the hybrid test must certify in at most δ of the
    redraws, at the first look and with two data-dependent extensions of 100 through the service's
    sampling. 1,000 redraws: Monte-Carlo s.e. 0.0069 at δ (measured: 0.017 and 0.017)."""
    size, target = 1000, 0.9
    i = np.arange(1, size + 1)
    wrong = (np.ceil(0.101 * i) - np.ceil(0.101 * (i - 1))).astype(bool)
    confidence, correct = np.linspace(1, 0.5, size), ~wrong
    assert oracle_threshold(confidence, correct, target) == (None, 0)  # no threshold set meets the target
    orders = _production_draws(size, REDRAWS, (200, 100, 100))
    first = certified_thresholds(confidence, correct, orders[:, :200], target=target, planned=200)
    assert np.mean(~np.isnan(first)) <= ALLOWED
    chosen = np.full(REDRAWS, np.nan)
    for n in (200, 300, 400):
        undecided = np.flatnonzero(np.isnan(chosen))
        chosen[undecided] = certified_thresholds(confidence, correct, orders[undecided, :n], target=target, planned=200)
    assert np.mean(~np.isnan(chosen)) <= ALLOWED


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("alpha", [0.05, 0.1, 0.01])
def test_equal_weights_give_statsmodels_wilson(seed, alpha):
    rng = np.random.default_rng(seed)
    confidence = rng.random(80)
    correct = rng.random(80) < 0.8
    for threshold in (0.0, 0.3, 0.75, 0.95):
        above = confidence >= threshold
        count, nobs = int(correct[above].sum()), int(above.sum())
        low, high = proportion_confint(count, nobs, alpha=alpha, method="wilson")
        for weights in (None, [2.5] * 80):  # a constant weight changes nothing
            estimate, ci, accepted = accuracy_at(confidence, correct, weights, threshold, alpha=alpha)
            assert accepted == nobs
            assert estimate == pytest.approx(count / nobs, abs=1e-12)
            assert ci == pytest.approx((low, high), abs=1e-12)


def test_weighted_accuracy_uses_the_kish_n():
    # Weights 1, 1, 2, 2, correct 1, 0, 1, 1: p̂ = (1 + 2 + 2) / 6 = 5/6, n_eff = 3.6, so the
    # interval is Wilson's for 3 "successes" out of 3.6 (5/6 · 3.6 = 3), not for 3 of 4.
    estimate, ci, accepted = accuracy_at([0.9, 0.8, 0.7, 0.6], [1, 0, 1, 1], [1, 1, 2, 2], 0.5)
    assert estimate == pytest.approx(5 / 6)
    assert accepted == 4
    assert ci == pytest.approx(proportion_confint(3.0, 3.6, alpha=0.05, method="wilson"), abs=1e-12)
    assert ci != pytest.approx(proportion_confint(3, 4, alpha=0.05, method="wilson"), abs=1e-6)


def test_accuracy_at_counts_ties_and_returns_none_above_everything():
    # Threshold 0.8 takes 0.8 itself: items 0.9 (right) and 0.8 (wrong) → 1/2.
    assert accuracy_at([0.9, 0.8, 0.7], [True, False, True], None, 0.8)[::2] == (0.5, 2)
    assert accuracy_at([0.9, 0.8, 0.7], [True, False, True], None, 0.95) == (None, None, 0)


def test_wilson_interval_at_the_edges():
    # p = 1: the upper bound is exactly 1 after clipping; the lower bound n / (n + z²).
    low, high = wilson_interval(1.0, 10)
    z = 1.959963984540054
    assert float(high) == 1.0
    assert float(low) == pytest.approx(10 / (10 + z**2), abs=1e-12)


# --- choose_threshold -------------------------------------------------------------------

#: 20 sample items, confidences 1.00, 0.95, …, 0.05 (descending) and whether the machine was right.
CONFIDENCE = np.arange(20, 0, -1) / 20
CORRECT = [1, 1, 1, 1, 1, 1, 0, 1, 1, 1, 1, 1, 0, 1, 0, 1, 0, 0, 1, 0]
# Accepting the top k: right 1..6 → 1.0; k = 7: 6/7 = .857; 8: 7/8 = .875; 9: 8/9 = .889;
# 10: 9/10 = .9; 11: 10/11 = .909; 12: 11/12 = .917; 13: 11/13 = .846; … 20: 14/20 = .7.


def test_choose_threshold_picks_the_lowest_that_meets():
    # target .9 and ≥ 10 accepted: k = 10, 11, 12 meet; the lowest threshold is the 12th, 0.45.
    choice = choose_threshold(CONFIDENCE, CORRECT, target=0.9, min_accepted=10)
    assert choice.threshold == pytest.approx(0.45)
    assert choice.estimated_accuracy == pytest.approx(11 / 12)
    assert choice.sample_accepted == 12
    assert choice.ci == pytest.approx(proportion_confint(11, 12, alpha=0.05, method="wilson"), abs=1e-12)
    assert (choice.target, choice.conservative) == (0.9, False)
    assert [c["sample_accepted"] for c in choice.candidates if c["meets"]] == [10, 11, 12]


def test_a_miss_above_does_not_stop_a_lower_threshold():
    # min_accepted 1: k = 1..6 meet, 7..9 miss (.857, .875, .889), 10..12 meet again: still 0.45.
    choice = choose_threshold(CONFIDENCE, CORRECT, target=0.9, min_accepted=1)
    assert [c["meets"] for c in choice.candidates[:13]] == [True] * 6 + [False] * 3 + [True] * 3 + [False]
    assert choice.threshold == pytest.approx(0.45)


def test_min_accepted_is_respected_and_none_when_nothing_meets():
    # target .95: only k ≤ 6 (all right) meet on the estimate.
    assert choose_threshold(CONFIDENCE, CORRECT, target=0.95, min_accepted=6).threshold == pytest.approx(0.75)
    choice = choose_threshold(CONFIDENCE, CORRECT, target=0.95, min_accepted=7)
    assert choice == choose_threshold(CONFIDENCE, CORRECT, target=0.95, min_accepted=7)
    assert (choice.threshold, choice.estimated_accuracy, choice.ci, choice.sample_accepted) == (None, None, None, 0)
    assert len(choice.candidates) == 20
    assert not any(c["meets"] for c in choice.candidates)


def test_conservative_is_stricter():
    # target .6: every estimate is ≥ .7, so plainly the lowest confidence, 0.05, is chosen.
    plain = choose_threshold(CONFIDENCE, CORRECT, target=0.6, min_accepted=1)
    assert plain.threshold == pytest.approx(0.05)
    # Conservative: Wilson lower bounds ≥ .6 only at k = 6 (.610), 11 (.623), 12 (.646), 14 (.601),
    # so the 14th confidence, 0.35.
    careful = choose_threshold(CONFIDENCE, CORRECT, target=0.6, min_accepted=1, conservative=True)
    assert careful.threshold == pytest.approx(0.35)
    assert careful.conservative is True
    expected = [
        k for k in range(1, 21) if proportion_confint(sum(CORRECT[:k]), k, alpha=0.05, method="wilson")[0] >= 0.6
    ]
    assert [c["sample_accepted"] for c in careful.candidates if c["meets"]] == expected == [6, 11, 12, 14]


def test_candidates_are_distinct_thresholds_descending_with_ties_accepted_together():
    # 0.8 twice: one candidate, accepting both items (and 0.9): 2 right of 3.
    choice = choose_threshold([0.9, 0.8, 0.8, 0.5], [1, 1, 0, 1], target=0.5, min_accepted=1)
    assert [c["threshold"] for c in choice.candidates] == [0.9, 0.8, 0.5]
    assert [c["sample_accepted"] for c in choice.candidates] == [1, 3, 4]
    assert choice.candidates[1]["estimated_accuracy"] == pytest.approx(2 / 3)
    assert set(choice.candidates[0]) == {"threshold", "estimated_accuracy", "ci", "sample_accepted", "meets"}


def test_weights_change_the_estimate():
    # Unweighted, top 3 of 4 are right: 3/4 ≥ .7 at 0.6. Weighted (the wrong item stands for 5 queries):
    # at 0.6: (1 + 1 + 1) / (1 + 1 + 1 + 5) = 3/8 < .7; at 0.7: 1 + 1 + 1 of 3 → meets.
    confidence, correct, weights = [0.9, 0.8, 0.7, 0.6], [1, 1, 1, 0], [1, 1, 1, 5]
    assert choose_threshold(confidence, correct, target=0.7, min_accepted=1).threshold == 0.6
    weighted = choose_threshold(confidence, correct, weights, target=0.7, min_accepted=1)
    assert weighted.threshold == 0.7
    assert weighted.candidates[-1]["estimated_accuracy"] == pytest.approx(3 / 8)


def test_a_target_reached_exactly_meets_despite_float_weights():
    # 9 right, 1 wrong, all weighted 1.3: Σw·c / Σw = 11.7 / 13 comes out as 0.8999999999999999 in floats.
    weights = [1.3] * 10
    assert np.cumsum(weights[:9])[-1] / np.cumsum(weights)[-1] < 0.9
    choice = choose_threshold([0.5] * 10, [1] * 9 + [0], weights, target=0.9, min_accepted=1)
    assert choice.threshold == 0.5


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"target": 0.0}, r"target must be in \(0, 1\]"),
        ({"target": 1.1}, r"target must be in \(0, 1\]"),
        ({"target": 0.9, "alpha": 0.0}, "alpha must be between 0 and 1"),
        ({"target": 0.9, "weights": [1.0]}, "lengths differ"),
        ({"target": 0.9, "weights": [1.0, 0.0]}, "weights must be positive"),
        ({"target": 0.9, "confidence": [0.5, 1.2]}, r"confidences must be in \[0, 1\]"),
        ({"target": 0.9, "correct": [1, 2]}, "correct must be booleans"),
        ({"target": 0.9, "confidence": [], "correct": []}, "no sample items"),
    ],
)
def test_choose_threshold_rejects_bad_input(kwargs, message):
    arguments = {"confidence": [0.5, 0.6], "correct": [True, False], **kwargs}
    with pytest.raises(ValueError, match=message):
        choose_threshold(**arguments)


# --- split_by_threshold -----------------------------------------------------------------

BATCH = {"q1": 0.95, "q2": 0.2, "q3": 0.1, "q4": 0.2, "q5": 0.5, "q6": 0.8, "q7": 0.3}


def test_split_without_budget_excludes_the_sample():
    # q5 was in the calibration sample: it goes nowhere. 0.8 itself is accepted.
    split = split_by_threshold(BATCH, 0.8, exclude={"q5"})
    assert split == RoutingSplit(accepted=["q1", "q6"], to_humans=["q3", "q2", "q4", "q7"], over_budget=[])


def test_split_with_a_budget_takes_the_lowest_confidence_first_ties_by_qid():
    # floor(0.65 / 0.30) = 2 queries: q3 (0.1), then q2 before q4 (both 0.2, by qid).
    split = split_by_threshold(BATCH, 0.8, exclude={"q5"}, cost_per_query=Decimal("0.30"), budget=Decimal("0.65"))
    assert split.to_humans == ["q3", "q2"]
    assert split.over_budget == ["q4", "q7"]
    assert split.accepted == ["q1", "q6"]


def test_split_ties_go_by_qid_whatever_the_mapping_order():
    batch = {"b": 0.2, "c": 0.2, "a": 0.2, "z": 0.1}
    assert split_by_threshold(batch, 0.5).to_humans == ["z", "a", "b", "c"]


def test_split_budget_is_exact_decimal_arithmetic():
    # 0.90 / 0.30 = 3 exactly (in floats 0.9 / 0.3 = 2.9999999999999996 would floor to 2).
    split = split_by_threshold(BATCH, 0.8, cost_per_query=Decimal("0.30"), budget=Decimal("0.90"))
    assert split.to_humans == ["q3", "q2", "q4"]
    assert split.over_budget == ["q7", "q5"]
    assert split_by_threshold(BATCH, 0.8, cost_per_query=Decimal("0.30"), budget=Decimal("0")).to_humans == []


def test_split_with_no_threshold_accepts_nothing():
    split = split_by_threshold(BATCH, None, exclude=["q1", "q6"])
    assert split.accepted == []
    assert split.to_humans == ["q3", "q2", "q4", "q7", "q5"]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"budget": Decimal("1")}, "a budget needs cost_per_query"),
        ({"budget": Decimal("1"), "cost_per_query": Decimal("0")}, "cost_per_query must be positive"),
        ({"budget": Decimal("-1"), "cost_per_query": Decimal("0.1")}, "budget must not be negative"),
    ],
)
def test_split_rejects_bad_budgets(kwargs, message):
    with pytest.raises(ValueError, match=message):
        split_by_threshold(BATCH, 0.5, **kwargs)
