"""How good each worker of a batch is, from four angles, side by side.

gold accuracy over every scored assignment (failed ones included: that is what it is for); agreement
with the *other* workers' majority (:mod:`genderbias.crowd.agreement`); Dawid-Skene accuracy; median
seconds per query; with the worker's flag, if any. Below them, the review queue. Pseudonyms only.
"""

from __future__ import annotations

import hashlib
import statistics
from dataclasses import dataclass
from typing import Any

from django.db.models import Count

from annotation.models import Assignment, Batch, Escalation, HitQuery
from annotation.results.review import next_query, review_rows
from annotation.results.selectors.agreement import agreement
from annotation.results.selectors.gold import gold_discarded
from annotation.results.selectors.labels import BatchAnswers, cached_for_answers, query_results


def worker_quality(batch: Batch, report: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """One row per worker who submitted work in ``batch``, ordered by pseudonym; ``report``: the
    batch's :func:`agreement` when the caller has it already (any bootstrap)."""
    report = report if report is not None else agreement(batch, bootstrap=0)
    agreement_by_worker = {row["worker"]: row for row in report["per_worker"]}
    ds_accuracy = {row["worker"]: row["accuracy"] for row in report["worker_confusion"]}
    # Plain tuples, not a model per assignment; the queries per HIT counted once per HIT.
    per_hit = dict(
        HitQuery.objects.filter(hit__batch=batch).values("hit_id").annotate(n=Count("id")).values_list("hit_id", "n")
    )
    submitted = Assignment.objects.filter(hit__batch=batch, submitted_at__isnull=False)
    fields = ("worker__pseudonym", "worker__blocked", "status", "gold_correct", "gold_total", "accepted_at")
    assignments = submitted.exclude(status=Assignment.Status.VOID).values_list(*fields, "submitted_at", "hit_id")
    rows: dict[str, dict[str, Any]] = {}
    for pseudonym, blocked, status, gold_correct, gold_total, accepted, submitted, hit_id in assignments:
        counts = dict.fromkeys(("assignments", "gold_correct", "gold_total", "rejected"), 0)
        row = rows.setdefault(pseudonym, {"worker": pseudonym, "blocked": blocked, **counts, "_seconds": []})
        row["assignments"] += 1
        row["rejected"] += status == Assignment.Status.REJECTED
        row["gold_correct"] += gold_correct or 0
        row["gold_total"] += gold_total or 0
        queries = per_hit.get(hit_id, 0)
        if accepted and queries:
            row["_seconds"].append((submitted - accepted).total_seconds() / queries)
    flags = {f.worker.pseudonym: f for f in batch.worker_flags.select_related("worker")}
    result = []
    for pseudonym in sorted(rows):
        row = rows[pseudonym]
        seconds = row.pop("_seconds")
        agreed = agreement_by_worker.get(pseudonym, {})
        row |= {
            "gold_accuracy": row["gold_correct"] / row["gold_total"] if row["gold_total"] else None,
            "agreement": agreed.get("rate"),
            "compared": agreed.get("compared", 0),
            "ds_accuracy": ds_accuracy.get(pseudonym),
            "seconds_per_query": statistics.median(seconds) if seconds else None,
            "flag": flags[pseudonym].level if pseudonym in flags else None,
            "flag_reason": flags[pseudonym].reason if pseudonym in flags else "",
        }
        result.append(row)
    return result


# -- the review queue (kept per answer version and set of escalations) ---------------------------
#: Rows of the review queue kept together: a view reads the statuses and the one part it shows.
REVIEW_PART = 50


@dataclass
class ReviewQueue:
    """The review queue as a view reads it: ``rows`` (the queries with a status, in batch order),
    ``total`` (the batch's queries) and, on demand, a whole row (:meth:`full`)."""

    batch: Batch
    answers: BatchAnswers
    key: str
    rows: list[dict]
    total: int

    def full(self, row: dict | None) -> dict | None:
        """``row`` (one of :attr:`rows`) with everything the panel shows."""
        if row is None:
            return None
        part = next(i for i, kept in enumerate(self.rows) if kept["qid"] == row["qid"]) // REVIEW_PART

        def kept_part() -> list[dict]:
            parts = _kept_review_rows(self.batch, self.answers, escalated_qids(self.batch))
            return parts[part] if part < len(parts) else []

        rows = cached_for_answers(self.answers, f"review-rows:{self.key}:{REVIEW_PART}:{part}", kept_part)
        # Not in its part: the part was made again after the escalations changed under the walk.
        return next((kept for kept in rows if kept["qid"] == row["qid"]), None) or review_row(
            self.batch, row["qid"], self.answers
        )

    def find(self, qid: str) -> dict | None:
        """The whole row of query ``qid``, whatever its status (one without a status is not kept)."""
        row = next((row for row in self.rows if row["qid"] == qid), None)
        return self.full(row) if row is not None else review_row(self.batch, qid, self.answers)


def _kept_review_rows(batch: Batch, answers: BatchAnswers, escalated: set[str]) -> list[list[dict]]:
    """The whole rows of the queries that have a status, each with its ``index``, in parts of :data:`REVIEW_PART`."""
    rows = review_rows(query_results(batch, answers), escalated, gold_failed_qids(batch))
    kept = [row | {"index": index} for index, row in enumerate(rows) if row["statuses"]]
    return [kept[start : start + REVIEW_PART] for start in range(0, len(kept), REVIEW_PART)]


def review_queue(batch: Batch) -> ReviewQueue:
    """The queue of the queries a researcher looks at again, kept per answer version and set of
    escalated queries (escalations are not answers: read at each view)."""
    answers = BatchAnswers(batch)
    escalated = escalated_qids(batch)
    key = hashlib.sha256(",".join(sorted(escalated)).encode()).hexdigest()[:16]

    def queue() -> dict:
        total = batch.queries.filter(is_gold=False).count()
        parts = _kept_review_rows(batch, answers, escalated)
        for part, rows in enumerate(parts):  # kept now: the first view of each part reads no results
            cached_for_answers(answers, f"review-rows:{key}:{REVIEW_PART}:{part}", lambda rows=rows: rows)
        walk = [
            {"qid": row["qid"], "statuses": row["statuses"], "index": row["index"]} for rows in parts for row in rows
        ]
        return {"rows": walk, "total": total}

    found = cached_for_answers(answers, f"review-queue:{key}", queue)
    return ReviewQueue(batch, answers, key, found["rows"], found["total"])


def review_row(batch: Batch, qid: str, answers: BatchAnswers | None = None) -> dict | None:
    """A query's row whatever its status (one without a status is not in the queue)."""
    rows = review_rows(query_results(batch, answers), escalated_qids(batch), gold_failed_qids(batch))
    return next((row for row in rows if row["qid"] == qid), None)


def following_query(batch: Batch, rows: list[dict], status: str, after: str) -> dict | None:
    """:func:`next_query` over the queue; a query ``after`` without a status is placed in batch order first."""
    if all(row["qid"] != after for row in rows):
        position = batch.queries.filter(is_gold=False, qid=after).values_list("position", flat=True).first()
        if position is not None:
            index = batch.queries.filter(is_gold=False, position__lt=position).count()
            rows = sorted([*rows, {"qid": after, "statuses": [], "index": index}], key=lambda row: row["index"])
    return next_query(rows, status, after)


def escalated_qids(batch: Batch) -> set[str]:
    """qids that were among the disputed queries of any escalation of ``batch``."""
    return {
        str(qid)
        for disputed in Escalation.objects.filter(batch=batch).values_list("disputed", flat=True)
        for qid in disputed
    }


def gold_failed_qids(batch: Batch) -> set[str]:
    """qids of real queries with answers uncounted for failing gold (:func:`gold_discarded`)."""
    return set(gold_discarded(batch).values_list("batch_query__qid", flat=True).distinct())
