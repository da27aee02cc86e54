"""State of Prolific participants (their sessions on this site, groups, webhooks). The tables keep the
names annotation gave them (``annotation_<model>``) before the platform became an app: no data moved."""

from __future__ import annotations

from django.db import models

from annotation.models.crowd import Batch
from core.models import GroupScopedManager
from core.services.connections import open_secret, seal_secret


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
    """A submission of a batch's study as Prolific last listed it (each sync reads the whole list).

    Prolific's own figures of a participant's session — its status (returned, timed out,
    approved...), when it started and was completed — kept so the batch page and API can show
    them beside this site's quality figures (issue 45: what Prolific's dashboard shows). The
    session's work here is the :class:`Assignment` whose ``provider_assignment_id`` is this id.
    """

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


# -- webhooks (issue 32): the workspace's secret, its subscriptions, the events received -------------
class ProlificHookSecret(models.Model):
    """The workspace's webhook secret (``POST /hooks/secrets/``), made once and kept: deliveries are verified with it.

    Prolific keeps one secret per workspace and creating one replaces the old, so it is never
    made again while this row exists (``platforms.prolific.webhooks.services.subscriptions``).
    """

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
    """The workspace's subscription to one event type, delivered to this site's endpoint.

    ``create_attempted`` is committed before ``POST /hooks/subscriptions/`` (which is not safe to
    repeat); ``remote_id`` and ``hook_secret`` (the ``X-Hook-Secret`` that confirms it) as soon as
    Prolific answers. ``confirmed_at`` is set only when this site's confirm call
    (``POST /hooks/subscriptions/{id}/`` with that secret) succeeded -- never because a list shows
    a subscription: one whose secret is unknown (a lost answer) is deleted and made again. After a
    lost answer the subscriptions are listed before anything is created again, so there is never a
    second one. ``updated`` changes with every write and says nothing about deliveries (issue 41).
    """

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
    """A verified webhook delivery acted on, once: inserted in the transaction that schedules its action.

    ``event_id`` (``X-Event-ID``, the same for Prolific's re-deliveries; or the event's id in the
    subscription's event log) is unique, so a duplicate changes nothing. ``signature`` (a SHA-256 of
    the signature's decoded bytes) is kept but not unique: Prolific signs the timestamp and the
    body, not the event id, so two genuine events with the same body in the same second carry the
    same signature (issue 56); each is recorded and only ever causes a re-read. ``recovered``: found
    in the event log (``GET hooks/subscriptions/{id}/events/``), never delivered; such events do not
    make webhooks count as active and say by how much they are behind. ``workspace_id`` is the
    workspace whose secret verified it (or whose log held it). ``metadata`` is kept for
    ``study.has_high_return_rate`` alone (shown to the researcher).
    """

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


# -- participant groups and bonus payments (issue 32) ------------------------------------------
class ParticipantGroup(models.Model):
    """A participant group on Prolific that this site made, recorded before it is asked for.

    ``name`` is how the group is found again on Prolific (unique in the workspace, listed by
    ``GET /participant-groups/``) after a create whose answer was lost: ``create_attempted``
    is committed before ``POST /participant-groups/``, ``group_id`` as soon as it is known.
    Workspace-wide groups (``batch`` empty: the failed-gold block-list) live on; a batch's own
    groups (the allow- and block-lists of its study) are deleted once its study is closed.
    """

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
    """A participant this site puts in a group: recorded (``added`` False) before the call that adds them.

    Prolific ignores adding a member twice, so an unanswered add is simply sent again.
    """

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
