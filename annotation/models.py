"""State of the annotation app: batches of HITs, the crowd's answers, workers and exports.

A batch snapshots its queries (``BatchQuery``) and settings when it is created, so later
changes to the source query set or pool never change what was asked. Every answer a
worker gives is kept as it came (``Assignment.raw_answer``) and as one ``Judgment`` per
query, valid or not: an answer that cannot be read is recorded as invalid with its
reason, never guessed.

Workers are known by a pseudonym (a keyed HMAC of provider and id). The real MTurk worker
id or local account lives only in ``WorkerIdentity``, which pages, the API and exports
never show.
"""

from __future__ import annotations

from decimal import Decimal

from django.conf import settings
from django.contrib.auth.models import User
from django.db import models
from django.db.models import Q
from django.utils.crypto import salted_hmac

from pooling.models import Pool, Query, QuerySet

from .labels import LABEL_CHOICES


class Provider(models.TextChoices):
    LOCAL = "local", "In-house annotators (this site)"
    MTURK = "mturk", "Amazon Mechanical Turk"
    PROLIFIC = "prolific", "Prolific"


class WorkerIdentity(models.Model):
    """Who a worker really is: restricted to superusers in the admin, never exported."""

    provider = models.CharField(max_length=20, choices=Provider.choices)
    external_id = models.CharField(max_length=255, help_text="MTurk WorkerId, or the local username.")
    user = models.OneToOneField(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="annotation_identity",
    )
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name_plural = "worker identities"
        constraints = [
            models.UniqueConstraint(fields=["provider", "external_id"], name="unique_worker_identity"),
        ]

    def __str__(self) -> str:
        return f"identity of {self.provider} worker #{self.pk}"


class AccountState(models.Model):
    """Any account's access epoch (annotators and researchers alike): see ``annotation.accounts``.

    Its own row per user, made when the epoch is first raised, so a researcher (no worker
    identity) is covered as an annotator is; no row reads as epoch 0.
    """

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, primary_key=True, related_name="account_state"
    )
    access_epoch = models.PositiveIntegerField(
        default=0,
        help_text="Raised whenever the account's rights change (active, staff, superuser, annotators group): "
        "every session and one-time link made before stops working for good (annotation.accounts).",
    )

    def __str__(self) -> str:
        return f"access epoch {self.access_epoch} of user #{self.user_id}"


class Account(User):
    """A user as the site's sessions and one-time links know them: bound to the account's access epoch.

    ``annotation.accounts.AccountBackend`` reads every session's user as an ``Account`` with
    ``access_epoch`` (its ``AccountState``'s, 0 without one) in the same statement, and
    the session hash Django checks on each request covers it: raising the epoch ends every
    session opened before, and a later reactivation does not bring them back. At epoch 0 the
    hash is Django's own, so sessions opened before the epoch existed keep working.
    """

    #: Overwritten by the backend's annotation; 0 for an object made any other way.
    access_epoch = 0

    class Meta:
        proxy = True

    def _get_session_auth_hash(self, secret=None) -> str:
        # Django's hook behind both get_session_auth_hash and its SECRET_KEY_FALLBACKS variant,
        # so a rotated key still verifies the sessions it made (the tests would fail, not
        # silently pass, if a Django upgrade renamed it: they check a session ends).
        base = super()._get_session_auth_hash(secret=secret)
        if not self.access_epoch:
            return base
        key_salt = "annotation.models.Account.get_session_auth_hash"
        return salted_hmac(key_salt, f"{base}:{self.access_epoch}", secret=secret, algorithm="sha256").hexdigest()


class Worker(models.Model):
    """A crowd worker or in-house annotator, as everything but ``WorkerIdentity`` knows them."""

    pseudonym = models.CharField(max_length=40, unique=True)
    provider = models.CharField(max_length=20, choices=Provider.choices)
    identity = models.OneToOneField(WorkerIdentity, on_delete=models.PROTECT, related_name="worker")
    blocked = models.BooleanField(default=False)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["pseudonym"]

    def __str__(self) -> str:
        return self.pseudonym


class Batch(models.Model):
    """A set of queries sent to a crowd provider as HITs, with what it pays and who may work on it."""

    class Status(models.TextChoices):
        DRAFT = "draft"
        PUBLISHED = "published"
        CANCELLED = "cancelled"
        COMPLETED = "completed"

    class Purpose(models.TextChoices):
        """Why a batch exists: an ordinary crowd batch, or part of machine pre-labelling (``parent``)."""

        CROWD = "", "crowd"
        CALIBRATION = "calibration", "blind calibration sample"
        ROUTED = "routed", "queries the machine was unsure of"

    name = models.SlugField(max_length=100, unique=True)
    query_set = models.ForeignKey(
        QuerySet, on_delete=models.PROTECT, null=True, blank=True, related_name="annotation_batches"
    )
    pool = models.ForeignKey(Pool, on_delete=models.PROTECT, null=True, blank=True, related_name="annotation_batches")
    provider = models.CharField(max_length=20, choices=Provider.choices)
    assignments_per_query = models.PositiveSmallIntegerField(default=3)
    queries_per_hit = models.PositiveSmallIntegerField(default=10)
    reward = models.DecimalField(max_digits=8, decimal_places=2, help_text="USD per assignment (one HIT, one worker).")
    lifetime = models.DurationField(help_text="How long HITs stay available.")
    assignment_duration = models.DurationField(help_text="Time a worker has for one HIT.")
    auto_approval_delay = models.DurationField(help_text="MTurk approves a submitted assignment after this long.")
    qualifications = models.JSONField(
        default=dict, blank=True, help_text="locales, min_approval_rate, min_approved_hits, masters"
    )
    gold_per_hit = models.PositiveSmallIntegerField(default=0, help_text="Gold questions mixed into every HIT.")
    gold_pass_fraction = models.FloatField(
        default=1.0, help_text="Share of a HIT's gold questions a worker must get right."
    )
    gold_feedback = models.BooleanField(
        default=True,
        help_text="Tell a worker who fails the gold questions which ones and their right answers.",
    )
    # Quality thresholds applied at every sync (annotation.services.thresholds); None: not applied.
    warn_gold_accuracy = models.FloatField(null=True, blank=True, help_text="Flag workers below this gold accuracy.")
    block_gold_accuracy = models.FloatField(null=True, blank=True, help_text="Block workers below this gold accuracy.")
    warn_agreement = models.FloatField(
        null=True, blank=True, help_text="Flag workers who agree with the others' majority less often than this."
    )
    block_agreement = models.FloatField(
        null=True, blank=True, help_text="Block workers who agree with the others' majority less often than this."
    )
    min_answers_judged = models.PositiveSmallIntegerField(
        default=10, help_text="Gold answers (or compared judgments) a worker needs before a threshold applies."
    )
    extra_budget = models.DecimalField(
        max_digits=10,
        decimal_places=2,
        null=True,
        blank=True,
        help_text="USD that re-offers and escalations may add to the estimate; None: no limit.",
    )
    escalate_until = models.CharField(
        max_length=30,
        blank=True,
        help_text='Escalate at every sync until "majority" or "posterior:P" is reached ("": only by hand).',
    )
    escalation_cap = models.PositiveSmallIntegerField(default=7, help_text="Most assignments a HIT is escalated to.")
    training_pass_fraction = models.FloatField(
        default=0.8, help_text="Share of the training queries a worker must get right before their first HIT."
    )
    title = models.CharField(max_length=200, default="Is this search query about a gender?")
    description = models.CharField(
        max_length=500,
        default="Read short web search queries and say whether each is about women, men, several genders or none.",
    )
    keywords = models.CharField(max_length=200, default="categorization, gender, search queries")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.DRAFT)
    hit_type_id = models.CharField(max_length=100, blank=True, help_text="MTurk HIT type id, or the Prolific study id.")
    prepare_attempted = models.DateTimeField(
        null=True, blank=True, help_text="When preparing it on the provider (e.g. creating the study) was last tried."
    )
    provider_options = models.JSONField(
        default=dict,
        blank=True,
        help_text="Prolific: estimated_minutes, devices, filters, bonus, exclude_batches, completion_code.",
    )
    cost = models.JSONField(default=dict, blank=True, help_text="Cost estimate when created (strings of USD).")
    parent = models.ForeignKey(
        "self",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="derived",
        help_text="The machine-labelled batch whose queries this one sends to the crowd (calibration, routed).",
    )
    purpose = models.CharField(max_length=12, choices=Purpose.choices, default=Purpose.CROWD, blank=True)
    derivation = models.JSONField(
        default=dict,
        blank=True,
        help_text="How a derived batch was drawn: the pre-labeller, its strata and the seed (calibration).",
    )
    team = models.ManyToManyField(
        settings.AUTH_USER_MODEL,
        blank=True,
        related_name="annotation_team_batches",
        help_text="In-house annotators who may work on this local batch; none: every annotator.",
    )
    created = models.DateTimeField(auto_now_add=True)
    published = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created"]
        verbose_name_plural = "batches"
        constraints = [
            models.CheckConstraint(
                condition=Q(query_set__isnull=False) | Q(pool__isnull=False), name="batch_has_a_source"
            ),
            models.CheckConstraint(condition=Q(reward__gte=Decimal("0.01")), name="batch_reward_positive"),
        ]

    def __str__(self) -> str:
        return self.name


class BatchQuery(models.Model):
    """A query as it was when the batch was made; gold questions carry their known label."""

    batch = models.ForeignKey(Batch, on_delete=models.CASCADE, related_name="queries")
    query = models.ForeignKey(Query, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    qid = models.CharField(max_length=100)
    text = models.TextField()
    position = models.PositiveIntegerField()
    is_gold = models.BooleanField(default=False)
    gold_label = models.CharField(max_length=1, choices=LABEL_CHOICES, blank=True)

    class Meta:
        ordering = ["batch", "is_gold", "position"]
        constraints = [
            models.UniqueConstraint(fields=["batch", "qid"], name="unique_qid_per_batch"),
            models.CheckConstraint(
                condition=Q(is_gold=False, gold_label="") | Q(is_gold=True) & ~Q(gold_label=""),
                name="gold_has_label",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.qid}: {self.text}"


class Hit(models.Model):
    """One task page (a few queries) that ``max_assignments`` different workers answer.

    The row is committed before the provider is asked to create the HIT, and
    ``unique_token`` is deterministic, so a publish interrupted anywhere can be re-run
    without creating a second HIT.
    """

    class Status(models.TextChoices):
        PENDING = "pending", "Not yet on the provider"
        OPEN = "open"
        COMPLETE = "complete", "All assignments in"
        EXPIRED = "expired"

    batch = models.ForeignKey(Batch, on_delete=models.CASCADE, related_name="hits")
    position = models.PositiveIntegerField(help_text="1-based order within the batch.")
    # NULL, not "", until published: "not on the provider yet" must not collide in the unique constraint.
    provider_id = models.CharField(max_length=100, null=True, blank=True, help_text="e.g. the MTurk HITId.")  # noqa: DJ001
    publish_attempted = models.DateTimeField(
        null=True, blank=True, help_text="When creating it on the provider was last tried (set before the call)."
    )
    unique_token = models.CharField(max_length=64, unique=True, help_text="MTurk UniqueRequestToken.")
    max_assignments = models.PositiveSmallIntegerField()
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    queries = models.ManyToManyField(BatchQuery, through="HitQuery", related_name="hits")
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["batch", "position"]
        constraints = [
            models.UniqueConstraint(fields=["batch", "position"], name="unique_hit_position"),
            models.UniqueConstraint(
                fields=["batch", "provider_id"], condition=Q(provider_id__isnull=False), name="unique_provider_hit"
            ),
        ]
        indexes = [
            # The hand-out (services.local.claim_hit) walks a batch's open HITs in order along it.
            models.Index(fields=["batch", "status", "position"], name="hit_batch_status_position"),
        ]

    def __str__(self) -> str:
        return f"{self.batch.name} HIT {self.position}"


class FormPosition(models.Model):
    """A query's place on a HIT-like page: 1-based, and the form field that carries its answer."""

    position = models.PositiveSmallIntegerField(help_text="1-based; the form field is q-<position>.")

    class Meta:
        abstract = True

    @property
    def field_name(self) -> str:
        return f"q-{self.position}"


class HitQuery(FormPosition):
    hit = models.ForeignKey(Hit, on_delete=models.CASCADE, related_name="hit_queries")
    batch_query = models.ForeignKey(BatchQuery, on_delete=models.CASCADE, related_name="hit_queries")

    class Meta:
        ordering = ["hit", "position"]
        constraints = [
            models.UniqueConstraint(fields=["hit", "position"], name="unique_position_in_hit"),
            models.UniqueConstraint(fields=["hit", "batch_query"], name="unique_query_in_hit"),
        ]

    def __str__(self) -> str:
        return f"{self.hit} #{self.position}"


class Assignment(models.Model):
    """One worker's work on one HIT. A local annotator's assignment exists from when it is handed out."""

    class Status(models.TextChoices):
        ASSIGNED = "assigned", "Handed out, not submitted"
        SUBMITTED = "submitted"
        APPROVED = "approved"
        REJECTED = "rejected"
        ABANDONED = "abandoned", "Time ran out before it was submitted"
        #: The provider does not know this session, or gives it to someone else: never counted,
        #: reviewed, paid or held against anyone (see ``annotation.services.prolific``).
        VOID = "void", "Not a session the provider knows"

    hit = models.ForeignKey(Hit, on_delete=models.CASCADE, related_name="assignments")
    provider_assignment_id = models.CharField(max_length=100, unique=True)
    worker = models.ForeignKey(Worker, on_delete=models.PROTECT, related_name="assignments")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.ASSIGNED)
    accepted_at = models.DateTimeField(null=True, blank=True)
    submitted_at = models.DateTimeField(null=True, blank=True)
    reviewed_at = models.DateTimeField(null=True, blank=True)
    raw_answer = models.TextField(blank=True, help_text="The answer as received (MTurk's XML, or the posted form).")
    valid = models.BooleanField(null=True, help_text="Every query answered with a known category.")
    gold_correct = models.PositiveSmallIntegerField(null=True, blank=True)
    gold_total = models.PositiveSmallIntegerField(null=True, blank=True)
    gold_passed = models.BooleanField(null=True, help_text="Null when the HIT had no gold questions.")
    feedback = models.TextField(blank=True, help_text="Sent to the worker with an approval or rejection.")

    class Meta:
        ordering = ["hit", "submitted_at", "pk"]
        constraints = [
            models.UniqueConstraint(fields=["hit", "worker"], name="one_assignment_per_worker_and_hit"),
        ]
        indexes = [
            # A worker's open hand-out and their count of answered HITs, whatever their history.
            models.Index(fields=["worker", "status"], name="assignment_worker_status"),
            # Timed-out hand-outs (services.local._release_abandoned).
            models.Index(fields=["status", "accepted_at"], name="assignment_status_accepted"),
        ]

    def __str__(self) -> str:
        return f"{self.hit} by {self.worker}"


#: Assignment statuses that give the place back: another worker may take it.
FREES_PLACE = (Assignment.Status.REJECTED, Assignment.Status.ABANDONED, Assignment.Status.VOID)


class Judgment(models.Model):
    """One worker's label for one query; ``label`` is empty when the answer was invalid."""

    assignment = models.ForeignKey(Assignment, on_delete=models.CASCADE, related_name="judgments")
    batch_query = models.ForeignKey(BatchQuery, on_delete=models.CASCADE, related_name="judgments")
    # NULL means "no usable answer", which must never be mistaken for a label.
    label = models.CharField(max_length=1, choices=LABEL_CHOICES, null=True, blank=True)  # noqa: DJ001
    invalid_reason = models.CharField(max_length=200, blank=True)

    class Meta:
        ordering = ["assignment", "batch_query"]
        constraints = [
            models.UniqueConstraint(fields=["assignment", "batch_query"], name="one_judgment_per_query"),
            models.CheckConstraint(
                condition=Q(label__isnull=False, invalid_reason="") | Q(label__isnull=True) & ~Q(invalid_reason=""),
                name="judgment_label_or_reason",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.batch_query.qid}: {self.label or self.invalid_reason}"


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
    is never paid again automatically (see ``annotation.services.prolific``).
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


class Escalation(models.Model):
    """Extra assignments requested for a HIT with disputed queries.

    Recorded (committed) before the provider is asked, with a deterministic request token,
    so an interrupted escalation is finished by the next run instead of being repeated.
    """

    batch = models.ForeignKey(Batch, on_delete=models.CASCADE, related_name="escalations")
    hit = models.ForeignKey(Hit, on_delete=models.CASCADE, related_name="escalations")
    added = models.PositiveSmallIntegerField()
    assignments_before = models.PositiveSmallIntegerField()
    disputed = models.JSONField(default=list, help_text="qids that were disputed")
    cost = models.DecimalField(max_digits=10, decimal_places=2)
    applied = models.BooleanField(default=False)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["batch", "created", "pk"]

    def __str__(self) -> str:
        return f"{self.hit}: +{self.added}"

    @property
    def unique_token(self) -> str:
        return f"{self.hit.unique_token[:40]}-esc{self.pk}"


class TrainingQuery(FormPosition):
    """A query of the batch's qualification step: a known label, shown before a worker's first HIT."""

    batch = models.ForeignKey(Batch, on_delete=models.CASCADE, related_name="training_queries")
    qid = models.CharField(max_length=100)
    text = models.TextField()
    label = models.CharField(max_length=1, choices=LABEL_CHOICES)

    class Meta:
        ordering = ["batch", "position"]
        constraints = [
            models.UniqueConstraint(fields=["batch", "position"], name="unique_training_position"),
            models.UniqueConstraint(fields=["batch", "qid"], name="unique_training_qid"),
        ]

    def __str__(self) -> str:
        return f"{self.batch.name} training {self.position}: {self.text}"


class Qualification(models.Model):
    """A worker's one attempt at a batch's training queries: passed or not, and what they were told.

    One per (batch, worker): a second submission of the training page changes nothing, so a
    worker who failed is not given the batch's HITs, and a retry never records twice.
    """

    batch = models.ForeignKey(Batch, on_delete=models.CASCADE, related_name="qualifications_taken")
    worker = models.ForeignKey(Worker, on_delete=models.CASCADE, related_name="qualifications")
    correct = models.PositiveSmallIntegerField()
    total = models.PositiveSmallIntegerField()
    passed = models.BooleanField()
    answers = models.JSONField(default=dict, help_text="q-<position> -> label, as posted.")
    feedback = models.TextField(blank=True)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["batch", "created"]
        constraints = [models.UniqueConstraint(fields=["batch", "worker"], name="one_qualification_per_worker")]

    def __str__(self) -> str:
        return f"{self.worker} on {self.batch.name}: {self.correct}/{self.total}"


class Reoffer(models.Model):
    """A rejected assignment's place offered again on MTurk (CreateAdditionalAssignmentsForHIT).

    Local and Prolific places reopen by themselves when work is rejected or returned; on
    MTurk a rejected assignment's place is gone, so it is added back. Recorded (committed)
    before the provider is asked, one per rejected assignment, with a deterministic request
    token: a retry finishes an interrupted re-offer and never adds a second place.
    ``Hit.max_assignments`` stays the number of answers wanted.
    """

    batch = models.ForeignKey(Batch, on_delete=models.CASCADE, related_name="reoffers")
    hit = models.ForeignKey(Hit, on_delete=models.CASCADE, related_name="reoffers")
    assignment = models.OneToOneField(Assignment, on_delete=models.CASCADE, related_name="reoffer")
    cost = models.DecimalField(max_digits=10, decimal_places=2)
    applied = models.BooleanField(default=False)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["batch", "created", "pk"]

    def __str__(self) -> str:
        return f"{self.hit}: place of {self.assignment.provider_assignment_id} offered again"

    @property
    def unique_token(self) -> str:
        return f"{self.hit.unique_token[:40]}-re{self.pk}"


class WorkerFlag(models.Model):
    """A worker of a batch below a quality threshold: flagged (warn) or blocked, with the reason.

    Written by the sync (``annotation.services.thresholds``). A block is recorded before the
    provider is asked and ``provider_blocked`` set after it answered, so a later sync never
    calls the provider's block a second time.
    """

    class Level(models.TextChoices):
        WARN = "warn", "Flagged"
        BLOCK = "block", "Blocked"

    batch = models.ForeignKey(Batch, on_delete=models.CASCADE, related_name="worker_flags")
    worker = models.ForeignKey(Worker, on_delete=models.CASCADE, related_name="flags")
    level = models.CharField(max_length=5, choices=Level.choices)
    reason = models.CharField(max_length=300)
    provider_blocked = models.BooleanField(default=False)
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["batch", "worker"]
        constraints = [models.UniqueConstraint(fields=["batch", "worker"], name="one_flag_per_worker_and_batch")]

    def __str__(self) -> str:
        return f"{self.worker} in {self.batch}: {self.level} ({self.reason})"


class Export(models.Model):
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


class Adjudication(models.Model):
    """A researcher's ruling on one query of a batch: it replaces the crowd's vote in exports.

    One per query (a second ruling updates the first, keeping who and when of the latest),
    so the label used is never ambiguous. Exports mark adjudicated labels as such.
    """

    batch_query = models.OneToOneField(BatchQuery, on_delete=models.CASCADE, related_name="adjudication")
    label = models.CharField(max_length=1, choices=LABEL_CHOICES)
    reason = models.TextField(help_text="Why the researcher settled on this label.")
    decided_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    decided_at = models.DateTimeField()

    class Meta:
        ordering = ["batch_query"]

    def __str__(self) -> str:
        return f"{self.batch_query.qid}: {self.label} (adjudicated)"


class PreLabel(models.Model):
    """A machine's label for a batch query, with its confidence (``annotation.prelabellers``).

    Kept per (query, labeller, model, prompt version): a new model or prompt adds rows
    beside the old ones; relabelling with the same ones replaces them.
    """

    batch_query = models.ForeignKey(BatchQuery, on_delete=models.CASCADE, related_name="prelabels")
    labeller = models.CharField(max_length=20)
    model = models.CharField(max_length=200)
    prompt_version = models.CharField(max_length=50)
    label = models.CharField(max_length=1, choices=LABEL_CHOICES)
    confidence = models.FloatField()
    detail = models.JSONField(default=dict, blank=True, help_text="The rule that fired, or the votes.")
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["batch_query", "labeller", "model", "prompt_version"]
        constraints = [
            models.UniqueConstraint(
                fields=["batch_query", "labeller", "model", "prompt_version"], name="unique_prelabel"
            ),
            models.CheckConstraint(condition=Q(confidence__gte=0) & Q(confidence__lte=1), name="prelabel_confidence"),
        ]

    def __str__(self) -> str:
        return f"{self.batch_query.qid}: {self.label} ({self.confidence:.2f}, {self.labeller})"


class PreLabelAnswer(models.Model):
    """A chat model's raw answers to the pre-labelling prompt for one query text (the cache)."""

    model = models.CharField(max_length=200)
    prompt_version = models.CharField(max_length=50)
    text_sha256 = models.CharField(max_length=64)
    text = models.TextField()
    answers = models.JSONField(default=list, help_text="Every answer received, in order; unparseable ones too.")
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    requests = models.PositiveIntegerField(default=0)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["model", "prompt_version", "text_sha256"], name="unique_prelabel_answer")
        ]

    def __str__(self) -> str:
        return f"{self.model} {self.prompt_version}: {self.text[:40]}"


class Routing(models.Model):
    """A decision to accept the machine's labels above a confidence and send the rest to the crowd.

    Made from a batch's blind calibration sample (``annotation.services.routing``), which it
    records (``sample_batch``: a later sample never changes it): the threshold, the risk of
    the guarantee (null for routings made on a point estimate), the estimated accuracy of the
    accepted labels with its CI, and which queries were accepted (frozen here, so a later
    pre-labelling run does not change them).
    """

    batch = models.ForeignKey(Batch, on_delete=models.CASCADE, related_name="routings")
    routed_batch = models.OneToOneField(
        Batch, on_delete=models.SET_NULL, null=True, blank=True, related_name="routing_source"
    )
    sample_batch = models.ForeignKey(
        Batch,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="sample_routings",
        help_text="The calibration sample (its last link) the decision was made on.",
    )
    labeller = models.CharField(max_length=20)
    model = models.CharField(max_length=200)
    prompt_version = models.CharField(max_length=50)
    target_accuracy = models.FloatField()
    risk = models.FloatField(
        null=True,
        blank=True,
        help_text="δ of the guarantee (fixed-sequence test); null: the point-estimate rule, no guarantee.",
    )
    conservative = models.BooleanField(default=False, help_text="The CI's lower bound had to meet the target.")
    threshold = models.FloatField(null=True, blank=True, help_text="Lowest accepted confidence; null: none accepted.")
    estimated_accuracy = models.FloatField(null=True, blank=True)
    accuracy_ci = models.JSONField(default=list, blank=True, help_text="[low, high] of the estimated accuracy.")
    accepted = models.JSONField(default=list, blank=True, help_text="qids whose machine label is accepted.")
    to_humans = models.PositiveIntegerField(default=0)
    over_budget = models.PositiveIntegerField(default=0, help_text="Below the threshold but left out by the budget.")
    cost = models.DecimalField(max_digits=10, decimal_places=2, default=Decimal("0"))
    saving = models.DecimalField(max_digits=10, decimal_places=2, default=Decimal("0"))
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created"]
        get_latest_by = "created"

    def __str__(self) -> str:
        return f"{self.batch.name}: {len(self.accepted)} accepted at {self.threshold}"
