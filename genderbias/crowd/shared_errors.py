"""Errors shared by query: the machine's with the crowd's on gold (:func:`shared_errors`), and the crowd's own
(:func:`crowd_shared_errors`).

Pure numpy, no Django. The de-noised accuracy (:mod:`genderbias.crowd.denoised`) assumes the machine's and the
crowd's errors independent given the true label; errors shared on hard queries bias it up. On the gold questions
the truth is known, so whether the crowd errs more often where the machine errs can be counted
(:func:`shared_errors`). Every crowd model assumes the same of the workers among themselves: where some queries
mislead most workers, no per-worker model can correct the labels and the label-corrected intervals miss
(issue 81); :func:`crowd_shared_errors` looks for it where no audit sample exists, and
:func:`suggested_audit_size` says how large an audit would settle it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from genderbias.crowd.aggregation import dawid_skene
from genderbias.crowd.audit_size import AUDIT_CLASS_ITEMS, MIN_AUDIT, suggested_audit_size  # noqa: F401  (re-exported)
from genderbias.labels import LABELS

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


# --- The crowd's own errors: concentrated on some queries? (issue 81, item 3) ---------------------------------------

#: Replicate crowds of :func:`crowd_shared_errors`' gold and answers tests (parametric bootstrap).
CROWD_CHECK_REPLICATES = 400
#: The check's level: it fires when either source's p is at most half of it (Bonferroni over the two sources).
CROWD_CHECK_LEVEL = 0.05
#: A gold question counts in the gold test with at least this many answers.
MIN_GOLD_ANSWERS = 3


@dataclass(frozen=True)
class CrowdSharedErrors:
    """:func:`crowd_shared_errors`' verdict. ``fires``: the crowd's errors are concentrated on some queries, so
    no crowd-model interval is printed as a 95% interval; ``sources`` which test(s) fired ("gold", "answers").

    ``gold_dispersion``: the spread of the gold questions' right answers over what independent answers allow
    (1 under independence; observed chi-square / its mean over the replicates), ``gold_p`` its one-sided p,
    ``gold_questions`` how many gold questions it read (None, None, 0: no gold question with
    :data:`MIN_GOLD_ANSWERS` answers). ``answers_dispersion``: the spread of the queries' agreement over what
    the fitted crowd model predicts (variance ratio, 1 when it fits), ``answers_p`` its one-sided p,
    ``queries`` how many queries it read (None, None, 0 without queries of 3 or more answers).
    ``interest``, ``expected_share`` (the crowd model's share of that class) and ``audit_size``
    (:func:`suggested_audit_size` of it): the audit sample that would settle the figure."""

    fires: bool
    sources: tuple[str, ...]
    gold_dispersion: float | None
    gold_p: float | None
    gold_questions: int
    answers_dispersion: float | None
    answers_p: float | None
    queries: int
    level: float
    interest: str
    expected_share: float
    audit_size: int

    def sentence(self) -> str:
        """The verdict in one sentence, for reports beside a crowd-model interval."""
        said = []
        if self.gold_p is not None:
            said.append(
                f"the {self.gold_questions} gold questions' right answers spread {self.gold_dispersion:.2f} times "
                f"what independent answers allow (p = {self.gold_p:.3f})"
            )
        if self.answers_p is not None:
            said.append(
                f"the {self.queries} queries' agreement spreads {self.answers_dispersion:.2f} times what the crowd "
                f"model predicts (p = {self.answers_p:.3f})"
            )
        if not said:
            return "errors shared by query not tested: no gold question with enough answers, no query with 3 answers"
        if not self.fires:
            return "no sign of errors shared by query: " + "; ".join(said)
        return (
            "the crowd's errors are shared by query, so the crowd-model interval may not cover: "
            + "; ".join(said)
            + f"; an expert audit sample of about {self.audit_size} queries "
            f"(25 of class {self.interest!r}, expected share {self.expected_share:.2f}) would settle it"
        )


def _answers_frame(answers: Any) -> pd.DataFrame:
    """A (task or item, worker, label) frame or a list of (task, worker, label) triples as judgments."""
    if isinstance(answers, pd.DataFrame):
        frame = answers.rename(columns={"task": "item"}) if "item" not in answers.columns else answers
    else:
        rows = list(answers)
        bad = next((i for i, row in enumerate(rows) if len(tuple(row)) != 3), None)
        if bad is not None:
            raise ValueError(f"answers[{bad}]: expected a (task, worker, label) triple, got {rows[bad]!r}")
        frame = pd.DataFrame(rows, columns=["item", "worker", "label"])
    return frame


def crowd_shared_errors(
    answers: Any,
    gold: Mapping[Any, Any] | None = None,
    *,
    labels: Sequence[str] | None = None,
    interest: str = "n",
    seed: int = 0,
    replicates: int = CROWD_CHECK_REPLICATES,
    level: float = CROWD_CHECK_LEVEL,
    fit: Any = None,
) -> CrowdSharedErrors:
    """Are the crowd's errors concentrated on some queries? The check a report runs where no audit sample
    exists: every crowd model here takes a query's answers to be independent given its true label, and where
    some queries mislead most workers the label-corrected figures are biased by many of their standard
    errors, their intervals no wider (issue 81: real crowds, and the simulated ``difficulty`` crowd).

    ``crowd_shared_errors(answers, gold=None, *, labels=None, interest="n", seed=0, replicates=400,
    level=0.05, fit=None) -> CrowdSharedErrors``

    ``answers``: a frame of ``task`` (or ``item``), ``worker``, ``label``, one row per answer, or a list of
    (task, worker, label) triples; ``gold``: {task: known label} of the gold questions; ``labels``: the labels
    (default the project's n, f, m, o, or the answers' own sorted when they use others); ``interest``: the
    class whose share sizes the audit; ``seed`` seeds both tests; ``fit``: the gold-seeded Dawid-Skene fit
    (:func:`genderbias.crowd.aggregation.dawid_skene`) of these answers and gold when the caller has one (then
    ``answers`` and ``gold`` are read from it: a report passes its crowd model's fit and ``[]``).

    Two sources, each against ``replicates`` crowds drawn from the fitted crowd model (independent answers
    given the true label, each worker's fitted confusion row, the same design: who answered what):

    - **gold**: per gold question with :data:`MIN_GOLD_ANSWERS` answers, its right answers against what its
      workers' fitted accuracies on its true label expect; the statistic is the chi-square of
      :func:`genderbias.crowd.checks.gold_check` (variance Σ θ(1 − θ)). Shared errors make some gold questions
      hard for everyone: the counts scatter beyond the binomial (adultcontent2's gold: 3.4 times).
    - **answers**: per query with 3 or more answers (not gold), the share of its answer pairs that agree; the
      statistic is the variance of that share over the queries. Shared errors give more unanimous and more
      split queries than independent answers can; the replicate crowds draw each query's true label from its
      posterior.

    Each p is one-sided, (1 + replicates at least as large) / (replicates + 1). ``fires`` when either is at most
    ``level`` / 2 (Bonferroni: ``level`` for the two together on a crowd without shared errors). Calibrated on
    the simulated crowds and adultcontent2 (``benchmarks/shared_errors_check.py``, docs/quality.md "Errors
    shared by query")."""

    frame = _answers_frame(answers)
    gold = {str(task): str(label) for task, label in (gold or {}).items()}
    if labels is None:
        given = set(frame["label"].astype(str)) | set(gold.values())
        labels = LABELS if given <= set(LABELS) else tuple(sorted(given))
    labels = tuple(labels)
    if interest not in labels:
        raise ValueError(f"interest {interest!r}: not one of the labels {', '.join(labels)}")
    if fit is None:
        fit = dawid_skene(frame, labels=labels, gold=gold)
    encoded = fit.encoded
    if encoded is None or encoded.n_items == 0:
        raise ValueError("answers: no answer to check")
    posteriors, priors, confusion = fit.arrays()
    rng = np.random.default_rng(seed)
    gold_dispersion, gold_p, gold_questions = _gold_test(encoded, confusion, rng, replicates)
    answers_dispersion, answers_p, queries = _answers_test(encoded, posteriors, confusion, rng, replicates)
    sources = tuple(name for name, p in (("gold", gold_p), ("answers", answers_p)) if p is not None and p <= level / 2)
    share = float(priors[labels.index(interest)])
    return CrowdSharedErrors(
        fires=bool(sources),
        sources=sources,
        gold_dispersion=gold_dispersion,
        gold_p=gold_p,
        gold_questions=gold_questions,
        answers_dispersion=answers_dispersion,
        answers_p=answers_p,
        queries=queries,
        level=level,
        interest=interest,
        expected_share=share,
        audit_size=suggested_audit_size(max(share, 1e-9)),
    )


def _p(observed: float, simulated: np.ndarray) -> float:
    return float((1 + np.sum(simulated >= observed - 1e-12)) / (len(simulated) + 1))


def _gold_test(encoded, confusion: np.ndarray, rng: np.random.Generator, replicates: int):
    """(dispersion, p, questions) of the gold source; (None, None, n) with fewer than 3 usable gold questions."""
    truth = np.full(encoded.n_items, -1)
    truth[encoded.gold_rows] = encoded.gold_onehot.argmax(axis=1)
    on_gold = truth[encoded.item_idx] >= 0
    items, workers, given = encoded.item_idx[on_gold], encoded.worker_idx[on_gold], encoded.label_idx[on_gold]
    t = truth[items]
    right_p = np.clip(confusion[workers, t, t], 1e-6, 1 - 1e-6)
    count = np.bincount(items, minlength=encoded.n_items)
    used = count >= MIN_GOLD_ANSWERS
    if used.sum() < 3:
        return None, None, int(used.sum())
    expected = np.bincount(items, right_p, minlength=encoded.n_items)[used]
    variance = np.bincount(items, right_p * (1 - right_p), minlength=encoded.n_items)[used]

    def chi2(right: np.ndarray) -> np.ndarray:  # right [R × J] → [R]
        observed = np.stack([np.bincount(items, r, minlength=encoded.n_items)[used] for r in right])
        return (((observed - expected) ** 2) / variance).sum(axis=1)

    observed = chi2((given == t)[None].astype(np.float64))[0]
    simulated = chi2((rng.random((replicates, len(items))) < right_p).astype(np.float64))
    return float(observed / simulated.mean()), _p(observed, simulated), int(used.sum())


def _agreement_variance(items: np.ndarray, labels: np.ndarray, scored: np.ndarray, k: int, n: int) -> np.ndarray:
    """[R]: the variance over the ``scored`` queries of each one's share of agreeing answer pairs."""
    r = labels.shape[0]
    counts = np.zeros((r, n, k))
    np.add.at(counts, (np.arange(r)[:, None], items[None, :], labels), 1.0)
    counts = counts[:, scored]
    total = counts.sum(axis=2)
    agreement = (counts * (counts - 1)).sum(axis=2) / (total * (total - 1))
    return agreement.var(axis=1)


def _answers_test(encoded, posteriors: np.ndarray, confusion: np.ndarray, rng: np.random.Generator, replicates: int):
    """(dispersion, p, queries) of the answers source; (None, None, n) with fewer than 3 queries of 3 answers."""
    k, n = len(encoded.labels), encoded.n_items
    free = np.ones(n, dtype=bool)
    free[encoded.gold_rows] = False
    on_free = free[encoded.item_idx]
    items, workers, given = encoded.item_idx[on_free], encoded.worker_idx[on_free], encoded.label_idx[on_free]
    scored = free & (np.bincount(items, minlength=n) >= 3)
    if scored.sum() < 3:
        return None, None, int(scored.sum())
    cumulative = np.cumsum(posteriors, axis=1)
    simulated = np.empty(replicates)
    chunk = max(1, 20_000_000 // max(1, n * k * 8))
    for start in range(0, replicates, chunk):
        r = min(chunk, replicates - start)
        truth = (rng.random((r, n, 1)) > cumulative[None]).sum(axis=2).clip(max=k - 1)
        rows = confusion[workers[None, :], truth[:, items], :].cumsum(axis=2)
        drawn = (rng.random((r, len(items)))[:, :, None] > rows).sum(axis=2).clip(max=k - 1)
        simulated[start : start + r] = _agreement_variance(items, drawn, scored, k, n)
    observed = _agreement_variance(items, given[None, :], scored, k, n)[0]
    return float(observed / simulated.mean()), _p(observed, simulated), int(scored.sum())
