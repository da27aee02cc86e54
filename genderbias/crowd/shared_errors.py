"""Are the machine's errors independent of the crowd's given the true label? Tested on the gold questions.

Pure numpy, no Django. The de-noised accuracy (:mod:`genderbias.crowd.denoised`) assumes they are;
errors shared on hard queries bias it up. On the gold questions the truth is known, so whether the
crowd errs more often where the machine errs can be counted (:func:`shared_errors`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

#: Permutations of :func:`shared_errors` when the arrangements are too many to enumerate.
SHARED_ERROR_DRAWS = 10_000


def shared_errors(
    answers: Sequence[tuple[str, str]],
    known: Mapping[str, str],
    machine: Mapping[str, str],
    *,
    draws: int = SHARED_ERROR_DRAWS,
    seed: int = 0,
) -> dict[str, Any]:
    """Does the crowd err more often on the gold questions the machine gets wrong? The de-noised
    accuracy's one assumption that no fit can check (the machine's and the crowd's errors independent
    given the true label), tested where the true label is known.

    ``answers``: the crowd's answers to gold questions (question, label), every answer (a worker meets a
    question in every HIT); ``known``: question → true label; ``machine``: question → the machine's label.
    Per question answered by the crowd and labelled by the machine, the share of the crowd's answers that
    are wrong; the statistic is the mean of those shares over the questions the machine got wrong. Under
    independence which questions the machine gets wrong is unrelated to how hard they are for the crowd,
    so its p (one-sided: shared errors make the crowd err *more* there) is the share of arrangements of the
    machine's wrong answers among the questions, within each true label, whose statistic is at least the
    observed one (every arrangement when at most ``draws`` of them; else ``draws`` random ones, seeded,
    p = (1 + those at least as large) / (draws + 1)).
    The question, not the answer, is the unit: a question hard for one worker is hard for the next.

    Returns ``questions``, ``machine_wrong`` (questions), ``crowd_error_machine_wrong`` and
    ``crowd_error_machine_right`` (mean shares), ``p`` and ``testable`` (False, with ``p`` None, when the
    machine got every question right, or every one wrong: nothing to compare)."""
    wrong: dict[str, list[int]] = {}
    for question, label in answers:
        if question in known and question in machine:
            wrong.setdefault(question, []).append(int(label != known[question]))
    questions = sorted(wrong)
    share = np.array([np.mean(wrong[q]) for q in questions])
    machine_wrong = np.array([machine[q] != known[q] for q in questions], dtype=bool)
    out: dict[str, Any] = {
        "questions": len(questions),
        "machine_wrong": int(machine_wrong.sum()),
        "crowd_error_machine_wrong": float(share[machine_wrong].mean()) if machine_wrong.any() else None,
        "crowd_error_machine_right": float(share[~machine_wrong].mean()) if (~machine_wrong).any() else None,
        "p": None,
        "testable": bool(machine_wrong.any() and (~machine_wrong).any()),
    }
    if not out["testable"]:
        return out
    strata = [np.flatnonzero([known[q] == t for q in questions]) for t in sorted({known[q] for q in questions})]
    counts = [int(machine_wrong[s].sum()) for s in strata]
    arrangements = math.prod(math.comb(len(s), c) for s, c in zip(strata, counts, strict=True))
    observed = share[machine_wrong].mean()
    if arrangements <= draws:
        from itertools import combinations, product

        sums = [
            [share[list(chosen)].sum() for chosen in combinations(s, c)] for s, c in zip(strata, counts, strict=True)
        ]
        totals = np.array([sum(parts) for parts in product(*sums)])
    else:
        rng = np.random.default_rng(seed)
        totals = np.zeros(draws)
        for s, c in zip(strata, counts, strict=True):
            if c:
                picks = np.argsort(rng.random((draws, len(s))), axis=1)[:, :c]
                totals += share[s][picks].sum(axis=1)
    at_least = int(np.sum(totals / machine_wrong.sum() >= observed - 1e-12))
    # Every arrangement: the exact p; random ones: the observed arrangement counted among them.
    out["p"] = at_least / len(totals) if arrangements <= draws else (1 + at_least) / (draws + 1)
    return out


def shared_errors_sentence(shared: Mapping[str, Any] | None) -> str:
    """:func:`shared_errors`' verdict in one sentence, beside the de-noised accuracy (the calibration
    command and page)."""
    if not shared or not shared["questions"]:
        return "assumption not tested: no gold question both answered by the crowd and labelled by the machine"
    said = f"assumption tested on {shared['questions']} gold question(s) labelled by the machine: "
    if not shared["testable"]:
        got = "right" if shared["machine_wrong"] == 0 else "wrong"
        return said + f"not testable, the machine got every one {got}"
    verdict = "the crowd erred more where the machine did" if shared["p"] <= 0.05 else "no sign of shared errors"
    return said + (
        f"the crowd wrong on {shared['crowd_error_machine_wrong']:.2f} of its answers to the "
        f"{shared['machine_wrong']} the machine got wrong, {shared['crowd_error_machine_right']:.2f} to the others "
        f"(permutation p = {shared['p']:.3f}, one-sided): {verdict}"
    )
