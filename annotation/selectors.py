"""Selectors: read-only queries over a batch's records, for services of other apps.

Pure reads, no writes: what label sensitivity (``metrics``) needs to know about a batch
beyond its usable judgments (``annotation.services.results.judgments_frame``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .models import Assignment, Batch, Judgment

if TYPE_CHECKING:
    import pandas as pd


def adjudicated_labels(batch: Batch) -> dict[str, str]:
    """qid → the label a researcher decided for a disputed query of ``batch``.

    Empty for now: the adjudication model (a researcher's label and reason for a disputed
    query) is being built alongside and will feed this function; label sensitivity's
    ``adjudicated`` policy reads adjudications through it alone.
    """
    return {}


def gold_labels(batch: Batch) -> dict[str, str]:
    """qid → known label of the batch's gold questions."""
    return dict(batch.queries.filter(is_gold=True).values_list("qid", "gold_label"))


def gold_judgments(batch: Batch) -> pd.DataFrame:
    """Answers to the batch's gold questions (``item``, ``worker`` pseudonym, ``label``), from
    assignments that were submitted or approved — including those that failed their gold
    questions: a wrong answer on a gold item is exactly what seeds a worker's confusion matrix."""
    import pandas as pd

    rows = Judgment.objects.filter(
        batch_query__batch=batch,
        batch_query__is_gold=True,
        label__isnull=False,
        assignment__status__in=[Assignment.Status.SUBMITTED, Assignment.Status.APPROVED],
    ).values_list("batch_query__qid", "assignment__worker__pseudonym", "label")
    return pd.DataFrame(list(rows), columns=["item", "worker", "label"], dtype=object)
