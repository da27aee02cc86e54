"""State of machine labelling: pre-label runs, their answers, and routings of a batch on the machine's confidence."""

from __future__ import annotations

from decimal import Decimal

from django.conf import settings
from django.db import models
from django.db.models import Q

from annotation.models.crowd import Batch, BatchPart, BatchQuery
from core.models import GroupScopedManager
from genderbias.labels import LABEL_CHOICES


class PreLabel(models.Model):
    """A machine's label for a batch query, with its confidence, kept per (query, labeller, model, prompt
    version): a new model or prompt adds rows beside the old ones."""

    batch_query = models.ForeignKey(BatchQuery, on_delete=models.CASCADE, related_name="prelabels")
    labeller = models.CharField(max_length=20)
    model = models.CharField(max_length=200)
    prompt_version = models.CharField(max_length=50)
    label = models.CharField(max_length=1, choices=LABEL_CHOICES)
    confidence = models.FloatField()
    detail = models.JSONField(default=dict, blank=True, help_text="The rule that fired, or the votes.")
    created = models.DateTimeField(auto_now_add=True)

    scope_via = "batch_query"  # its research group is its batch query's
    objects = GroupScopedManager()

    class Meta:
        ordering = ["batch_query", "labeller", "model", "prompt_version"]
        constraints = [
            models.UniqueConstraint(
                fields=["batch_query", "labeller", "model", "prompt_version"], name="unique_prelabel"
            ),
            models.CheckConstraint(condition=Q(confidence__gte=0) & Q(confidence__lte=1), name="prelabel_confidence"),
        ]

    def __str__(self) -> str:
        return f"{self.batch_query.qid}: {self.label} ({self.confidence:.2f}, {self.labeller})"


class PreLabelAnswer(models.Model):
    """A chat model's raw answers to the pre-labelling prompt for one query text (the cache)."""

    model = models.CharField(max_length=200)
    prompt_version = models.CharField(max_length=50)
    text_sha256 = models.CharField(max_length=64)
    text = models.TextField()
    answers = models.JSONField(default=list, help_text="Every answer received, in order; unparseable ones too.")
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    requests = models.PositiveIntegerField(default=0)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["model", "prompt_version", "text_sha256"], name="unique_prelabel_answer")
        ]

    def __str__(self) -> str:
        return f"{self.model} {self.prompt_version}: {self.text[:40]}"


class Routing(BatchPart):
    """A decision to accept the machine's labels above a confidence and send the rest to the crowd, made
    from a blind calibration sample; the accepted queries are frozen here, so that a later sample or
    pre-labelling run never changes them."""

    batch = models.ForeignKey(Batch, on_delete=models.CASCADE, related_name="routings")
    routed_batch = models.OneToOneField(
        Batch, on_delete=models.SET_NULL, null=True, blank=True, related_name="routing_source"
    )
    sample_batch = models.ForeignKey(
        Batch,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="sample_routings",
        help_text="The calibration sample (its last link) the decision was made on.",
    )
    labeller = models.CharField(max_length=20)
    model = models.CharField(max_length=200)
    prompt_version = models.CharField(max_length=50)
    target_accuracy = models.FloatField()
    risk = models.FloatField(
        null=True,
        blank=True,
        help_text="δ of the guarantee (fixed-sequence test); null: the point-estimate rule, no guarantee.",
    )
    conservative = models.BooleanField(default=False, help_text="The CI's lower bound had to meet the target.")
    threshold = models.FloatField(null=True, blank=True, help_text="Lowest accepted confidence; null: none accepted.")
    estimated_accuracy = models.FloatField(null=True, blank=True)
    accuracy_ci = models.JSONField(default=list, blank=True, help_text="[low, high] of the estimated accuracy.")
    accepted = models.JSONField(default=list, blank=True, help_text="qids whose machine label is accepted.")
    methods = models.JSONField(
        default=dict,
        blank=True,
        help_text="The version of each method that made the decision (genderbias.methods).",
    )
    to_humans = models.PositiveIntegerField(default=0)
    over_budget = models.PositiveIntegerField(default=0, help_text="Below the threshold but left out by the budget.")
    cost = models.DecimalField(max_digits=10, decimal_places=2, default=Decimal("0"))
    saving = models.DecimalField(max_digits=10, decimal_places=2, default=Decimal("0"))
    reference = models.JSONField(
        default=dict,
        blank=True,
        help_text="What right meant: the sample's reference rule (votes, cap, until, posterior, text); empty: the "
        "crowd majority of the first votes.",
    )
    stages = models.JSONField(
        default=list,
        blank=True,
        help_text="A cascade's labellers in order, each {labeller, model, prompt_version, floor, threshold, risk, "
        "accepted: qids}; empty: one labeller (the fields above).",
    )
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created"]
        get_latest_by = "created"

    def __str__(self) -> str:
        return f"{self.batch.name}: {len(self.accepted)} accepted at {self.threshold}"


class EchoRestore(BatchPart):
    """A researcher's word that a sample worker the echo check flagged answered as a person after all: the
    worker's answers go back into the calibration sample's reference until the row is deleted."""

    batch = models.ForeignKey(Batch, on_delete=models.CASCADE, related_name="echo_restores")
    worker = models.ForeignKey("annotation.Worker", on_delete=models.CASCADE, related_name="+")
    restored_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    restored_at = models.DateTimeField(auto_now_add=True)
    reason = models.CharField(max_length=2000, blank=True, help_text="Why their answers count after all.")

    class Meta:
        ordering = ["batch", "worker"]
        constraints = [models.UniqueConstraint(fields=["batch", "worker"], name="one_echo_restore_per_worker")]

    def __str__(self) -> str:
        return f"{self.batch.name}: {self.worker} restored"
