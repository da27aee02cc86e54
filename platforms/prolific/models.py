"""State of Prolific participants (their sessions on this site, groups, webhooks). The tables keep the
names annotation gave them (``annotation_<model>``) before the platform became an app: no data moved."""

from __future__ import annotations

from django.db import models

from annotation.models.crowd import Batch
from core.models import GroupScopedManager
from core.services.connections import open_secret, seal_secret


class ProlificSession(models.Model):
    """A Prolific session (``SESSION_ID``) that Prolific confirmed belongs to this batch's study and participant:
    the answer cached, and bound to the browser that first opened it (``browser``: SHA-256 of a secret kept
    in its session), so a session id seen by someone else opens nothing."""

    session_id = models.CharField(max_length=64, unique=True)
    batch = models.ForeignKey(Batch, on_delete=models.CASCADE, related_name="prolific_sessions")
    participant_id = models.CharField(max_length=64)
    status = models.CharField(max_length=30, help_text="The session's status on Prolific when it was checked.")
    browser = models.CharField(max_length=64, help_text="SHA-256 of the secret of the browser that opened it.")
    verified_at = models.DateTimeField(auto_now_add=True)
    turned_away_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="When the site had no task for this session and sent the participant back to return the study.",
    )

    scope_via = "batch"  # its research group is its batch's
    objects = GroupScopedManager()

    class Meta:
        db_table = "annotation_prolificsession"  # the table annotation made: no data moves

    def __str__(self) -> str:
        return f"{self.session_id} ({self.participant_id})"


class ProlificSubmission(models.Model):
    """A submission of a batch's study as Prolific last listed it (status, start, completion), shown beside this
    site's quality figures; its work here is the ``Assignment`` whose ``provider_assignment_id`` is this id."""

    submission_id = models.CharField(max_length=64, unique=True)
    batch = models.ForeignKey(Batch, on_delete=models.CASCADE, related_name="prolific_submissions")
    participant_id = models.CharField(max_length=64)
    status = models.CharField(max_length=30)
    started_at = models.DateTimeField(null=True, blank=True)
    completed_at = models.DateTimeField(null=True, blank=True)
    listed_at = models.DateTimeField(help_text="When a sync last read it from Prolific.")

    scope_via = "batch"  # its research group is its batch's
    objects = GroupScopedManager()

    class Meta:
        db_table = "annotation_prolificsubmission"  # the table annotation made: no data moves
        indexes = [models.Index(fields=["batch", "status"], name="prolific_submission_status")]

    def __str__(self) -> str:
        return f"{self.submission_id} ({self.status})"


# -- webhooks: the workspace's secret, its subscriptions, the events received -------------
class ProlificHookSecret(models.Model):
    """The workspace's webhook secret, made once and kept (a new one would replace it on Prolific)."""

    workspace_id = models.CharField(max_length=64, unique=True)
    secret_id = models.CharField(max_length=64, blank=True)
    #: The secret sealed with the connections key (core.services.connections.seal_secret), never in
    #: plaintext: a copy of the database (a backup) is not enough to forge webhooks.
    sealed = models.TextField()
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "annotation_prolifichooksecret"  # the table annotation made: no data moves

    def __str__(self) -> str:
        return f"webhook secret of workspace {self.workspace_id}"

    @property
    def value(self) -> str:
        """The secret, opened with the connections key."""
        return open_secret(self.sealed)

    @value.setter
    def value(self, secret: str) -> None:
        self.sealed = seal_secret(secret)


class ProlificSubscription(models.Model):
    """The workspace's subscription to one event type (its protocol: ``webhooks.services.subscriptions``).
    ``confirmed_at``: only when this site's confirm call succeeded; ``updated`` says nothing of deliveries."""

    workspace_id = models.CharField(max_length=64)
    event_type = models.CharField(max_length=100)
    target_url = models.CharField(max_length=500)
    remote_id = models.CharField(max_length=64, blank=True)
    hook_secret = models.CharField(max_length=200, blank=True)
    confirmed_at = models.DateTimeField(
        null=True, blank=True, help_text="When this site's confirm call with the X-Hook-Secret succeeded."
    )
    create_attempted = models.DateTimeField(null=True, blank=True)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "annotation_prolificsubscription"  # the table annotation made: no data moves
        constraints = [
            models.UniqueConstraint(fields=["workspace_id", "event_type"], name="one_subscription_per_event_type")
        ]

    def __str__(self) -> str:
        return f"{self.event_type} -> {self.target_url}"

    @property
    def confirmed(self) -> bool:
        """Whether this site's confirm call succeeded (``confirmed_at``)."""
        return self.confirmed_at is not None


class ProlificEvent(models.Model):
    """A verified webhook event acted on once: ``event_id`` unique, ``signature`` not (events alike in one
    second share it); ``recovered``: read from the event log, never delivered."""

    event_id = models.CharField(max_length=100, unique=True)
    signature = models.CharField(max_length=64, blank=True, db_index=True)
    recovered = models.BooleanField(default=False, help_text="Found in Prolific's event log, never delivered.")
    event_type = models.CharField(max_length=100)
    resource_id = models.CharField(max_length=64)
    workspace_id = models.CharField(max_length=64, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    signed_at = models.DateTimeField(help_text="X-Prolific-Request-Timestamp of the delivery.")
    received = models.DateTimeField(auto_now_add=True)
    batch = models.ForeignKey(Batch, on_delete=models.SET_NULL, null=True, blank=True, related_name="prolific_events")
    job_id = models.IntegerField(
        null=True, blank=True, help_text="The re-read (a core Job) this event scheduled or joined."
    )

    class Meta:
        db_table = "annotation_prolificevent"  # the table annotation made: no data moves
        ordering = ["received", "pk"]
        indexes = [
            # The last verified event of a workspace (webhooks active or not), and the high-return-rate
            # warnings the dashboard reads every few seconds, without reading every event.
            models.Index(fields=["workspace_id", "received"], name="prolific_event_workspace"),
            models.Index(fields=["event_type", "batch"], name="prolific_event_type_batch"),
        ]

    def __str__(self) -> str:
        return f"{self.event_type} {self.resource_id} ({self.event_id})"


# -- participant groups ------------------------------------------
class ParticipantGroup(models.Model):
    """A participant group on Prolific that this site made, recorded before it is asked for (``name`` finds it
    again; ``groups.services``). ``batch`` empty: the workspace's failed-gold group, which lives on."""

    class Role(models.TextChoices):
        EXCLUDE = "exclude", "block-list: took part in other batches"
        ALLOW = "allow", "allow-list: took part in other batches"
        GOLD_FAILED = "gold_failed", "block-list: failed a batch's gold threshold"

    name = models.CharField(max_length=200, unique=True)
    role = models.CharField(max_length=20, choices=Role.choices)
    batch = models.ForeignKey(Batch, null=True, blank=True, on_delete=models.CASCADE, related_name="prolific_groups")
    group_id = models.CharField(max_length=64, blank=True)
    create_attempted = models.DateTimeField(null=True, blank=True)
    delete_attempted = models.DateTimeField(null=True, blank=True)
    deleted = models.BooleanField(default=False)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "annotation_participantgroup"  # the table annotation made: no data moves
        ordering = ["created", "pk"]

    def __str__(self) -> str:
        return f"{self.name} ({self.group_id or 'not created yet'})"


class GroupMember(models.Model):
    """A participant this site puts in a group: recorded (``added`` False) before the call that adds them."""

    group = models.ForeignKey(ParticipantGroup, on_delete=models.CASCADE, related_name="members")
    participant_id = models.CharField(max_length=64)
    added = models.BooleanField(default=False)
    #: Why they are in it (e.g. the batch whose gold they failed).
    reason = models.CharField(max_length=200, blank=True)

    class Meta:
        db_table = "annotation_groupmember"  # the table annotation made: no data moves
        constraints = [models.UniqueConstraint(fields=["group", "participant_id"], name="one_membership_per_group")]

    def __str__(self) -> str:
        return f"{self.participant_id} in {self.group.name}"
