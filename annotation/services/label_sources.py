"""Where each query's label comes from: the crowd, a researcher's ruling, or an accepted machine label.

For an ordinary batch every label is the crowd's: "a researcher's ruling first, else the
majority" (:class:`.results.BatchAnswers`). For a batch labelled by a machine first, the
labels come from its derived batches (the calibration sample and the routed queries, each
with the same rule) and, for the queries routing accepted (:class:`Routing.accepted`), from
the machine, with its confidence. A crowd label always wins over the machine's.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..models import Batch, PreLabel
from .results import BatchAnswers


@dataclass(frozen=True)
class LabelSource:
    """One query's label and where it came from (``source`` is one of :data:`SOURCES`)."""

    label: str
    source: str
    confidence: float | None = None  #: the machine's, for a machine-accepted label


CROWD = "crowd majority"
ADJUDICATED = "adjudicated"
MACHINE = "machine-accepted"
#: Every source, in the order pages and cards list them.
SOURCES = (CROWD, ADJUDICATED, MACHINE)


def _crowd(batch: Batch) -> dict[str, LabelSource]:
    answers = BatchAnswers(batch)
    rulings = answers.rulings
    return {qid: LabelSource(label, ADJUDICATED if qid in rulings else CROWD) for qid, label in answers.labels.items()}


def crowd_labels(batch: Batch) -> dict[str, LabelSource]:
    """The crowd's labels of ``batch``, or of its derived batches for a machine-labelled batch."""
    derived = list(batch.derived.exclude(status=Batch.Status.CANCELLED).order_by("created"))
    if not derived:
        return _crowd(batch)
    labels: dict[str, LabelSource] = {}
    for child in derived:
        labels.update(_crowd(child))
    return labels


def machine_accepted(batch: Batch) -> dict[str, LabelSource]:
    """The machine labels routing accepted for ``batch`` (none when it was not routed)."""
    from .routing import latest_routing

    routing = latest_routing(batch)
    if routing is None or not routing.accepted:
        return {}
    rows = PreLabel.objects.filter(
        batch_query__batch=batch,
        batch_query__qid__in=routing.accepted,
        labeller=routing.labeller,
        model=routing.model,
        prompt_version=routing.prompt_version,
    ).values_list("batch_query__qid", "label", "confidence")
    return {qid: LabelSource(label, MACHINE, confidence) for qid, label, confidence in rows}


def label_sources(batch: Batch) -> dict[str, LabelSource]:
    """``qid -> LabelSource`` of every labelled query of ``batch``: the crowd first, then the machine."""
    return machine_accepted(batch) | crowd_labels(batch)
