"""State of the annotation app: batches of HITs, the crowd's answers, workers and exports.

A batch snapshots its queries (``BatchQuery``) and settings when it is created, so later
changes to the source query set or pool never change what was asked. Every answer a
worker gives is kept as it came (``Assignment.raw_answer``) and as one ``Judgment`` per
query, valid or not: an answer that cannot be read is recorded as invalid with its
reason, never guessed.

Workers are known by a pseudonym (a keyed HMAC of provider and id). The real MTurk worker
id or local account lives only in ``WorkerIdentity``, which pages, the API and exports
never show.

One module per sub-domain, re-exported here (``from annotation.models import Batch``): the
app label, table names and migrations are the app's, wherever a model is declared.

- :mod:`.crowd` -- batches, their queries, HITs, assignments, judgments, workers;
- :mod:`.inhouse` -- the access epoch of accounts;
- :mod:`.prolific` -- Prolific sessions and bonuses;
- :mod:`.quality` -- escalations, training, qualifications, re-offers, flags, rulings;
- :mod:`.results` -- exports;
- :mod:`.machine` -- pre-labels, their answers, routings.
"""

from annotation.models.crowd import (
    FREES_PLACE,
    Assignment,
    Batch,
    BatchQuery,
    FormPosition,
    Hit,
    HitQuery,
    Judgment,
    Provider,
    Worker,
    WorkerIdentity,
)
from annotation.models.inhouse import Account, AccountState
from annotation.models.machine import PreLabel, PreLabelAnswer, Routing
from annotation.models.prolific import Bonus, ProlificSession
from annotation.models.quality import Adjudication, Escalation, Qualification, Reoffer, TrainingQuery, WorkerFlag
from annotation.models.results import Export

__all__ = [
    "FREES_PLACE",
    "Account",
    "AccountState",
    "Adjudication",
    "Assignment",
    "Batch",
    "BatchQuery",
    "Bonus",
    "Escalation",
    "Export",
    "FormPosition",
    "Hit",
    "HitQuery",
    "Judgment",
    "PreLabel",
    "PreLabelAnswer",
    "ProlificSession",
    "Provider",
    "Qualification",
    "Reoffer",
    "Routing",
    "TrainingQuery",
    "Worker",
    "WorkerFlag",
    "WorkerIdentity",
]
