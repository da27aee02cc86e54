"""The qualification step: a short training set with feedback before a worker's first HIT of a batch.

Answered on this site before the worker's first HIT, scored once with every wrong answer told; only a
worker with at least ``Batch.training_pass_fraction`` right is handed the batch's HITs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from django.db import IntegrityError, transaction
from django.db.models import Exists, OuterRef, QuerySet

from annotation.crowd.providers.base import platform_label, provider_class
from annotation.crowd.services.batch_settings import BatchSettings, GoldQuery
from annotation.crowd.services.hooks import created
from annotation.models import Batch, Qualification, TrainingQuery, Worker
from core.errors import ServiceError
from genderbias.labels import LABEL_NAMES, LABELS

#: Wrong answers named in the feedback (all of them for a short training set).
FEEDBACK_MISSES = 20


@created.register
def store_training(batch: Batch, settings: BatchSettings, *, training: Sequence[GoldQuery]) -> None:
    """Give a new batch its training queries, if it has any (in ``create_batch``'s transaction)."""
    if not training:
        return
    if not provider_class(batch.provider).trains_workers:
        raise ServiceError(
            f"the training step runs on this site, and {platform_label(batch.provider)} workers do not come "
            "here before their first HIT: see docs/quality.md"
        )
    pass_fraction = settings.training_pass_fraction
    if not 0 < pass_fraction <= 1:
        raise ServiceError("the training pass fraction must be in (0, 1]")
    clashes = {q.qid for q in training} & set(batch.queries.values_list("qid", flat=True))
    if clashes:
        raise ServiceError(f"training qid(s) also asked in the batch: {', '.join(sorted(clashes)[:5])}")
    TrainingQuery.objects.bulk_create(
        [
            TrainingQuery(batch=batch, position=i, qid=q.qid, text=q.text, label=q.label)
            for i, q in enumerate(training, start=1)
        ]
    )
    Batch.objects.filter(pk=batch.pk).update(training_pass_fraction=pass_fraction)
    batch.training_pass_fraction = pass_fraction


def qualified_batches(batches: QuerySet, worker: Worker) -> QuerySet:
    """``batches`` without those whose training ``worker`` has not passed."""
    has_training = Exists(TrainingQuery.objects.filter(batch=OuterRef("pk")))
    passed = Exists(Qualification.objects.filter(batch=OuterRef("pk"), worker=worker, passed=True))
    return batches.exclude(has_training & ~passed)


def training_rows(batches: QuerySet, worker: Worker | int) -> QuerySet:
    """The published batches of ``batches`` (those open to ``worker`` already: a training's answer key is
    for them alone) with what :func:`plan_of` needs, in one query."""
    return (
        batches.filter(status=Batch.Status.PUBLISHED)
        .annotate(
            has_training=Exists(TrainingQuery.objects.filter(batch=OuterRef("pk"))),
            taken=Exists(Qualification.objects.filter(batch=OuterRef("pk"), worker=worker)),
            passed=Exists(Qualification.objects.filter(batch=OuterRef("pk"), worker=worker, passed=True)),
        )
        .order_by("created", "pk")
        .only("pk", "name", "assignment_duration", "created")
    )


def plan_of(rows) -> tuple[Batch | None, list[Batch]]:
    """From the rows of :func:`training_rows`: the first batch whose training the worker has not taken
    (``None``: none), and those the hand-out may give (training passed or none), oldest first."""
    due, qualified = None, []
    for batch in rows:
        if batch.has_training and not batch.taken and due is None:
            due = batch
        if batch.passed or not batch.has_training:
            qualified.append(batch)
    return due, qualified


def submit_training(batch: Batch, worker: Worker, answers: Mapping[str, str]) -> Qualification:
    """Score the worker's training answers once; a repeated submission returns the first result."""
    existing = Qualification.objects.filter(batch=batch, worker=worker).first()
    if existing is not None:
        return existing
    queries = list(batch.training_queries.order_by("position"))
    if not queries:
        raise ServiceError(f"batch {batch.name!r} has no training step")
    misses = []
    for q in queries:
        given = answers.get(q.field_name, "")
        if given not in LABELS:
            raise ServiceError(f"{q.field_name}: choose one of the four categories")
        if given != q.label:
            misses.append((q, given))
    correct = len(queries) - len(misses)
    passed = correct >= batch.training_pass_fraction * len(queries) - 1e-9
    details = "; ".join(
        f'"{q.text[:100]}" is {LABEL_NAMES[q.label]}, you answered {LABEL_NAMES[given]}'
        for q, given in misses[:FEEDBACK_MISSES]
    )
    feedback = f"{correct} of {len(queries)} right" + (f": {details}." if details else ".")
    try:
        with transaction.atomic():
            return Qualification.objects.create(
                batch=batch,
                worker=worker,
                correct=correct,
                total=len(queries),
                passed=passed,
                answers={q.field_name: answers.get(q.field_name, "") for q in queries},
                feedback=feedback,
            )
    except IntegrityError:  # the same form posted twice at once: the first one counts
        return Qualification.objects.get(batch=batch, worker=worker)


def qualification_of(batch: Batch, worker: Worker) -> Qualification | None:
    return Qualification.objects.filter(batch=batch, worker=worker).first()
