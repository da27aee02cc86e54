"""State of the annotation app, one module per sub-domain, re-exported here: the app label, table names
and migrations are the app's, wherever a model is declared."""

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
    "FREES_PLACE", "Account", "AccountState", "Adjudication", "AnswerUse", "Assignment", "AuditItem", "AuditSample",
    "Batch", "BatchQuery", "BonusPayment", "EchoRestore", "Escalation", "Export", "FormPosition", "Hit", "HitQuery",
    "Judgment", "PreLabel", "PreLabelAnswer", "Provider", "Qualification", "Reoffer", "Routing", "TrainingQuery",
    "Worker", "WorkerFlag", "WorkerIdentity",
]  # fmt: skip
