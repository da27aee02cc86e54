"""State of exports: a batch's labelled queries written as a file with its dataset card."""

from __future__ import annotations

from django.db import models

from annotation.models.crowd import Batch, BatchPart
from pooling.models import QuerySet


class Export(BatchPart):
    """A labelled query file written from a batch, with its dataset card."""

    class Format(models.TextChoices):
        TSV = "tsv"
        CSV = "csv"
        JSONL = "jsonl"

    batch = models.ForeignKey(Batch, on_delete=models.CASCADE, related_name="exports")
    path = models.CharField(max_length=1000)
    card_path = models.CharField(max_length=1000)
    format = models.CharField(max_length=10, choices=Format.choices)
    category = models.CharField(max_length=20)
    method = models.CharField(max_length=20, default="majority")
    queries = models.PositiveIntegerField(help_text="Queries written.")
    counts = models.JSONField(default=dict, help_text="Labelled queries per label, disputed and set aside.")
    card = models.TextField()
    query_set = models.ForeignKey(QuerySet, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created"]

    def __str__(self) -> str:
        return f"{self.batch.name}: {self.category} → {self.path}"


class AnswerUse(BatchPart):
    """A reading of a batch's answers that published or decided something: an annotator's correction
    after it is refused, so that what was published never silently differs from the stored answers."""

    batch = models.ForeignKey(Batch, on_delete=models.CASCADE, related_name="answer_uses")
    action = models.CharField(max_length=200, help_text="What read the answers, e.g. 'A dataset'.")
    created = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created"]

    def __str__(self) -> str:
        return f"{self.action} of batch #{self.batch_id}"
