"""The bonuses paid to any crowd's workers (one record for every provider)."""

from __future__ import annotations

from django.db import models

from annotation.models.crowd import Assignment, Batch, BatchPart


class BonusPayment(BatchPart):
    """A batch's bonus to one participant: the intent, recorded before any call. States (protocol:
    ``platforms.prolific.bonuses.services``): ``owed`` -> ``set_up`` -> ``paying`` (committed just
    before the non-idempotent pay call: never paid again before the platform's state is read) -> ``paid``."""

    class State(models.TextChoices):
        OWED = "owed"
        SET_UP = "set_up", "set up"
        PAYING = "paying"
        PAID = "paid"

    batch = models.ForeignKey(Batch, on_delete=models.PROTECT, related_name="bonus_payments")
    #: The one assignment this bonus is for, when it was sent for one (empty: a bonus rule's, per participant).
    assignment = models.ForeignKey(
        Assignment, null=True, blank=True, on_delete=models.PROTECT, related_name="bonus_payments"
    )
    participant_id = models.CharField(max_length=64)
    #: The participant's submission (session) in the batch's study: where Prolific shows their bonuses.
    submission_id = models.CharField(max_length=64)
    amount = models.DecimalField(max_digits=8, decimal_places=2)
    reason = models.CharField(max_length=200, blank=True)
    state = models.CharField(max_length=10, choices=State.choices, default=State.OWED)
    bulk_id = models.CharField(max_length=100, blank=True)
    pay_attempted = models.DateTimeField(null=True, blank=True)
    paid_at = models.DateTimeField(null=True, blank=True)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created", "pk"]
        constraints = [
            models.UniqueConstraint(
                fields=["batch", "participant_id"],
                condition=models.Q(assignment__isnull=True),
                name="one_bonus_per_batch_participant",
            ),
            models.UniqueConstraint(
                fields=["assignment"], condition=models.Q(assignment__isnull=False), name="one_bonus_per_assignment"
            ),
        ]

    def __str__(self) -> str:
        return f"bonus {self.amount} to {self.participant_id} ({self.state})"
