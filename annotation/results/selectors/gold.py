"""What label sensitivity and the crowd model read of a batch besides its usable judgments: the
researchers' rulings, the gold questions' known labels and answers, and the work failing gold discarded."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.db.models import Q

from annotation.crowd.selectors import crowd_batch_ids
from annotation.models import Adjudication, Assignment, Batch, Judgment
from annotation.results.selectors.labels import votes_frame

if TYPE_CHECKING:
    import pandas as pd


def adjudicated_labels(batch: Batch) -> dict[str, str]:
    """``qid -> label`` of every query of ``batch`` a researcher has settled (label sensitivity's
    ``adjudicated`` policy reads them here alone)."""
    return dict(
        Adjudication.objects.filter(batch_query__batch__in=crowd_batch_ids(batch))
        .order_by("batch_query__position")
        .values_list("batch_query__qid", "label")
    )


def gold_labels(batch: Batch) -> dict[str, str]:
    """qid → known label of the batch's gold questions."""
    return dict(batch.queries.filter(is_gold=True).values_list("qid", "gold_label"))


def gold_judgments(batch: Batch) -> pd.DataFrame:
    """Every answer to the batch's gold questions (``item``, ``worker``, ``label``), from answered work and
    work rejected for failing them: reading only passed work would rate every worker too well."""
    answered = (Assignment.Status.SUBMITTED, Assignment.Status.APPROVED)
    failed = Q(assignment__gold_passed=False, assignment__status=Assignment.Status.REJECTED)
    return votes_frame(
        Judgment.objects.filter(
            Q(assignment__status__in=answered) | failed,
            batch_query__batch__in=crowd_batch_ids(batch),
            batch_query__is_gold=True,
            label__isnull=False,
        )
    )


def gold_discarded(batch: Batch):
    """The uncounted answers to real queries of work that failed its gold check, in ``batch``'s crowd
    batches (none where ``Batch.failed_gold_answers`` keeps them)."""
    return Judgment.objects.filter(
        batch_query__batch__in=crowd_batch_ids(batch), batch_query__is_gold=False, assignment__gold_passed=False
    ).exclude(assignment__hit__batch__failed_gold_answers="keep")


def gold_discarded_assignments(batch: Batch) -> int:
    """How many assignments lost their answers for failing gold (:func:`gold_discarded`): the
    crowd-quality warning then says the labels are a selection."""
    return gold_discarded(batch).values("assignment_id").distinct().count()
