"""State of the annotation app: batches of HITs, the crowd's answers, workers and exports.

One module per sub-domain, re-exported here (``from annotation.models import Batch``): the
app label, table names and migrations are the app's, wherever a model is declared.

- :mod:`.crowd` -- batches, their queries, HITs, assignments, judgments, workers (what is
  snapshotted and kept as it came, and who a worker is: its docstring);
- :mod:`.inhouse` -- the access epoch of accounts;
- :mod:`.bonuses` -- the bonuses paid to any crowd's workers (Prolific's own state: ``platforms.prolific.models``);
- :mod:`.quality` -- escalations, training, qualifications, re-offers, flags, rulings;
- :mod:`.results` -- exports;
- :mod:`.machine` -- pre-labels, their answers, routings;
- :mod:`.audit` -- expert audit samples of a batch and their labels.
"""

from annotation.models.audit import AuditItem, AuditSample
from annotation.models.bonuses import BonusPayment
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
from annotation.models.machine import EchoRestore, PreLabel, PreLabelAnswer, Routing
from annotation.models.quality import Adjudication, Escalation, Qualification, Reoffer, TrainingQuery, WorkerFlag
from annotation.models.results import AnswerUse, Export

__all__ = [
    "FREES_PLACE",
    "Account",
    "AccountState",
    "Adjudication",
    "AnswerUse",
    "Assignment",
    "AuditItem",
    "AuditSample",
    "Batch",
    "BatchQuery",
    "BonusPayment",
    "EchoRestore",
    "Escalation",
    "Export",
    "FormPosition",
    "Hit",
    "HitQuery",
    "Judgment",
    "PreLabel",
    "PreLabelAnswer",
    "Provider",
    "Qualification",
    "Reoffer",
    "Routing",
    "TrainingQuery",
    "Worker",
    "WorkerFlag",
    "WorkerIdentity",
]
