"""genderbias.crowd.simulation.escalation: the reference rule's exact law by hand, the platform's process
simulated against it, and a noisy crowd's splits and how escalation removes them.

Monte-Carlo errors: a share p estimated on n simulated queries has s.e. √(p(1 − p)/n) ≤ 0.0025 at
n = 40,000; the tests allow 4 s.e. (0.01)."""

from __future__ import annotations

import numpy as np
import pytest

from genderbias.crowd.simulation.escalation import ReferenceRule, reference_outcomes, routing_ceiling, simulate_crowd
from genderbias.crowd.simulation.workers import crowd_from_dict, crowd_from_figures, noisy_crowd, pooled_crowd

TWO = ("n", "f")
#: The worked example of docs/prelabelling.md: a vote on a Non-gendered query says n 0.8 of the time, on a
#: Female one f 0.7.
VOTE = np.array([[0.8, 0.2], [0.3, 0.7]])


def test_without_escalation_the_law_is_the_majority_of_k_votes():
    outcome, votes = reference_outcomes(pooled_crowd(TWO, VOTE), ReferenceRule(votes=3, cap=3))
    # P(M = n | n) = 0.8³ + 3·0.8²·0.2 = 0.896; P(M = f | f) = 0.7³ + 3·0.7²·0.3 = 0.784 (no ties).
    assert outcome[0] == pytest.approx([0.896, 0.104, 0.0])
    assert outcome[1] == pytest.approx([0.216, 0.784, 0.0])
    assert votes == pytest.approx([3, 3])
    # The ceiling as routing counts it at shares 0.6 / 0.4: 0.6·0.896 + 0.4·0.784 = 0.851.
    assert routing_ceiling(pooled_crowd(TWO, VOTE), ReferenceRule(3, 3), np.array([0.6, 0.4])) == pytest.approx(0.8512)


def test_a_split_gets_one_more_vote():
    # Two votes; a 1-1 split (2·0.8·0.2 = 0.32 of n queries) gets a third: P(ref = n | n) = 0.64 + 0.32·0.8.
    outcome, votes = reference_outcomes(pooled_crowd(TWO, VOTE), ReferenceRule(votes=2, cap=3))
    assert outcome[0] == pytest.approx([0.64 + 0.32 * 0.8, 0.04 + 0.32 * 0.2, 0.0])
    assert votes[0] == pytest.approx(2 + 0.32)
    # Without the third vote the split stays undecided and counts against every machine.
    outcome, _ = reference_outcomes(pooled_crowd(TWO, VOTE), ReferenceRule(votes=2, cap=2))
    assert outcome[0] == pytest.approx([0.64, 0.04, 0.32])


def test_the_posterior_rule_wants_more_than_a_majority():
    # Uniform prior: after n, n, f the posterior of n is 0.8²·0.2 / (0.8²·0.2 + 0.3²·0.7) = 0.670 < 0.9, so only
    # 3-0 is decisive with three votes: P(ref = n | n) = 0.512, P(ref = f | n) = 0.008, the rest undecided.
    outcome, _ = reference_outcomes(pooled_crowd(TWO, VOTE), ReferenceRule(votes=3, cap=3, posterior=0.9))
    assert outcome[0] == pytest.approx([0.512, 0.008, 0.48])


def test_one_query_per_hit_with_a_pooled_crowd_follows_the_exact_law():
    """A one-worker pooled crowd votes independently (the HIT's next worker is itself again), so with one
    query per HIT the simulation must reproduce reference_outcomes (40,000 queries per label, 4 s.e.)."""
    labels = ("n", "f", "m", "o")
    crowd = noisy_crowd(labels)
    pooled = pooled_crowd(labels, crowd.pooled)
    for rule in (ReferenceRule(3, 6), ReferenceRule(3, 5, posterior=0.95)):
        outcome, votes = reference_outcomes(pooled, rule)
        truth = np.repeat(np.arange(4), 40_000)
        run = simulate_crowd(truth, pooled, rule, np.random.default_rng(3), queries_per_hit=1)
        for t in range(4):
            found = np.bincount(np.where(run.reference[truth == t] < 0, 4, run.reference[truth == t]), minlength=5)
            assert found / 40_000 == pytest.approx(outcome[t], abs=0.01)
        assert run.assignments / len(truth) == pytest.approx(votes.mean(), abs=0.02)
        assert run.assignments == run.hits * 3 + run.escalations


def test_a_noisy_crowd_splits_and_escalation_settles_its_splits():
    """3 votes from twelve workers right 0.9 of the time, two spammers and a lazy worker: about 8% of the
    queries have no strict majority; escalating their HITs to 7 leaves almost none, and the reference is
    right far more often (the HIT's other queries get the round's votes too)."""
    labels = ("n", "f", "m", "o")
    crowd = noisy_crowd(labels)
    truth = np.random.default_rng(0).choice(4, size=20_000, p=[0.47, 0.2, 0.32, 0.01])
    once = simulate_crowd(truth, crowd, ReferenceRule(3, 3), np.random.default_rng(1))
    more = simulate_crowd(truth, crowd, ReferenceRule(3, 7), np.random.default_rng(1))
    assert 0.05 < np.mean(once.reference < 0) < 0.12 and once.escalations == 0
    assert np.mean(more.reference < 0) < 0.01 < more.escalations / more.hits
    assert np.mean(more.reference == truth) > np.mean(once.reference == truth) + 0.08
    assert np.array_equal(once.first_round, more.first_round)  # the same first round, seeded alike


def test_a_perfect_crowd_is_never_escalated():
    labels = ("n", "f")
    perfect = crowd_from_dict({"workers": [{"accuracy": 1.0}, {"accuracy": 1.0}, {"accuracy": 1.0}]}, labels)
    truth = np.array([0, 1, 1, 0, 1] * 20)
    run = simulate_crowd(truth, perfect, ReferenceRule(3, 7), np.random.default_rng(0), queries_per_hit=10)
    assert np.array_equal(run.reference, truth) and run.escalations == 0 and run.assignments == 30


def test_a_fitted_crowd_comes_from_the_reports_figures():
    figures = {"vote": {"n": {"n": 0.8, "f": 0.2}, "f": {"n": 0.3, "f": 0.7}}, "class_shares": {"n": 0.6, "f": 0.4}}
    crowd = crowd_from_figures(figures)
    assert crowd.labels == TWO and np.allclose(crowd.pooled, VOTE) and np.allclose(crowd.priors(), [0.6, 0.4])


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({}, '"workers"'),
        ({"workers": [{"accuracy": 1.5}]}, r"workers\[0\]\.accuracy"),
        ({"workers": [{"accuracy": 0.9}, {"always": "x"}]}, r"workers\[1\]\.always"),
        ({"workers": [{"accuracy": 0.9, "share": 0}]}, r"workers\[0\]\.share"),
    ],
)
def test_a_crowd_file_names_what_is_wrong(data, message):
    with pytest.raises(ValueError, match=message):
        crowd_from_dict(data, TWO)


def test_a_rule_refuses_a_cap_below_the_votes():
    with pytest.raises(ValueError, match="cap"):
        ReferenceRule(votes=3, cap=2)
    with pytest.raises(ValueError, match="posterior"):
        ReferenceRule(posterior=0.4)
