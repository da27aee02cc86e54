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
    # How the work is delivered (core.tasks): the Celery task and its arguments after the
    # job's id, so the sweeper can send it again; the id of the last message sent and when;
    # how many deliveries claimed it; who holds it ("host:pid") and when it last said so.
    task = models.CharField(max_length=200, blank=True)
    arguments = models.JSONField(default=list, blank=True)
    message_id = models.CharField(max_length=64, blank=True)
    queued = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveIntegerField(default=0)
    worker = models.CharField(max_length=200, blank=True)
    heartbeat = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created"]

    def __str__(self) -> str:
        return f"{self.kind} #{self.pk} ({self.status})"

    @property
    def redelivered(self) -> bool:
        """Whether an earlier delivery claimed this job and died: its work may be partly or wholly done."""
        return self.attempts > 1

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
