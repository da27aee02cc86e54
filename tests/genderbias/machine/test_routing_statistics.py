"""genderbias.machine.routing_statistics's guarantee: the betting test against a plain scalar re-implementation, the
worked example of docs/prelabelling.md, and simulations that show the risk is held.

The simulations draw a known-truth population (confidence that tracks correctness imperfectly,
accuracies near the target, a noisy three-vote crowd whose majority is the "truth" the guarantee
is stated against) and redraw the blind sample R times. The violation rate v̂ over R
independent redraws has Monte-Carlo standard error √(δ(1 − δ)/R) under v = δ, 0.0069 for δ = 0.05
and R = 1,000; the tests allow δ + 3 s.e. (a true rate at δ passes with probability ≈ 0.999).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from genderbias.machine.calibration_sample import random_sample
from genderbias.machine.certification import (
    DEFAULT_RISK,
    candidate_thresholds,
    certify_threshold,
    null_errors,
    perfect_record,
)
from genderbias.machine.routing_audit import audit, certified_thresholds, oracle_threshold
from genderbias.machine.routing_statistics import choose_threshold

REDRAWS = 1000
MC_SE = math.sqrt(DEFAULT_RISK * (1 - DEFAULT_RISK) / REDRAWS)  # 0.0069
ALLOWED = DEFAULT_RISK + 3 * MC_SE  # 0.0707


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
