"""State of the quality loop: escalations, training and qualifications, re-offers, worker flags, rulings."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from annotation.models.crowd import Assignment, Batch, BatchPart, BatchQuery, FormPosition, Hit, Worker
from core.models import GroupScopedManager
from genderbias.labels import LABEL_CHOICES


class HitRequest(BatchPart):
    """More answers to a HIT asked of the provider, committed before it is asked: ``unique_token`` (the
    HIT's, then ``token_suffix`` and the row's id) makes an interrupted request finished, not repeated."""

    cost = models.DecimalField(max_digits=10, decimal_places=2)
    applied = models.BooleanField(default=False)
    created = models.DateTimeField(auto_now_add=True)
    token_suffix = ""

    class Meta:
        abstract = True
        ordering = ["batch", "created", "pk"]

    @property
    def unique_token(self) -> str:
        return f"{self.hit.unique_token[:40]}-{self.token_suffix}{self.pk}"


class Escalation(HitRequest):
    """Extra assignments requested for a HIT with disputed queries."""

    batch = models.ForeignKey(Batch, on_delete=models.CASCADE, related_name="escalations")
    hit = models.ForeignKey(Hit, on_delete=models.CASCADE, related_name="escalations")
    added = models.PositiveSmallIntegerField()
    assignments_before = models.PositiveSmallIntegerField()
    disputed = models.JSONField(default=list, help_text="qids that were disputed")
    token_suffix = "esc"

    def __str__(self) -> str:
        return f"{self.hit}: +{self.added}"


class TrainingQuery(FormPosition, BatchPart):
    """A query of the batch's qualification step: a known label, shown before a worker's first HIT."""

    batch = models.ForeignKey(Batch, on_delete=models.CASCADE, related_name="training_queries")
    qid = models.CharField(max_length=100)
    text = models.TextField()
    label = models.CharField(max_length=1, choices=LABEL_CHOICES)

    class Meta:
        ordering = ["batch", "position"]
        constraints = [
            models.UniqueConstraint(fields=["batch", "position"], name="unique_training_position"),
            models.UniqueConstraint(fields=["batch", "qid"], name="unique_training_qid"),
        ]

    def __str__(self) -> str:
        return f"{self.batch.name} training {self.position}: {self.text}"


class Qualification(BatchPart):
    """A worker's one attempt at a batch's training queries: passed or not, and what they were told. One
    per (batch, worker): a second submission changes nothing."""

    batch = models.ForeignKey(Batch, on_delete=models.CASCADE, related_name="qualifications_taken")
    worker = models.ForeignKey(Worker, on_delete=models.CASCADE, related_name="qualifications")
    correct = models.PositiveSmallIntegerField()
    total = models.PositiveSmallIntegerField()
    passed = models.BooleanField()
    answers = models.JSONField(default=dict, help_text="q-<position> -> label, as posted.")
    feedback = models.TextField(blank=True)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["batch", "created"]
        constraints = [models.UniqueConstraint(fields=["batch", "worker"], name="one_qualification_per_worker")]

    def __str__(self) -> str:
        return f"{self.worker} on {self.batch.name}: {self.correct}/{self.total}"


class Reoffer(HitRequest):
    """A rejected assignment's place offered again (:mod:`annotation.quality.services.reoffers`), one per
    assignment. Also the place of a calibration sample's answer the echo check holds out of the
    reference, on any platform: the HIT wants one answer more."""

    batch = models.ForeignKey(Batch, on_delete=models.CASCADE, related_name="reoffers")
    hit = models.ForeignKey(Hit, on_delete=models.CASCADE, related_name="reoffers")
    assignment = models.OneToOneField(Assignment, on_delete=models.CASCADE, related_name="reoffer")
    token_suffix = "re"

    def __str__(self) -> str:
        return f"{self.hit}: place of {self.assignment.provider_assignment_id} offered again"


class WorkerFlag(BatchPart):
    """A worker of a batch below a quality threshold (:mod:`annotation.quality.services.thresholds`):
    flagged (warn) or blocked, with the reason."""

    class Level(models.TextChoices):
        WARN = "warn", "Flagged"
        BLOCK = "block", "Blocked"

    batch = models.ForeignKey(Batch, on_delete=models.CASCADE, related_name="worker_flags")
    worker = models.ForeignKey(Worker, on_delete=models.CASCADE, related_name="flags")
    level = models.CharField(max_length=5, choices=Level.choices)
    reason = models.CharField(max_length=300)
    provider_blocked = models.BooleanField(default=False)
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["batch", "worker"]
        constraints = [models.UniqueConstraint(fields=["batch", "worker"], name="one_flag_per_worker_and_batch")]

    def __str__(self) -> str:
        return f"{self.worker} in {self.batch}: {self.level} ({self.reason})"


class Adjudication(models.Model):
    """A researcher's ruling on one query of a batch: it replaces the crowd's vote. One per query, so
    the label used is never ambiguous."""

    batch_query = models.OneToOneField(BatchQuery, on_delete=models.CASCADE, related_name="adjudication")
    label = models.CharField(max_length=1, choices=LABEL_CHOICES)
    reason = models.TextField(help_text="Why the researcher settled on this label.")
    decided_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    decided_at = models.DateTimeField()

    scope_via = "batch_query"  # its research group is its batch query's
    objects = GroupScopedManager()

    class Meta:
        ordering = ["batch_query"]

    def __str__(self) -> str:
        return f"{self.batch_query.qid}: {self.label} (adjudicated)"
