"""State shared by every app: the progress record of long work, leases, API tokens."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone


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
    """A named exclusive right to do some work, held by one process at a time (see ``core.services.leases``)."""

    key = models.CharField(max_length=200, primary_key=True)
    owner = models.CharField(max_length=32, help_text="Random token of the holder; release and takeover compare it.")
    purpose = models.CharField(max_length=200)
    hostname = models.CharField(max_length=255)
    pid = models.IntegerField()
    acquired = models.DateTimeField()
    expires = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.key} ({self.purpose}, {self.hostname}:{self.pid})"


class ApiToken(models.Model):
    """A researcher's API token, one per account, kept only as the SHA-256 digest of its key.

    The key is shown once, when it is made (``core.services.api_tokens``); the database, its backups
    and the admin never hold it. ``lookup`` (the key's first characters) finds the row without
    comparing digests in the query; the digest is then compared in constant time.
    """

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_token")
    lookup = models.CharField(max_length=8, db_index=True, help_text="The key's first characters, to find the row.")
    digest = models.CharField(max_length=64, unique=True, help_text="SHA-256 of the key (hex).")
    created = models.DateTimeField(auto_now_add=True)
    expires = models.DateTimeField(null=True, blank=True, help_text="Empty: never.")

    class Meta:
        verbose_name = "API token"

    def __str__(self) -> str:
        return f"API token of {self.user}"

    def expired(self, now=None) -> bool:
        return self.expires is not None and self.expires <= (now or timezone.now())


class CacheEntry(models.Model):
    """What one entry of a bounded cache (``results``) weighs, so its bound is enforced by the code
    on any backend (the database table or Redis; :mod:`core.db.bounded_cache`): entries past the
    bound are deleted oldest first, and a generation's older versions when a new one is stored."""

    cache = models.CharField(max_length=40)
    key = models.CharField(max_length=1000)
    bytes = models.BigIntegerField()
    #: What the entry belongs to (``batch-17``) and the version it was computed for: storing
    #: another version of the generation removes this one (stale, e.g. older answers).
    generation = models.CharField(max_length=200, blank=True)
    version = models.CharField(max_length=200, blank=True)
    stored = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["cache", "key"], name="cache_entry_unique_key")]
        indexes = [
            models.Index(fields=["cache", "stored"], name="cache_entry_age"),
            models.Index(fields=["cache", "generation"], name="cache_entry_generation"),
        ]

    def __str__(self) -> str:
        return f"{self.cache}:{self.key} ({self.bytes:,} bytes)"


class Connection(models.Model):
    """An outside service's connection as a researcher stored it on the site (``core.connection_kinds``).

    ``values`` holds the plain fields (addresses, ids); ``sealed`` the secret ones, sealed with
    ``CONNECTIONS_KEY`` (:mod:`core.sealing`): the database, its backups and the admin never hold a
    secret in clear. Read through ``core.selectors`` (where environment variables take precedence),
    changed through ``core.services.connections``. ``last_test`` is the Job of its latest test.
    """

    kind = models.CharField(max_length=40, unique=True)
    values = models.JSONField(default=dict, blank=True)
    sealed = models.TextField(blank=True)
    updated = models.DateTimeField(auto_now=True)
    updated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    last_test = models.ForeignKey(Job, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")

    def __str__(self) -> str:
        return f"connection {self.kind}"
