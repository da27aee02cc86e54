"""State shared by every app: the progress record of long work."""

from __future__ import annotations

from django.db import models


class Job(models.Model):
    """Progress record of long work (imports, pooling, publishing, reports), for pages to poll."""

    class Status(models.TextChoices):
        PENDING = "pending"
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"

    kind = models.CharField(max_length=50)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    description = models.CharField(max_length=500, blank=True)
    total = models.BigIntegerField(null=True)
    done = models.BigIntegerField(default=0)
    message = models.TextField(blank=True)
    result = models.JSONField(default=dict, blank=True)
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created"]

    def __str__(self) -> str:
        return f"{self.kind} #{self.pk} ({self.status})"

    @property
    def fraction(self) -> float | None:
        if not self.total:
            return None
        return min(1.0, self.done / self.total)


class Lease(models.Model):
    """A named exclusive right to do some work, held by one process at a time (see ``core.leases``)."""

    key = models.CharField(max_length=200, primary_key=True)
    owner = models.CharField(max_length=32, help_text="Random token of the holder; release and takeover compare it.")
    purpose = models.CharField(max_length=200)
    hostname = models.CharField(max_length=255)
    pid = models.IntegerField()
    acquired = models.DateTimeField()
    expires = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.key} ({self.purpose}, {self.hostname}:{self.pid})"
