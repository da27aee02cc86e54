"""The agreement report of a batch (:func:`agreement`) and what its page shows of it: the summary the
batch page polls and the set-aside table, kept in pages per answer version."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from annotation.crowd.selectors import batch_progress, query_texts
from annotation.models import Batch
from annotation.results.selectors.labels import BatchAnswers, answers_cached, cached_for_answers, query_results
from core import methods
from core import selectors as core_selectors
from genderbias.labels import LABELS


def agreement(
    batch: Batch,
    *,
    bootstrap: int | None = None,
    seed: int = 0,
    answers: BatchAnswers | None = None,
    progress: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The agreement report of :mod:`genderbias.crowd.agreement` plus what the batch's records add;
    ``bootstrap`` resamples (default ``settings.AGREEMENT_BOOTSTRAP_RESAMPLES``, so that a batch shows
    one interval everywhere; 0: none) give alpha's interval."""
    from django.conf import settings

    if bootstrap is None:
        bootstrap = settings.AGREEMENT_BOOTSTRAP_RESAMPLES
    answers = answers or BatchAnswers(batch)
    report = answers_cached(
        answers, f"agreement:{bootstrap}:{seed}", lambda: _agreement(batch, answers, bootstrap, seed)
    )
    # Progress counts every assignment, not only answers: never kept with them.
    return report | {"progress": progress if progress is not None else batch_progress(batch)}


def agreement_summary(
    batch: Batch, *, answers: BatchAnswers | None = None, progress: dict[str, Any] | None = None
) -> dict[str, Any]:
    """What the batch page and its live fragment show of :func:`agreement`, kept apart from the report so
    that a poll never reads its per-query lists."""
    answers = answers or BatchAnswers(batch)

    def summary() -> dict[str, Any]:
        report = agreement(batch, bootstrap=0, answers=answers, progress={})
        return {
            "krippendorff_alpha": report["krippendorff_alpha"],
            "judgments": report["judgments"],
            "set_aside_count": len(report["set_aside"]),
        }

    kept = answers_cached(answers, "agreement-summary:0:0", summary)
    return kept | {"progress": progress if progress is not None else batch_progress(batch)}


def _agreement(batch: Batch, answers: BatchAnswers, bootstrap: int, seed: int) -> dict[str, Any]:
    import pandas as pd

    from genderbias.crowd.aggregation import compare_methods, majority_vote
    from genderbias.crowd.agreement import agreement_report

    frame = answers.frame
    # No judgments: every figure undefined, counts zero (the library's report of an empty frame).
    report = agreement_report(frame, bootstrap=0 if frame.empty else bootstrap, seed=seed)
    disagreements: list[dict[str, Any]] = []
    worker_confusion: list[dict[str, Any]] = []
    if not frame.empty:
        estimate = answers.dawid_skene
        compared = compare_methods(majority_vote(frame), estimate)
        worker_confusion = [
            {
                "worker": str(worker),
                "accuracy": estimate.worker_accuracy(worker),
                "labels": [str(label) for label in matrix.columns],
                "matrix": [[round(float(v), 4) for v in row] for row in matrix.to_numpy()],
            }
            for worker, matrix in sorted(estimate.confusion.items())
        ]
        disagreements = [
            {
                "qid": str(qid),
                "majority": row["majority"] if isinstance(row["majority"], str) else None,
                "dawid_skene": row["dawid_skene"] if isinstance(row["dawid_skene"], str) else None,
                "ds_posterior": None if pd.isna(row["ds_posterior"]) else float(row["ds_posterior"]),
            }
            for qid, row in compared.iterrows()
        ]
        texts = query_texts(batch, [d["qid"] for d in disagreements])
        for d in disagreements:
            d["query"] = texts.get(d["qid"], "")
    labelled = list(answers.labels.values())
    report["labels"] = {label: labelled.count(label) for label in LABELS}
    report["adjudicated"] = len(answers.rulings)
    report["set_aside"] = answers.set_aside
    report["worker_confusion"] = worker_confusion
    report["batch"] = batch.name
    report["provider"] = batch.provider
    report["method_disagreements"] = disagreements
    report["methods"] = crowd_model_used()
    return report


def crowd_model_used() -> dict[str, str]:
    """The crowd model that computes the Dawid-Skene labels now: its version, its words and the
    CHANGELOG.md entry that made it (kept with the report it computed)."""
    version = methods.CURRENT["crowd_model"]
    since = next((e.heading for e in core_selectors.changelog_entries() if ("crowd_model", version) in e.methods), "")
    return {"crowd_model": version, "crowd_model_text": methods.describe("crowd_model", version), "since": since}


def set_aside_rows(batch: Batch, answers: BatchAnswers | None = None) -> list[dict[str, Any]]:
    """The judged queries of ``batch`` without a label, in natural qid order, kept apart from
    :func:`query_results` so that a page of the table reads a few rows, not every query's."""
    from core.natural import natural_sorted

    answers = answers or BatchAnswers(batch)

    def rows() -> list[dict[str, Any]]:
        kept = ("qid", "query", "counts", "dawid_skene")
        chosen = (r for r in query_results(batch, answers) if r["label"] is None and r["votes"])
        return natural_sorted(({k: r[k] for k in kept} for r in chosen), lambda r: r["qid"])

    return answers_cached(answers, "set_aside_rows", rows)


class SetAsidePages(Sequence):
    """:func:`set_aside_rows` as a sequence kept in pages of ``per_page`` rows per answer version: a
    slice reads the pages it needs only."""

    def __init__(self, batch: Batch, answers: BatchAnswers, per_page: int) -> None:
        self.batch, self.answers, self.per_page = batch, answers, per_page
        self.total = cached_for_answers(
            answers, "set-aside-total", lambda: len(set_aside_rows(self.batch, self.answers))
        )

    def __len__(self) -> int:
        return self.total

    def _page(self, number: int) -> list[dict]:
        start = number * self.per_page
        return cached_for_answers(
            self.answers,
            f"set-aside-page:{self.per_page}:{number}",
            lambda: set_aside_rows(self.batch, self.answers)[start : start + self.per_page],
        )

    def __getitem__(self, index):
        if not isinstance(index, slice):
            index = index + self.total if index < 0 else index
            if not 0 <= index < self.total:
                raise IndexError(index)
            return self[index : index + 1][0]
        start, stop, step = index.indices(self.total)
        if start >= stop:
            return []
        rows = [
            row
            for number in range(start // self.per_page, (stop - 1) // self.per_page + 1)
            for row in self._page(number)
        ]
        first = (start // self.per_page) * self.per_page
        return rows[start - first : stop - first : step]
