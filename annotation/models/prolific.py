"""State of Prolific participants: their sessions on this site and the bonuses paid to them."""

from __future__ import annotations

from django.db import models

from annotation.models.crowd import Assignment, Batch


class ProlificSession(models.Model):
    """A Prolific session (``SESSION_ID``) that Prolific confirmed belongs to this batch's study and participant.

    A study URL can be typed by anyone, so an arrival is served only after
    ``GET /submissions/{id}/`` answered with this study and this participant; the row
    caches that answer (reloads do not ask again) and binds the session to the browser
    that first opened it (``browser`` is a SHA-256 of a random secret kept in that
    browser's session), so a session id seen by someone else opens nothing.
    """

    session_id = models.CharField(max_length=64, unique=True)
    batch = models.ForeignKey(Batch, on_delete=models.CASCADE, related_name="prolific_sessions")
    participant_id = models.CharField(max_length=64)
    status = models.CharField(max_length=30, help_text="The session's status on Prolific when it was checked.")
    browser = models.CharField(max_length=64, help_text="SHA-256 of the secret of the browser that opened it.")
    verified_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.session_id} ({self.participant_id})"


class Bonus(models.Model):
    """A bonus owed to a Prolific participant for approved work, recorded before it is paid.

    ``bulk_id`` is saved when Prolific has set the payment up and ``pay_attempted`` just
    before the (non-idempotent) pay call: a bonus with ``pay_attempted`` but not ``paid``
    is never paid again automatically (see ``annotation.prolific.services``).
    """

    assignment = models.OneToOneField(Assignment, on_delete=models.PROTECT, related_name="bonus")
    amount = models.DecimalField(max_digits=8, decimal_places=2)
    bulk_id = models.CharField(max_length=100, blank=True)
    pay_attempted = models.DateTimeField(null=True, blank=True)
    paid = models.BooleanField(default=False)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created", "pk"]

    def __str__(self) -> str:
        return f"bonus {self.amount} for {self.assignment}"


# -- webhooks (issue 32): the workspace's secret, its subscriptions, the events received -------------
class ProlificHookSecret(models.Model):
    """The workspace's webhook secret (``POST /hooks/secrets/``), made once and kept: deliveries are verified with it.

    Prolific keeps one secret per workspace and creating one replaces the old, so it is never
    made again while this row exists (``annotation.prolific.webhooks.services.subscriptions``).
    """

    workspace_id = models.CharField(max_length=64, unique=True)
    secret_id = models.CharField(max_length=64, blank=True)
    value = models.CharField(max_length=200)
    created = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"webhook secret of workspace {self.workspace_id}"


class ProlificSubscription(models.Model):
    """The workspace's subscription to one event type, delivered to this site's endpoint.

    ``create_attempted`` is committed before ``POST /hooks/subscriptions/`` (which is not safe to
    repeat); ``remote_id`` and ``hook_secret`` (the ``X-Hook-Secret`` that confirms it) as soon as
    Prolific answers; ``confirmed`` once it delivers. After a lost answer the subscriptions are
    listed before anything is created again, so there is never a second one.
    """

    workspace_id = models.CharField(max_length=64)
    event_type = models.CharField(max_length=100)
    target_url = models.CharField(max_length=500)
    remote_id = models.CharField(max_length=64, blank=True)
    hook_secret = models.CharField(max_length=200, blank=True)
    confirmed = models.BooleanField(default=False)
    create_attempted = models.DateTimeField(null=True, blank=True)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["workspace_id", "event_type"], name="one_subscription_per_event_type")
        ]

    def __str__(self) -> str:
        return f"{self.event_type} -> {self.target_url}"


class ProlificEvent(models.Model):
    """A verified webhook delivery acted on, once: inserted in the transaction that schedules its action.

    ``event_id`` (``X-Event-ID``, the same for Prolific's re-deliveries) and ``signature`` (a
    SHA-256 of the signature header: the same signed request replayed under another event id)
    are unique, so a duplicate or a replay changes nothing.
    """

    event_id = models.CharField(max_length=100, unique=True)
    signature = models.CharField(max_length=64, unique=True)
    event_type = models.CharField(max_length=100)
    resource_id = models.CharField(max_length=64)
    signed_at = models.DateTimeField(help_text="X-Prolific-Request-Timestamp of the delivery.")
    received = models.DateTimeField(auto_now_add=True)
    batch = models.ForeignKey(Batch, on_delete=models.SET_NULL, null=True, blank=True, related_name="prolific_events")
    job_id = models.IntegerField(
        null=True, blank=True, help_text="The re-read (a core Job) this event scheduled or joined."
    )

    class Meta:
        ordering = ["received", "pk"]

    def __str__(self) -> str:
        return f"{self.event_type} {self.resource_id} ({self.event_id})"
