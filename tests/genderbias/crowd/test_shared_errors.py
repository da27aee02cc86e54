"""The de-noised accuracy's assumption tested on the data (issue 58, item 3): does the crowd err more on
the gold questions the machine gets wrong (``crowd_reliability.shared_errors``)? Checked by hand on a small
case, and by simulation with a known dependence: questions of varying difficulty d ~ N(0, 1), the crowd's
error log-odds logit(0.2) + d, the machine's logit(0.12) + D·d (D = 0: independent given the label)."""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pytest
from scipy.special import expit, logit

from genderbias.crowd.shared_errors import shared_errors, shared_errors_sentence


def test_the_exact_permutation_p_by_hand():
    """Four n questions, the crowd wrong on 3/4, 2/4, 1/4, 0/4 of its answers; the machine wrong on the
    first two: mean share 0.625. Of the C(4, 2) = 6 pairs, only the first two reach it: p = 1/6."""
    known = dict.fromkeys(("a", "b", "c", "d"), "n")
    answers = []
    for question, wrong in zip("abcd", (3, 2, 1, 0), strict=True):
        answers += [(question, "f")] * wrong + [(question, "n")] * (4 - wrong)
    machine = {"a": "m", "b": "f", "c": "n", "d": "n"}
    out = shared_errors(answers, known, machine)
    pairs = [np.mean(pair) for pair in combinations((0.75, 0.5, 0.25, 0.0), 2)]
    assert out["p"] == pytest.approx(np.mean(np.array(pairs) >= 0.625)) == pytest.approx(1 / 6)
    assert out["crowd_error_machine_wrong"] == 0.625 and out["crowd_error_machine_right"] == 0.125
    assert out["testable"] and out["questions"] == 4 and out["machine_wrong"] == 2
    assert shared_errors_sentence(out) == (
        "assumption tested on 4 gold question(s) labelled by the machine: the crowd wrong on 0.62 of its answers "
        "to the 2 the machine got wrong, 0.12 to the others (permutation p = 0.167, one-sided): no sign of shared "
        "errors"
    )
    # A question the machine did not label is not counted; a machine right everywhere leaves nothing to test.
    assert shared_errors(answers, known, {"a": "n", "b": "n"}) | {"p": None} == {
        "questions": 2, "machine_wrong": 0, "crowd_error_machine_wrong": None,
        "crowd_error_machine_right": 0.625, "p": None, "testable": False,
    }  # fmt: skip


def test_arrangements_are_kept_within_the_true_label():
    """Two f questions the crowd finds hard and two n questions it finds easy; the machine wrong on one of
    each. Within the labels only 2 × 2 arrangements exist, and the observed one (the harder of each) is the
    most extreme: p = 1/4 (pooled over labels it would be 1/6)."""
    known = {"f1": "f", "f2": "f", "n1": "n", "n2": "n"}
    answers = [("f1", "n")] * 3 + [("f1", "f")] + [("f2", "n"), ("f2", "f"), ("f2", "f"), ("f2", "f")]
    answers += [("n1", "m"), ("n1", "n"), ("n1", "n"), ("n1", "n")] + [("n2", "n")] * 4
    out = shared_errors(answers, known, {"f1": "n", "f2": "f", "n1": "f", "n2": "n"})
    assert out["p"] == pytest.approx(1 / 4)


def _draw(rng, dependence: float, questions: int, answers: int):
    d = rng.standard_normal(questions)
    truth = rng.choice(["n", "f", "m"], questions)
    known = {f"g{i}": t for i, t in enumerate(truth)}
    crowd_wrong = rng.random((questions, answers)) < expit(logit(0.2) + d)[:, None]
    machine_wrong = rng.random(questions) < expit(logit(0.12) + dependence * d)
    other = {"n": "m", "f": "n", "m": "n"}
    rows = [(f"g{i}", other[t] if w else t) for i, t in enumerate(truth) for w in crowd_wrong[i]]
    machine = {f"g{i}": other[t] if w else t for i, (t, w) in enumerate(zip(truth, machine_wrong, strict=True))}
    return rows, known, machine


@pytest.mark.slow
def test_the_check_holds_its_level_under_independence_and_finds_shared_errors():
    """200 simulated gold sets of 40 questions × 30 answers each, seeds [58, r], at α = 0.05. Measured:
    D = 0 rejected in 0.020 of the sets (all 200 testable; MC s.e. 0.010: conservative, the permutation p
    is discrete), D = 2 in 0.95 (0.015). Asserted: level
    ≤ 0.05 + 2 MC s.e., power ≥ 0.5 (the check has power only where the machine errs on several
    questions: a study with a few gold questions gets "not testable" or a weak test, as its page says)."""
    rates = {}
    for dependence in (0.0, 2.0):
        ps = []
        for r in range(200):
            out = shared_errors(*_draw(np.random.default_rng([58, r]), dependence, 40, 30), draws=2000)
            if out["testable"]:
                ps.append(out["p"])
        rates[dependence] = (np.mean(np.array(ps) <= 0.05), len(ps))
    print(rates)
    level, tested = rates[0.0]
    assert level <= 0.05 + 2 * np.sqrt(0.05 * 0.95 / tested), rates
    assert rates[2.0][0] >= 0.5, rates
