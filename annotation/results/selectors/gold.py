"""What label sensitivity and the crowd model read of a batch besides its usable judgments: the
researchers' rulings, the gold questions' known labels and answers, and the work failing gold discarded."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.db.models import Q

from annotation.crowd.selectors import (
    crowd_batch_ids,
)
from annotation.models import Adjudication, Assignment, Batch, Judgment

if TYPE_CHECKING:
    import pandas as pd


def adjudicated_labels(batch: Batch) -> dict[str, str]:
    """``qid -> label`` of every query of ``batch`` a researcher has settled (see :class:`Adjudication`).

    Label sensitivity's ``adjudicated`` policy reads adjudications through this function alone.
    """
    return dict(
        Adjudication.objects.filter(batch_query__batch__in=crowd_batch_ids(batch))
        .order_by("batch_query__position")
        .values_list("batch_query__qid", "label")
    )


def gold_labels(batch: Batch) -> dict[str, str]:
    """qid → known label of the batch's gold questions."""
    return dict(batch.queries.filter(is_gold=True).values_list("qid", "gold_label"))


def gold_judgments(batch: Batch) -> pd.DataFrame:
    """Answers to the batch's gold questions (``item``, ``worker`` pseudonym, ``label``), from
    assignments that were submitted or approved, and from those that failed their gold questions
    whether still awaiting review or already rejected for it, under either failed-gold rule
    (``Batch.failed_gold_answers``: the rule decides which answers count as labels and which work
    is paid, not what the crowd model learns of the worker). A wrong answer on a gold item is
    exactly what seeds a worker's confusion matrix: reading only the gold answers of assignments
    that passed, the model saw every gold answer right and rated every worker too well (issue 58).
    A worker meets a gold question in every HIT (and in every crowd part of a batch labelled by a
    machine first): each answer is kept, Dawid-Skene counts them all against the known label."""
    import pandas as pd

    answered = (Assignment.Status.SUBMITTED, Assignment.Status.APPROVED)
    failed = Q(assignment__gold_passed=False, assignment__status=Assignment.Status.REJECTED)
    rows = (
        Judgment.objects.filter(
            Q(assignment__status__in=answered) | failed,
            batch_query__batch__in=crowd_batch_ids(batch),
            batch_query__is_gold=True,
            label__isnull=False,
        )
        .order_by("assignment_id", "pk")
        .values_list("batch_query__qid", "assignment__worker__pseudonym", "label")
    )
    return pd.DataFrame(list(rows), columns=["item", "worker", "label"], dtype=object)


def gold_discarded_assignments(batch: Batch) -> int:
    """How many assignments of ``batch`` and its crowd batches lost their answers to real queries for
    failing gold (the batches that discard them, ``Batch.failed_gold_answers``): the crowd model still
    reads their gold answers (:func:`gold_judgments`), and the crowd-quality warning says the labels are
    a selection (:func:`genderbias.crowd.label_probabilities.crowd_quality`, reason ``selected``)."""
    return (
        Judgment.objects.filter(
            batch_query__batch__in=crowd_batch_ids(batch), batch_query__is_gold=False, assignment__gold_passed=False
        )
        .exclude(assignment__hit__batch__failed_gold_answers="keep")
        .values("assignment_id")
        .distinct()
        .count()
    )
