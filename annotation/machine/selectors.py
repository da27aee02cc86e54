"""Where a query's label comes from: the crowd, a researcher's ruling, or an accepted machine label.

The crowd's label is "a researcher's ruling first, else the majority"
(:func:`.results.crowd_labels`); a batch labelled by a machine first reads its derived
batches' answers as its own (the calibration sample and the routed queries). The queries
routing accepted (:class:`Routing.accepted`) take the machine's label, with its confidence,
unless the crowd labelled them: a crowd label always wins over the machine's
(:func:`.results.labels_with_sources`). This module holds the vocabulary and the machine's
side, and imports no other service, so that every other one may use it.
"""

from __future__ import annotations

from dataclasses import dataclass

from annotation.models import Batch, PreLabel, Routing


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


def latest_routing(batch: Batch) -> Routing | None:
    """The decision in force for ``batch``: its latest routing whose routed batch was not cancelled."""
    return batch.routings.exclude(routed_batch__status=Batch.Status.CANCELLED).select_related("routed_batch").first()


def machine_accepted(batch: Batch) -> dict[str, LabelSource]:
    """The machine labels routing accepted for ``batch`` (none when it was not routed)."""
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
