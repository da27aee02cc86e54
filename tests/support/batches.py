"""Batches the tests (and the benchmarks that drive the site at size) build in one step.

:func:`made_up_batch`: a batch over made-up queries, not yet published. :func:`answered_batch`: a
published in-house batch whose every HIT has three answers (or as many as asked) from a simulated crowd, bulk-inserted
(thousands of queries in seconds, for what must cost the same at any size).
"""

from __future__ import annotations

from decimal import Decimal

import numpy as np
from django.db import transaction
from django.utils import timezone

from annotation import services
from annotation.crowd.services.pseudonyms import worker_for
from annotation.models import Assignment, Batch, Hit, HitQuery, Judgment, Provider
from genderbias.labels import LABELS
from pooling.models import QuerySet
from pooling.services import create_query_set


def made_up_batch(name: str, queries: int, batch_settings: services.BatchSettings) -> Batch:
    """A batch called ``name`` over a new query set of ``queries`` made-up queries (not yet published)."""
    query_set = create_query_set(
        name, [(str(i), f"benchmark query {i}") for i in range(queries)], origin=QuerySet.Origin.IMPORTED
    )
    return services.create_batch(name, batch_settings, query_set=query_set)


def answered_batch(name: str, query_set: QuerySet, *, worker_prefix: str = "", answers: int = 3) -> Batch:
    """A published in-house batch whose every HIT has ``answers`` answers (three) from a simulated crowd
    (true labels 45% non-gendered; each annotator right 85% of the time)."""
    rng = np.random.default_rng(0)
    batch_settings = services.BatchSettings(
        provider="local", assignments_per_query=answers, queries_per_hit=10, reward=Decimal("0.05")
    )
    with transaction.atomic():
        batch = services.create_batch(name, batch_settings, query_set=query_set)
        services.publish_batch(batch)
        workers = [worker_for(Provider.LOCAL, f"{worker_prefix}annotator-{i}") for i in range(30)]
        hits = list(batch.hits.order_by("position"))
        queries_of: dict[int, list[tuple[int, str]]] = {}
        for hit_id, batch_query_id, qid in HitQuery.objects.filter(hit__batch=batch).values_list(
            "hit_id", "batch_query_id", "batch_query__qid"
        ):
            queries_of.setdefault(hit_id, []).append((batch_query_id, qid))
        now = timezone.now()
        made = Assignment.objects.bulk_create(
            [
                Assignment(
                    hit=hit,
                    worker=workers[(hit.position * answers + k) % len(workers)],
                    provider_assignment_id=f"{name}-{hit.pk}-{k}",
                    status=Assignment.Status.SUBMITTED,
                    accepted_at=now,
                    submitted_at=now,
                    valid=True,
                )
                for hit in hits
                for k in range(answers)
            ],
            batch_size=2000,
        )
        truth = {}
        judgments = []
        for assignment in made:
            for batch_query_id, qid in queries_of[assignment.hit_id]:
                true = truth.setdefault(qid, LABELS[0] if rng.random() < 0.45 else str(rng.choice(LABELS[1:])))
                label = true if rng.random() < 0.85 else str(rng.choice([x for x in LABELS if x != true]))
                judgments.append(Judgment(assignment=assignment, batch_query_id=batch_query_id, label=label))
        Judgment.objects.bulk_create(judgments, batch_size=5000)
        Hit.objects.filter(batch=batch).update(status=Hit.Status.COMPLETE)
    return batch
