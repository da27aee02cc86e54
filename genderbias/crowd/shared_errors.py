"""Errors shared by query: the machine's with the crowd's on gold (:func:`shared_errors`), and the crowd's own
(:func:`crowd_shared_errors`).

The de-noised accuracy (:mod:`.denoised`) assumes the machine's and the crowd's errors independent given the
true label, and every crowd model assumes the same of the workers among themselves: where some queries mislead
most workers no per-worker model corrects the labels and the label-corrected intervals miss (issue 81).
:func:`suggested_audit_size` says how large an audit would settle it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from genderbias.crowd import estimation
from genderbias.crowd.aggregation import dawid_skene
from genderbias.crowd.audit_size import AUDIT_CLASS_ITEMS, MIN_AUDIT, suggested_audit_size  # noqa: F401  (re-exported)
from genderbias.crowd.checks import gold_check
from genderbias.labels import LABELS
from genderbias.stats import intervals

__all__ = ["CROWD_CHECK_LEVEL", "crowd_shared_errors", "shared_errors", "shared_errors_sentence"]

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
    """Does the crowd err more often on the gold questions the machine gets wrong? The de-noised accuracy's
    one assumption no fit can check, tested where the truth is known.

    ``answers``: every crowd answer to gold questions (question, label); ``known``: question → true label;
    ``machine``: question → machine label. The statistic: the mean share of wrong crowd answers over the
    questions the machine got wrong (the question is the unit: hard for one worker, hard for the next). Its
    one-sided p permutes the machine's wrong answers within each true label (every arrangement up to
    ``draws``, else ``draws`` seeded ones). Returns ``questions``, ``machine_wrong``,
    ``crowd_error_machine_wrong``, ``crowd_error_machine_right``, ``p`` and ``testable`` (False, ``p`` None,
    when the machine got every question right or every one wrong)."""
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
    """:func:`shared_errors`' verdict in one sentence, beside the de-noised accuracy."""
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

#: Replicate crowds of :func:`crowd_shared_errors`' gold and answers tests: each drawn from the fit and refitted
#: (a parametric bootstrap that carries the fit's own error; docs/quality.md, "Errors shared by query").
CROWD_CHECK_REPLICATES = 100
#: Crowds drawn from a model to predict its agreement spread (the answers source's denominator).
AGREEMENT_DRAWS = 20
#: No more reference crowds once each source has this many at or above its observed statistic.
SETTLED = 10
#: The check's level: it fires when either source's p is at most half of it (Bonferroni over the two sources).
CROWD_CHECK_LEVEL = 0.05
#: A gold question counts in the gold test with at least this many answers.
MIN_GOLD_ANSWERS = 3


@dataclass(frozen=True)
class CrowdSharedErrors:
    """:func:`crowd_shared_errors`' verdict. ``fires``: errors concentrated on some queries, so no crowd-model
    interval is printed as a 95% interval; ``sources``: which test(s) fired ("gold", "answers").

    ``*_dispersion``: observed statistic / its replicates' mean (1 under independence), ``*_p`` one-sided;
    None when the source had too little to read (``gold_questions``, ``queries``: how much it read).
    ``audit_size``: :func:`suggested_audit_size` of ``expected_share``, the model's share of ``interest``."""

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

    @property
    def clear(self) -> bool:
        """Whether the check passes clearly: every p it read above :data:`genderbias.stats.intervals.CLEAR_P`."""
        return all(p is None or p > intervals.CLEAR_P for p in (self.gold_p, self.answers_p))

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
    """Are the crowd's errors concentrated on some queries? The check a report runs without an audit sample:
    where some queries mislead most workers the label-corrected figures are biased by many standard errors.

    ``answers``: ``task`` (or ``item``), ``worker``, ``label`` rows, or (task, worker, label) triples;
    ``gold``: task → known label; ``labels``: default n, f, m, o (or the answers' own, sorted); ``interest``:
    the class whose share sizes the audit; ``fit``: the caller's gold-seeded Dawid–Skene fit of these answers
    (then ``answers`` and ``gold`` are read from it). Two sources, each against ``replicates`` crowds drawn
    from the fit (same design, independent answers given the true label) and each refitted, so the reference
    carries the fit's own error (docs/quality.md, "The reference crowds refitted"):

    - **gold**: per gold question with :data:`MIN_GOLD_ANSWERS` answers, the chi-square of its right answers
      against its workers' accuracies under the fit (:func:`.checks.gold_check`): shared errors scatter them beyond
      the binomial.
    - **answers**: the variance over queries of 3+ answers of their share of agreeing answer pairs: shared
      errors give more unanimous and more split queries.

    ``fires`` when either p is at most ``level`` / 2 (Bonferroni). Calibration: docs/quality.md, "Errors
    shared by query"."""
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
    gold_p = answers_p = gold_dispersion = answers_dispersion = None
    design = _design(encoded)
    gold_questions, queries = gold_check(encoded, confusion, MIN_GOLD_ANSWERS)["questions"], int(design[1].sum())
    if gold_questions >= 3 or queries >= 3:
        rng = np.random.default_rng(seed)

        def statistics(crowd, posteriors: np.ndarray, confusion: np.ndarray) -> tuple[float, float]:
            """(gold chi-square, agreement dispersion) of ``crowd`` (``encoded`` with its own answers)."""
            gold_chi2 = gold_check(crowd, confusion, MIN_GOLD_ANSWERS)["chi2"] if gold_questions >= 3 else -np.inf
            spread = _agreement_dispersion(crowd, design, posteriors, confusion, rng) if queries >= 3 else -np.inf
            return gold_chi2, spread

        observed = statistics(encoded, posteriors, confusion)
        reference = []
        for _ in range(replicates):  # a crowd drawn from the fit, refitted: the fit's own error is in the reference
            drawn = replace(
                encoded, label_idx=_draw(rng, posteriors, confusion, encoded.item_idx, encoded.worker_idx, 1)[0]
            )
            refit = estimation.fit(drawn, start=posteriors, max_iter=50, tol=1e-5, held_out=False)
            reference.append(statistics(drawn, refit.posteriors[0], refit.confusion[0]))
            at_or_above = (np.array(reference) >= np.array(observed) - 1e-12).sum(axis=0).min()
            if at_or_above >= max(SETTLED, level / 2 * (replicates + 1)):  # no source can fire any more
                break  # (Besag & Clifford's sequential p: the verdict of all the replicates, sooner)
        reference = np.array(reference)
        if gold_questions >= 3:
            gold_dispersion, gold_p = observed[0] / gold_questions, _p(observed[0], reference[:, 0])
        if queries >= 3:
            answers_dispersion, answers_p = observed[1], _p(observed[1], reference[:, 1])
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


def _design(encoded) -> tuple[np.ndarray, np.ndarray]:
    """Who answered what, as the sources read it (the same on every replicate crowd): the answers to gold
    questions, and the other queries with 3 answers."""
    on_gold = np.isin(encoded.item_idx, encoded.gold_rows)
    other = np.ones(encoded.n_items, dtype=bool)
    other[encoded.gold_rows] = False
    return on_gold, other & (np.bincount(encoded.item_idx[~on_gold], minlength=encoded.n_items) >= 3)


def _draw(rng: np.random.Generator, posteriors, confusion, items, workers, r: int) -> np.ndarray:
    """[r × answers]: the label codes of ``r`` crowds of the same design, each query's truth from its posterior."""
    k = posteriors.shape[1]
    truth = (rng.random((r, len(posteriors), 1)) > np.cumsum(posteriors, axis=1)[None]).sum(axis=2).clip(max=k - 1)
    rows = confusion[workers[None, :], truth[:, items], :].cumsum(axis=2)
    return (rng.random((r, len(items)))[:, :, None] > rows).sum(axis=2).clip(max=k - 1)


def _agreement_variance(items: np.ndarray, labels: np.ndarray, scored: np.ndarray, k: int, n: int) -> np.ndarray:
    """[R]: the variance over the ``scored`` queries of each one's share of agreeing answer pairs."""
    r = labels.shape[0]
    counts = np.zeros((r, n, k))
    np.add.at(counts, (np.arange(r)[:, None], items[None, :], labels), 1.0)
    counts = counts[:, scored]
    total = counts.sum(axis=2)
    agreement = (counts * (counts - 1)).sum(axis=2) / (total * (total - 1))
    return agreement.var(axis=1)


def _agreement_dispersion(encoded, design, posteriors, confusion, rng) -> float:
    """The scored queries' agreement variance in ``encoded``'s answers over its mean on :data:`AGREEMENT_DRAWS`
    crowds drawn from the model (in chunks of about 20 MB)."""
    on_gold, scored = design
    items, workers = encoded.item_idx[~on_gold], encoded.worker_idx[~on_gold]
    k, n = len(encoded.labels), encoded.n_items
    chunk = max(1, 20_000_000 // max(1, (n + len(items)) * k * 8))
    drawn = [
        _agreement_variance(items, _draw(rng, posteriors, confusion, items, workers, r), scored, k, n)
        for r in np.diff([*range(0, AGREEMENT_DRAWS, chunk), AGREEMENT_DRAWS])
    ]
    observed = _agreement_variance(items, encoded.label_idx[~on_gold][None], scored, k, n)[0]
    return float(observed / np.concatenate(drawn).mean())
