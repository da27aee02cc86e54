"""State of expert audit samples (:mod:`annotation.audit`): a batch's seeded random sample of queries and
their expert labels, kept so that the sample can be redrawn from its seed and every label traced."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from annotation.models.crowd import Batch, BatchPart, BatchQuery
from core.models import GroupScopedManager
from genderbias.labels import LABEL_CHOICES


class AuditSample(BatchPart):
    """A batch's one audit sample: the first ``size`` queries of its seeded permutation of the batch's queries."""

    batch = models.OneToOneField(Batch, on_delete=models.CASCADE, related_name="audit_sample")
    seed = models.PositiveBigIntegerField()
    size = models.PositiveIntegerField()
    population = models.PositiveIntegerField(help_text="How many queries the sample was drawn from.")
    drawn_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    drawn_at = models.DateTimeField()
    trusted = models.ManyToManyField(
        settings.AUTH_USER_MODEL,
        blank=True,
        related_name="+",
        help_text="Annotators the researcher names as trusted to label this sample.",
    )

    def __str__(self) -> str:
        return f"audit of {self.batch_id}: {self.size} queries, seed {self.seed}"


class AuditItem(models.Model):
    """One audited query, its place in the draw, and its expert label (blank until labelled);
    ``history`` keeps every earlier label."""

    sample = models.ForeignKey(AuditSample, on_delete=models.CASCADE, related_name="items")
    batch_query = models.ForeignKey(BatchQuery, on_delete=models.CASCADE, related_name="audit_items")
    draw_index = models.PositiveIntegerField(help_text="Its place in the draw order, from 0.")
    label = models.CharField(max_length=1, choices=LABEL_CHOICES, blank=True)
    labelled_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    labeller_name = models.CharField(
        max_length=150, blank=True, help_text="Who labelled it, as an imported file names them (else the user's)."
    )
    labelled_at = models.DateTimeField(null=True, blank=True)
    history = models.JSONField(default=list, blank=True)

    scope_via = "sample"
    objects = GroupScopedManager()

    class Meta:
        ordering = ["sample", "draw_index"]
        constraints = [
            models.UniqueConstraint(fields=["sample", "draw_index"], name="unique_audit_draw_index"),
            models.UniqueConstraint(fields=["sample", "batch_query"], name="unique_audit_query"),
        ]

    def __str__(self) -> str:
        return f"{self.batch_query_id} #{self.draw_index}: {self.label or '-'}"
