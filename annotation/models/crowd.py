"""State of a crowd batch: its queries, HITs, assignments, judgments and workers.

A batch snapshots its queries and settings, so later changes to the source never change what was
asked; every answer is kept as it came and as one ``Judgment`` per query (invalid ones with their
reason). Who a worker is lives only in ``WorkerIdentity``, which pages, the API and exports never show.
"""

from __future__ import annotations

from decimal import Decimal

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils.functional import lazy

from annotation.crowd.providers.registry import PLATFORMS, platform_choices, platform_label
from core.models import GroupOwned, GroupScopedManager
from genderbias.labels import LABEL_CHOICES
from pooling.models import Pool, Query, QuerySet

#: The most assignments a HIT is escalated to unless the researcher says otherwise.
DEFAULT_MAX_ASSIGNMENTS = 7


#: The platforms' stored names (``Provider.MTURK == "mturk"``), one per line of ``PLATFORMS``, labelled
#: lazily (the providers' modules import the models).
Provider = models.TextChoices(
    "Provider", [(name.upper(), (name, lazy(platform_label, str)(name))) for name in PLATFORMS]
)


class WorkerIdentity(models.Model):
    """Who a worker really is: restricted to superusers in the admin, never exported."""

    provider = models.CharField(max_length=20, choices=platform_choices)
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


class Worker(models.Model):
    """A crowd worker or in-house annotator, as everything but ``WorkerIdentity`` knows them."""

    pseudonym = models.CharField(max_length=40, unique=True)
    provider = models.CharField(max_length=20, choices=platform_choices)
    identity = models.OneToOneField(WorkerIdentity, on_delete=models.PROTECT, related_name="worker")
    blocked = models.BooleanField(default=False)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["pseudonym"]

    def __str__(self) -> str:
        return self.pseudonym


class Batch(GroupOwned):
    """A set of queries sent to a crowd provider as HITs, with what it pays and who may work on it."""

    group_from = ("parent",)  # a derived batch (sample, routed, extension) is in its parent's research group

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
    provider = models.CharField(max_length=20, choices=platform_choices)
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
    failed_gold_answers = models.CharField(
        max_length=8,
        choices=[("discard", "discard its other answers"), ("keep", "keep its other answers")],
        default="discard",
        help_text="A HIT that failed its gold check: discard its other answers, or keep them (its pay is lost either way).",
    )
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
    escalation_cap = models.PositiveSmallIntegerField(
        default=DEFAULT_MAX_ASSIGNMENTS, help_text="Most assignments a HIT is escalated to."
    )
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


class BatchPart(models.Model):
    """A record of one batch (its ``batch``), in that batch's research group."""

    scope_via = "batch"
    objects = GroupScopedManager()

    class Meta:
        abstract = True


class BatchQuery(BatchPart):
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
        indexes = [
            # The few gold questions of a batch counted without reading its queries (its progress).
            models.Index(fields=["batch"], condition=Q(is_gold=True), name="batchquery_gold"),
        ]

    def __str__(self) -> str:
        return f"{self.qid}: {self.text}"


class Hit(BatchPart):
    """One task page (a few queries) that ``max_assignments`` different workers answer. The row is
    committed before the provider creates the HIT, with a deterministic ``unique_token``, so an
    interrupted publish can be re-run without creating a second HIT."""

    class Status(models.TextChoices):
        PENDING = "pending", "Not yet on the provider"
        OPEN = "open"
        COMPLETE = "complete", "All assignments in"
        EXPIRED = "expired"

    batch = models.ForeignKey(Batch, on_delete=models.CASCADE, related_name="hits")
    position = models.PositiveIntegerField(help_text="1-based order within the batch.")
    # NULL, not "", until published: unpublished HITs must not collide in the unique constraint.
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

    scope_via = "hit"  # its research group is its hit's
    objects = GroupScopedManager()

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
        #: Never counted, reviewed, paid or held against anyone.
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

    scope_via = "hit"  # its research group is its hit's
    objects = GroupScopedManager()

    class Meta:
        ordering = ["hit", "submitted_at", "pk"]
        constraints = [
            # Except after a rejection: a retake (annotation.crowd.selectors.retake_allowed).
            models.UniqueConstraint(
                fields=["hit", "worker"],
                condition=~Q(status="rejected"),
                name="one_assignment_per_worker_and_hit",
            ),
        ]
        indexes = [
            models.Index(fields=["worker", "status"], name="assignment_worker_status"),
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
    # Hand signals (annotation.crowd.services.answers.HAND_SIGNALS); NULL: unknown, never read as zero.
    pastes = models.PositiveIntegerField(null=True, blank=True, help_text="Pastes into the page.")
    tab_leaves = models.PositiveIntegerField(null=True, blank=True, help_text="Times the tab or window was left.")
    item_ms = models.PositiveIntegerField(
        null=True, blank=True, help_text="Milliseconds from the query being shown to its answer."
    )

    scope_via = "assignment"  # its research group is its assignment's
    objects = GroupScopedManager()

    class Meta:
        ordering = ["assignment", "batch_query"]
        constraints = [
            models.UniqueConstraint(fields=["assignment", "batch_query"], name="one_judgment_per_query"),
            models.CheckConstraint(
                condition=Q(label__isnull=False, invalid_reason="") | Q(label__isnull=True) & ~Q(invalid_reason=""),
                name="judgment_label_or_reason",
            ),
        ]
        indexes = [
            # A batch's invalid answers counted without reading any judgment row.
            models.Index(fields=["assignment"], condition=Q(label__isnull=True), name="judgment_invalid"),
        ]

    def __str__(self) -> str:
        return f"{self.batch_query.qid}: {self.label or self.invalid_reason}"
