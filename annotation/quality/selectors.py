"""How good each worker of a batch is, from four angles, side by side.

- gold accuracy: right gold answers / gold questions answered, over every scored
  assignment (failed ones included: that is what the number is for);
- agreement: the per-worker agreement of :mod:`genderbias.crowd.agreement` (``rate``: share of
  the worker's judgments that match the majority of the *other* workers on the item,
  leaving the worker's own vote out; items where the others tie are skipped);
- Dawid-Skene accuracy: the estimated probability that the worker's label is the true
  one (prior-weighted diagonal of their confusion matrix);
- seconds per query: median over the worker's submitted assignments of
  (submitted - accepted) / queries on the HIT, gold included.

Each row also carries the worker's flag in this batch, if the batch's thresholds gave
one (``flag``: "warn" or "block", ``flag_reason``; see :mod:`.services.thresholds`).

Workers appear by pseudonym only. Read-only: nothing here changes state.
"""

from __future__ import annotations

import statistics
from typing import Any

from django.db.models import Count

from annotation.models import Assignment, Batch, HitQuery
from annotation.results.selectors import agreement


def worker_quality(batch: Batch, report: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """One row per worker who submitted work in ``batch``, ordered by pseudonym; ``report``: the
    batch's :func:`agreement` when the caller has it already (its per-worker rows do not depend
    on the bootstrap)."""
    report = report if report is not None else agreement(batch, bootstrap=0)
    agreement_by_worker = {row["worker"]: row for row in report["per_worker"]}
    ds_accuracy = {row["worker"]: row["accuracy"] for row in report["worker_confusion"]}
    # Plain tuples, not a model instance per assignment (a 5,000-query batch has 15,000), and the
    # queries per HIT counted once per HIT, not joined into every assignment's row.
    per_hit = dict(
        HitQuery.objects.filter(hit__batch=batch).values("hit_id").annotate(n=Count("id")).values_list("hit_id", "n")
    )
    # Void work is not the named worker's (see platforms.prolific.services).
    submitted = Assignment.objects.filter(hit__batch=batch, submitted_at__isnull=False)
    fields = ("worker__pseudonym", "worker__blocked", "status", "gold_correct", "gold_total", "accepted_at")
    assignments = submitted.exclude(status=Assignment.Status.VOID).values_list(*fields, "submitted_at", "hit_id")
    rows: dict[str, dict[str, Any]] = {}
    for pseudonym, blocked, status, gold_correct, gold_total, accepted, submitted, hit_id in assignments:
        row = rows.setdefault(
            pseudonym,
            {
                "worker": pseudonym,
                "blocked": blocked,
                "assignments": 0,
                "gold_correct": 0,
                "gold_total": 0,
                "rejected": 0,
                "_seconds": [],
            },
        )
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
