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
