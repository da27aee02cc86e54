"""annotation's migrations 0001–0019 in one (what a new database runs).

Django runs this squash on a database where none of the migrations it replaces is applied,
and records them all; a database with only some of them applied runs the remaining originals
instead (they stay beside this file until every deployment has passed them). The end state is
the originals' (tests/core/test_migrations.py).

Left out: the data migrations, which only rewrite rows a new database does not have (0008's
completion codes of Prolific batches, 0017's access epochs moved to ``AccountState``). Kept:
the two cache tables 0015 and 0016 make, as ``createcachetable`` makes them.
"""

from decimal import Decimal

import django.contrib.auth.models
import django.db.models.deletion
from django.conf import settings
from django.core.management.commands.createcachetable import Command as CreateCacheTable
from django.db import migrations, models

import core.db.migrations

CACHE_TABLES = ("shared_cache", "results_cache")


def create_cache_tables(apps, schema_editor) -> None:
    command = CreateCacheTable()
    command.verbosity = 0
    for table in CACHE_TABLES:
        command.create_table(schema_editor.connection.alias, table, dry_run=False)


def drop_cache_tables(apps, schema_editor) -> None:
    connection = schema_editor.connection
    existing = set(connection.introspection.table_names())
    with connection.cursor() as cursor:
        for table in CACHE_TABLES:
            if table in existing:
                cursor.execute(f"DROP TABLE {connection.ops.quote_name(table)}")


class Migration(migrations.Migration):
    initial = True

    replaces = [
        ("annotation", "0001_initial"),
        ("annotation", "0002_assignment_abandoned"),
        ("annotation", "0003_hit_publish_attempted"),
        ("annotation", "0004_prolific"),
        ("annotation", "0005_hit_status_complete"),
        ("annotation", "0006_quality"),
        ("annotation", "0007_quality_loop"),
        ("annotation", "0008_prolific_arrivals"),
        ("annotation", "0009_batch_team"),
        ("annotation", "0010_hand_out_indexes"),
        ("annotation", "0011_prelabels"),
        ("annotation", "0012_derived_batches_routing"),
        ("annotation", "0013_routing_sample"),
        ("annotation", "0014_team_state"),
        ("annotation", "0015_prolific_arrivals"),
        ("annotation", "0016_results_cache_table"),
        ("annotation", "0017_account_epoch"),
        ("annotation", "0018_prolific_webhooks"),
        ("annotation", "0019_prolific_groups_bonuses"),
    ]

    dependencies = [
        ("pooling", "0001_initial"),
        ("auth", "0012_alter_user_first_name_max_length"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        core.db.migrations.CreateModels(
            operations=[
                migrations.CreateModel(
                    name="AccountState",
                    fields=[
                        (
                            "user",
                            models.OneToOneField(
                                on_delete=django.db.models.deletion.CASCADE,
                                primary_key=True,
                                related_name="account_state",
                                serialize=False,
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                        (
                            "access_epoch",
                            models.PositiveIntegerField(
                                default=0,
                                help_text="Raised whenever the account's rights change (active, staff, superuser, annotators group): every session and one-time link made before stops working for good (annotation.accounts).",
                            ),
                        ),
                    ],
                ),
                migrations.CreateModel(
                    name="WorkerIdentity",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        (
                            "provider",
                            models.CharField(
                                choices=[
                                    ("local", "In-house annotators (this site)"),
                                    ("mturk", "Amazon Mechanical Turk"),
                                    ("prolific", "Prolific"),
                                ],
                                max_length=20,
                            ),
                        ),
                        (
                            "external_id",
                            models.CharField(help_text="MTurk WorkerId, or the local username.", max_length=255),
                        ),
                        ("created", models.DateTimeField(auto_now_add=True)),
                        (
                            "user",
                            models.OneToOneField(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="annotation_identity",
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                    ],
                    options={
                        "verbose_name_plural": "worker identities",
                        "constraints": [
                            models.UniqueConstraint(fields=("provider", "external_id"), name="unique_worker_identity")
                        ],
                    },
                ),
                migrations.CreateModel(
                    name="Worker",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("pseudonym", models.CharField(max_length=40, unique=True)),
                        (
                            "provider",
                            models.CharField(
                                choices=[
                                    ("local", "In-house annotators (this site)"),
                                    ("mturk", "Amazon Mechanical Turk"),
                                    ("prolific", "Prolific"),
                                ],
                                max_length=20,
                            ),
                        ),
                        ("blocked", models.BooleanField(default=False)),
                        ("created", models.DateTimeField(auto_now_add=True)),
                        (
                            "identity",
                            models.OneToOneField(
                                on_delete=django.db.models.deletion.PROTECT,
                                related_name="worker",
                                to="annotation.workeridentity",
                            ),
                        ),
                    ],
                    options={
                        "ordering": ["pseudonym"],
                    },
                ),
                migrations.CreateModel(
                    name="Batch",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("name", models.SlugField(max_length=100, unique=True)),
                        (
                            "provider",
                            models.CharField(
                                choices=[
                                    ("local", "In-house annotators (this site)"),
                                    ("mturk", "Amazon Mechanical Turk"),
                                    ("prolific", "Prolific"),
                                ],
                                max_length=20,
                            ),
                        ),
                        ("assignments_per_query", models.PositiveSmallIntegerField(default=3)),
                        ("queries_per_hit", models.PositiveSmallIntegerField(default=10)),
                        (
                            "reward",
                            models.DecimalField(
                                decimal_places=2, help_text="USD per assignment (one HIT, one worker).", max_digits=8
                            ),
                        ),
                        ("lifetime", models.DurationField(help_text="How long HITs stay available.")),
                        ("assignment_duration", models.DurationField(help_text="Time a worker has for one HIT.")),
                        (
                            "auto_approval_delay",
                            models.DurationField(help_text="MTurk approves a submitted assignment after this long."),
                        ),
                        (
                            "qualifications",
                            models.JSONField(
                                blank=True,
                                default=dict,
                                help_text="locales, min_approval_rate, min_approved_hits, masters",
                            ),
                        ),
                        (
                            "gold_per_hit",
                            models.PositiveSmallIntegerField(
                                default=0, help_text="Gold questions mixed into every HIT."
                            ),
                        ),
                        (
                            "gold_pass_fraction",
                            models.FloatField(
                                default=1.0, help_text="Share of a HIT's gold questions a worker must get right."
                            ),
                        ),
                        (
                            "gold_feedback",
                            models.BooleanField(
                                default=True,
                                help_text="Tell a worker who fails the gold questions which ones and their right answers.",
                            ),
                        ),
                        (
                            "warn_gold_accuracy",
                            models.FloatField(
                                blank=True, help_text="Flag workers below this gold accuracy.", null=True
                            ),
                        ),
                        (
                            "block_gold_accuracy",
                            models.FloatField(
                                blank=True, help_text="Block workers below this gold accuracy.", null=True
                            ),
                        ),
                        (
                            "warn_agreement",
                            models.FloatField(
                                blank=True,
                                help_text="Flag workers who agree with the others' majority less often than this.",
                                null=True,
                            ),
                        ),
                        (
                            "block_agreement",
                            models.FloatField(
                                blank=True,
                                help_text="Block workers who agree with the others' majority less often than this.",
                                null=True,
                            ),
                        ),
                        (
                            "min_answers_judged",
                            models.PositiveSmallIntegerField(
                                default=10,
                                help_text="Gold answers (or compared judgments) a worker needs before a threshold applies.",
                            ),
                        ),
                        (
                            "extra_budget",
                            models.DecimalField(
                                blank=True,
                                decimal_places=2,
                                help_text="USD that re-offers and escalations may add to the estimate; None: no limit.",
                                max_digits=10,
                                null=True,
                            ),
                        ),
                        (
                            "escalate_until",
                            models.CharField(
                                blank=True,
                                help_text='Escalate at every sync until "majority" or "posterior:P" is reached ("": only by hand).',
                                max_length=30,
                            ),
                        ),
                        (
                            "escalation_cap",
                            models.PositiveSmallIntegerField(
                                default=7, help_text="Most assignments a HIT is escalated to."
                            ),
                        ),
                        (
                            "training_pass_fraction",
                            models.FloatField(
                                default=0.8,
                                help_text="Share of the training queries a worker must get right before their first HIT.",
                            ),
                        ),
                        ("title", models.CharField(default="Is this search query about a gender?", max_length=200)),
                        (
                            "description",
                            models.CharField(
                                default="Read short web search queries and say whether each is about women, men, several genders or none.",
                                max_length=500,
                            ),
                        ),
                        (
                            "keywords",
                            models.CharField(default="categorization, gender, search queries", max_length=200),
                        ),
                        (
                            "status",
                            models.CharField(
                                choices=[
                                    ("draft", "Draft"),
                                    ("published", "Published"),
                                    ("cancelled", "Cancelled"),
                                    ("completed", "Completed"),
                                ],
                                default="draft",
                                max_length=10,
                            ),
                        ),
                        (
                            "hit_type_id",
                            models.CharField(
                                blank=True, help_text="MTurk HIT type id, or the Prolific study id.", max_length=100
                            ),
                        ),
                        (
                            "prepare_attempted",
                            models.DateTimeField(
                                blank=True,
                                help_text="When preparing it on the provider (e.g. creating the study) was last tried.",
                                null=True,
                            ),
                        ),
                        (
                            "provider_options",
                            models.JSONField(
                                blank=True,
                                default=dict,
                                help_text="Prolific: estimated_minutes, devices, filters, bonus, exclude_batches, completion_code.",
                            ),
                        ),
                        (
                            "cost",
                            models.JSONField(
                                blank=True, default=dict, help_text="Cost estimate when created (strings of USD)."
                            ),
                        ),
                        (
                            "purpose",
                            models.CharField(
                                blank=True,
                                choices=[
                                    ("", "crowd"),
                                    ("calibration", "blind calibration sample"),
                                    ("routed", "queries the machine was unsure of"),
                                ],
                                default="",
                                max_length=12,
                            ),
                        ),
                        (
                            "derivation",
                            models.JSONField(
                                blank=True,
                                default=dict,
                                help_text="How a derived batch was drawn: the pre-labeller, its strata and the seed (calibration).",
                            ),
                        ),
                        ("created", models.DateTimeField(auto_now_add=True)),
                        ("published", models.DateTimeField(blank=True, null=True)),
                        (
                            "parent",
                            models.ForeignKey(
                                blank=True,
                                help_text="The machine-labelled batch whose queries this one sends to the crowd (calibration, routed).",
                                null=True,
                                on_delete=django.db.models.deletion.PROTECT,
                                related_name="derived",
                                to="annotation.batch",
                            ),
                        ),
                        (
                            "pool",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.PROTECT,
                                related_name="annotation_batches",
                                to="pooling.pool",
                            ),
                        ),
                        (
                            "query_set",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.PROTECT,
                                related_name="annotation_batches",
                                to="pooling.queryset",
                            ),
                        ),
                        (
                            "team",
                            models.ManyToManyField(
                                blank=True,
                                help_text="In-house annotators who may work on this local batch; none: every annotator.",
                                related_name="annotation_team_batches",
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                    ],
                    options={
                        "verbose_name_plural": "batches",
                        "ordering": ["-created"],
                        "constraints": [
                            models.CheckConstraint(
                                condition=models.Q(
                                    ("query_set__isnull", False), ("pool__isnull", False), _connector="OR"
                                ),
                                name="batch_has_a_source",
                            ),
                            models.CheckConstraint(
                                condition=models.Q(("reward__gte", Decimal("0.01"))), name="batch_reward_positive"
                            ),
                        ],
                    },
                ),
                migrations.CreateModel(
                    name="Hit",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("position", models.PositiveIntegerField(help_text="1-based order within the batch.")),
                        (
                            "provider_id",
                            models.CharField(blank=True, help_text="e.g. the MTurk HITId.", max_length=100, null=True),
                        ),
                        (
                            "publish_attempted",
                            models.DateTimeField(
                                blank=True,
                                help_text="When creating it on the provider was last tried (set before the call).",
                                null=True,
                            ),
                        ),
                        (
                            "unique_token",
                            models.CharField(help_text="MTurk UniqueRequestToken.", max_length=64, unique=True),
                        ),
                        ("max_assignments", models.PositiveSmallIntegerField()),
                        (
                            "status",
                            models.CharField(
                                choices=[
                                    ("pending", "Not yet on the provider"),
                                    ("open", "Open"),
                                    ("complete", "All assignments in"),
                                    ("expired", "Expired"),
                                ],
                                default="pending",
                                max_length=10,
                            ),
                        ),
                        ("created", models.DateTimeField(auto_now_add=True)),
                        (
                            "batch",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE, related_name="hits", to="annotation.batch"
                            ),
                        ),
                    ],
                    options={
                        "ordering": ["batch", "position"],
                        "indexes": [
                            models.Index(fields=["batch", "status", "position"], name="hit_batch_status_position")
                        ],
                        "constraints": [
                            models.UniqueConstraint(fields=("batch", "position"), name="unique_hit_position"),
                            models.UniqueConstraint(
                                condition=models.Q(("provider_id__isnull", False)),
                                fields=("batch", "provider_id"),
                                name="unique_provider_hit",
                            ),
                        ],
                    },
                ),
                migrations.CreateModel(
                    name="Assignment",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("provider_assignment_id", models.CharField(max_length=100, unique=True)),
                        (
                            "status",
                            models.CharField(
                                choices=[
                                    ("assigned", "Handed out, not submitted"),
                                    ("submitted", "Submitted"),
                                    ("approved", "Approved"),
                                    ("rejected", "Rejected"),
                                    ("abandoned", "Time ran out before it was submitted"),
                                    ("void", "Not a session the provider knows"),
                                ],
                                default="assigned",
                                max_length=10,
                            ),
                        ),
                        ("accepted_at", models.DateTimeField(blank=True, null=True)),
                        ("submitted_at", models.DateTimeField(blank=True, null=True)),
                        ("reviewed_at", models.DateTimeField(blank=True, null=True)),
                        (
                            "raw_answer",
                            models.TextField(
                                blank=True, help_text="The answer as received (MTurk's XML, or the posted form)."
                            ),
                        ),
                        (
                            "valid",
                            models.BooleanField(help_text="Every query answered with a known category.", null=True),
                        ),
                        ("gold_correct", models.PositiveSmallIntegerField(blank=True, null=True)),
                        ("gold_total", models.PositiveSmallIntegerField(blank=True, null=True)),
                        (
                            "gold_passed",
                            models.BooleanField(help_text="Null when the HIT had no gold questions.", null=True),
                        ),
                        (
                            "feedback",
                            models.TextField(blank=True, help_text="Sent to the worker with an approval or rejection."),
                        ),
                        (
                            "hit",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="assignments",
                                to="annotation.hit",
                            ),
                        ),
                        (
                            "worker",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.PROTECT,
                                related_name="assignments",
                                to="annotation.worker",
                            ),
                        ),
                    ],
                    options={
                        "ordering": ["hit", "submitted_at", "pk"],
                        "indexes": [
                            models.Index(fields=["worker", "status"], name="assignment_worker_status"),
                            models.Index(fields=["status", "accepted_at"], name="assignment_status_accepted"),
                        ],
                        "constraints": [
                            models.UniqueConstraint(fields=("hit", "worker"), name="one_assignment_per_worker_and_hit")
                        ],
                    },
                ),
                migrations.CreateModel(
                    name="ProlificHookSecret",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("workspace_id", models.CharField(max_length=64, unique=True)),
                        ("secret_id", models.CharField(blank=True, max_length=64)),
                        ("value", models.CharField(max_length=200)),
                        ("created", models.DateTimeField(auto_now_add=True)),
                    ],
                ),
                migrations.CreateModel(
                    name="Account",
                    fields=[],
                    options={
                        "proxy": True,
                        "indexes": [],
                        "constraints": [],
                    },
                    bases=("auth.user",),
                    managers=[
                        ("objects", django.contrib.auth.models.UserManager()),
                    ],
                ),
                migrations.CreateModel(
                    name="BatchQuery",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("qid", models.CharField(max_length=100)),
                        ("text", models.TextField()),
                        ("position", models.PositiveIntegerField()),
                        ("is_gold", models.BooleanField(default=False)),
                        (
                            "gold_label",
                            models.CharField(
                                blank=True,
                                choices=[
                                    ("n", "Non-gendered"),
                                    ("f", "Female"),
                                    ("m", "Male"),
                                    ("o", "Other or multiple genders"),
                                ],
                                max_length=1,
                            ),
                        ),
                        (
                            "batch",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="queries",
                                to="annotation.batch",
                            ),
                        ),
                        (
                            "query",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="+",
                                to="pooling.query",
                            ),
                        ),
                    ],
                    options={
                        "ordering": ["batch", "is_gold", "position"],
                        "constraints": [
                            models.UniqueConstraint(fields=("batch", "qid"), name="unique_qid_per_batch"),
                            models.CheckConstraint(
                                condition=models.Q(
                                    models.Q(("gold_label", ""), ("is_gold", False)),
                                    models.Q(("is_gold", True), models.Q(("gold_label", ""), _negated=True)),
                                    _connector="OR",
                                ),
                                name="gold_has_label",
                            ),
                        ],
                    },
                ),
                migrations.CreateModel(
                    name="Adjudication",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        (
                            "label",
                            models.CharField(
                                choices=[
                                    ("n", "Non-gendered"),
                                    ("f", "Female"),
                                    ("m", "Male"),
                                    ("o", "Other or multiple genders"),
                                ],
                                max_length=1,
                            ),
                        ),
                        ("reason", models.TextField(help_text="Why the researcher settled on this label.")),
                        ("decided_at", models.DateTimeField()),
                        (
                            "decided_by",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.PROTECT,
                                related_name="+",
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                        (
                            "batch_query",
                            models.OneToOneField(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="adjudication",
                                to="annotation.batchquery",
                            ),
                        ),
                    ],
                    options={
                        "ordering": ["batch_query"],
                    },
                ),
                migrations.CreateModel(
                    name="Bonus",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("amount", models.DecimalField(decimal_places=2, max_digits=8)),
                        ("bulk_id", models.CharField(blank=True, max_length=100)),
                        ("pay_attempted", models.DateTimeField(blank=True, null=True)),
                        ("paid", models.BooleanField(default=False)),
                        ("created", models.DateTimeField(auto_now_add=True)),
                        (
                            "assignment",
                            models.OneToOneField(
                                on_delete=django.db.models.deletion.PROTECT,
                                related_name="bonus",
                                to="annotation.assignment",
                            ),
                        ),
                    ],
                    options={
                        "ordering": ["created", "pk"],
                    },
                ),
                migrations.CreateModel(
                    name="BonusPayment",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("participant_id", models.CharField(max_length=64)),
                        ("submission_id", models.CharField(max_length=64)),
                        ("amount", models.DecimalField(decimal_places=2, max_digits=8)),
                        ("reason", models.CharField(blank=True, max_length=200)),
                        (
                            "state",
                            models.CharField(
                                choices=[
                                    ("owed", "Owed"),
                                    ("set_up", "set up"),
                                    ("paying", "Paying"),
                                    ("paid", "Paid"),
                                ],
                                default="owed",
                                max_length=10,
                            ),
                        ),
                        ("bulk_id", models.CharField(blank=True, max_length=100)),
                        ("pay_attempted", models.DateTimeField(blank=True, null=True)),
                        ("paid_at", models.DateTimeField(blank=True, null=True)),
                        ("created", models.DateTimeField(auto_now_add=True)),
                        (
                            "batch",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.PROTECT,
                                related_name="bonus_payments",
                                to="annotation.batch",
                            ),
                        ),
                    ],
                    options={
                        "ordering": ["created", "pk"],
                        "constraints": [
                            models.UniqueConstraint(
                                fields=("batch", "participant_id"), name="one_bonus_per_batch_participant"
                            )
                        ],
                    },
                ),
                migrations.CreateModel(
                    name="Export",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("path", models.CharField(max_length=1000)),
                        ("card_path", models.CharField(max_length=1000)),
                        (
                            "format",
                            models.CharField(
                                choices=[("tsv", "Tsv"), ("csv", "Csv"), ("jsonl", "Jsonl")], max_length=10
                            ),
                        ),
                        ("category", models.CharField(max_length=20)),
                        ("method", models.CharField(default="majority", max_length=20)),
                        ("queries", models.PositiveIntegerField(help_text="Queries written.")),
                        (
                            "counts",
                            models.JSONField(
                                default=dict, help_text="Labelled queries per label, disputed and set aside."
                            ),
                        ),
                        ("card", models.TextField()),
                        ("created", models.DateTimeField(auto_now_add=True)),
                        (
                            "batch",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="exports",
                                to="annotation.batch",
                            ),
                        ),
                        (
                            "query_set",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="+",
                                to="pooling.queryset",
                            ),
                        ),
                    ],
                    options={
                        "ordering": ["-created"],
                    },
                ),
                migrations.CreateModel(
                    name="Escalation",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("added", models.PositiveSmallIntegerField()),
                        ("assignments_before", models.PositiveSmallIntegerField()),
                        ("disputed", models.JSONField(default=list, help_text="qids that were disputed")),
                        ("cost", models.DecimalField(decimal_places=2, max_digits=10)),
                        ("applied", models.BooleanField(default=False)),
                        ("created", models.DateTimeField(auto_now_add=True)),
                        (
                            "batch",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="escalations",
                                to="annotation.batch",
                            ),
                        ),
                        (
                            "hit",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="escalations",
                                to="annotation.hit",
                            ),
                        ),
                    ],
                    options={
                        "ordering": ["batch", "created", "pk"],
                    },
                ),
                migrations.CreateModel(
                    name="HitQuery",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        (
                            "position",
                            models.PositiveSmallIntegerField(help_text="1-based; the form field is q-<position>."),
                        ),
                        (
                            "batch_query",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="hit_queries",
                                to="annotation.batchquery",
                            ),
                        ),
                        (
                            "hit",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="hit_queries",
                                to="annotation.hit",
                            ),
                        ),
                    ],
                    options={
                        "ordering": ["hit", "position"],
                        "constraints": [
                            models.UniqueConstraint(fields=("hit", "position"), name="unique_position_in_hit"),
                            models.UniqueConstraint(fields=("hit", "batch_query"), name="unique_query_in_hit"),
                        ],
                    },
                ),
                migrations.CreateModel(
                    name="Judgment",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        (
                            "label",
                            models.CharField(
                                blank=True,
                                choices=[
                                    ("n", "Non-gendered"),
                                    ("f", "Female"),
                                    ("m", "Male"),
                                    ("o", "Other or multiple genders"),
                                ],
                                max_length=1,
                                null=True,
                            ),
                        ),
                        ("invalid_reason", models.CharField(blank=True, max_length=200)),
                        (
                            "assignment",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="judgments",
                                to="annotation.assignment",
                            ),
                        ),
                        (
                            "batch_query",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="judgments",
                                to="annotation.batchquery",
                            ),
                        ),
                    ],
                    options={
                        "ordering": ["assignment", "batch_query"],
                        "constraints": [
                            models.UniqueConstraint(
                                fields=("assignment", "batch_query"), name="one_judgment_per_query"
                            ),
                            models.CheckConstraint(
                                condition=models.Q(
                                    models.Q(("invalid_reason", ""), ("label__isnull", False)),
                                    models.Q(("label__isnull", True), models.Q(("invalid_reason", ""), _negated=True)),
                                    _connector="OR",
                                ),
                                name="judgment_label_or_reason",
                            ),
                        ],
                    },
                ),
                migrations.CreateModel(
                    name="ParticipantGroup",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("name", models.CharField(max_length=200, unique=True)),
                        (
                            "role",
                            models.CharField(
                                choices=[
                                    ("exclude", "block-list: took part in other batches"),
                                    ("allow", "allow-list: took part in other batches"),
                                    ("gold_failed", "block-list: failed a batch's gold threshold"),
                                ],
                                max_length=20,
                            ),
                        ),
                        ("group_id", models.CharField(blank=True, max_length=64)),
                        ("create_attempted", models.DateTimeField(blank=True, null=True)),
                        ("delete_attempted", models.DateTimeField(blank=True, null=True)),
                        ("deleted", models.BooleanField(default=False)),
                        ("created", models.DateTimeField(auto_now_add=True)),
                        (
                            "batch",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="prolific_groups",
                                to="annotation.batch",
                            ),
                        ),
                    ],
                    options={
                        "ordering": ["created", "pk"],
                    },
                ),
                migrations.CreateModel(
                    name="GroupMember",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("participant_id", models.CharField(max_length=64)),
                        ("added", models.BooleanField(default=False)),
                        ("reason", models.CharField(blank=True, max_length=200)),
                        (
                            "group",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="members",
                                to="annotation.participantgroup",
                            ),
                        ),
                    ],
                    options={
                        "constraints": [
                            models.UniqueConstraint(fields=("group", "participant_id"), name="one_membership_per_group")
                        ],
                    },
                ),
                migrations.CreateModel(
                    name="PreLabel",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("labeller", models.CharField(max_length=20)),
                        ("model", models.CharField(max_length=200)),
                        ("prompt_version", models.CharField(max_length=50)),
                        (
                            "label",
                            models.CharField(
                                choices=[
                                    ("n", "Non-gendered"),
                                    ("f", "Female"),
                                    ("m", "Male"),
                                    ("o", "Other or multiple genders"),
                                ],
                                max_length=1,
                            ),
                        ),
                        ("confidence", models.FloatField()),
                        (
                            "detail",
                            models.JSONField(blank=True, default=dict, help_text="The rule that fired, or the votes."),
                        ),
                        ("created", models.DateTimeField(auto_now_add=True)),
                        (
                            "batch_query",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="prelabels",
                                to="annotation.batchquery",
                            ),
                        ),
                    ],
                    options={
                        "ordering": ["batch_query", "labeller", "model", "prompt_version"],
                        "constraints": [
                            models.UniqueConstraint(
                                fields=("batch_query", "labeller", "model", "prompt_version"), name="unique_prelabel"
                            ),
                            models.CheckConstraint(
                                condition=models.Q(("confidence__gte", 0), ("confidence__lte", 1)),
                                name="prelabel_confidence",
                            ),
                        ],
                    },
                ),
                migrations.CreateModel(
                    name="PreLabelAnswer",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("model", models.CharField(max_length=200)),
                        ("prompt_version", models.CharField(max_length=50)),
                        ("text_sha256", models.CharField(max_length=64)),
                        ("text", models.TextField()),
                        (
                            "answers",
                            models.JSONField(
                                default=list, help_text="Every answer received, in order; unparseable ones too."
                            ),
                        ),
                        ("prompt_tokens", models.PositiveIntegerField(default=0)),
                        ("completion_tokens", models.PositiveIntegerField(default=0)),
                        ("requests", models.PositiveIntegerField(default=0)),
                        ("updated", models.DateTimeField(auto_now=True)),
                    ],
                    options={
                        "constraints": [
                            models.UniqueConstraint(
                                fields=("model", "prompt_version", "text_sha256"), name="unique_prelabel_answer"
                            )
                        ],
                    },
                ),
                migrations.CreateModel(
                    name="ProlificEvent",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("event_id", models.CharField(max_length=100, unique=True)),
                        ("signature", models.CharField(max_length=64, unique=True)),
                        ("event_type", models.CharField(max_length=100)),
                        ("resource_id", models.CharField(max_length=64)),
                        ("signed_at", models.DateTimeField(help_text="X-Prolific-Request-Timestamp of the delivery.")),
                        ("received", models.DateTimeField(auto_now_add=True)),
                        (
                            "job_id",
                            models.IntegerField(
                                blank=True,
                                help_text="The re-read (a core Job) this event scheduled or joined.",
                                null=True,
                            ),
                        ),
                        (
                            "batch",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="prolific_events",
                                to="annotation.batch",
                            ),
                        ),
                    ],
                    options={
                        "ordering": ["received", "pk"],
                    },
                ),
                migrations.CreateModel(
                    name="ProlificSession",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("session_id", models.CharField(max_length=64, unique=True)),
                        ("participant_id", models.CharField(max_length=64)),
                        (
                            "status",
                            models.CharField(
                                help_text="The session's status on Prolific when it was checked.", max_length=30
                            ),
                        ),
                        (
                            "browser",
                            models.CharField(
                                help_text="SHA-256 of the secret of the browser that opened it.", max_length=64
                            ),
                        ),
                        ("verified_at", models.DateTimeField(auto_now_add=True)),
                        (
                            "batch",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="prolific_sessions",
                                to="annotation.batch",
                            ),
                        ),
                    ],
                ),
                migrations.CreateModel(
                    name="ProlificSubscription",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("workspace_id", models.CharField(max_length=64)),
                        ("event_type", models.CharField(max_length=100)),
                        ("target_url", models.CharField(max_length=500)),
                        ("remote_id", models.CharField(blank=True, max_length=64)),
                        ("hook_secret", models.CharField(blank=True, max_length=200)),
                        ("confirmed", models.BooleanField(default=False)),
                        ("create_attempted", models.DateTimeField(blank=True, null=True)),
                        ("updated", models.DateTimeField(auto_now=True)),
                    ],
                    options={
                        "constraints": [
                            models.UniqueConstraint(
                                fields=("workspace_id", "event_type"), name="one_subscription_per_event_type"
                            )
                        ],
                    },
                ),
                migrations.CreateModel(
                    name="Reoffer",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("cost", models.DecimalField(decimal_places=2, max_digits=10)),
                        ("applied", models.BooleanField(default=False)),
                        ("created", models.DateTimeField(auto_now_add=True)),
                        (
                            "assignment",
                            models.OneToOneField(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="reoffer",
                                to="annotation.assignment",
                            ),
                        ),
                        (
                            "batch",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="reoffers",
                                to="annotation.batch",
                            ),
                        ),
                        (
                            "hit",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="reoffers",
                                to="annotation.hit",
                            ),
                        ),
                    ],
                    options={
                        "ordering": ["batch", "created", "pk"],
                    },
                ),
                migrations.CreateModel(
                    name="Routing",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("labeller", models.CharField(max_length=20)),
                        ("model", models.CharField(max_length=200)),
                        ("prompt_version", models.CharField(max_length=50)),
                        ("target_accuracy", models.FloatField()),
                        (
                            "risk",
                            models.FloatField(
                                blank=True,
                                help_text="δ of the guarantee (fixed-sequence test); null: the point-estimate rule, no guarantee.",
                                null=True,
                            ),
                        ),
                        (
                            "conservative",
                            models.BooleanField(
                                default=False, help_text="The CI's lower bound had to meet the target."
                            ),
                        ),
                        (
                            "threshold",
                            models.FloatField(
                                blank=True, help_text="Lowest accepted confidence; null: none accepted.", null=True
                            ),
                        ),
                        ("estimated_accuracy", models.FloatField(blank=True, null=True)),
                        (
                            "accuracy_ci",
                            models.JSONField(
                                blank=True, default=list, help_text="[low, high] of the estimated accuracy."
                            ),
                        ),
                        (
                            "accepted",
                            models.JSONField(
                                blank=True, default=list, help_text="qids whose machine label is accepted."
                            ),
                        ),
                        ("to_humans", models.PositiveIntegerField(default=0)),
                        (
                            "over_budget",
                            models.PositiveIntegerField(
                                default=0, help_text="Below the threshold but left out by the budget."
                            ),
                        ),
                        ("cost", models.DecimalField(decimal_places=2, default=Decimal("0"), max_digits=10)),
                        ("saving", models.DecimalField(decimal_places=2, default=Decimal("0"), max_digits=10)),
                        ("created", models.DateTimeField(auto_now_add=True)),
                        (
                            "batch",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="routings",
                                to="annotation.batch",
                            ),
                        ),
                        (
                            "routed_batch",
                            models.OneToOneField(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="routing_source",
                                to="annotation.batch",
                            ),
                        ),
                        (
                            "sample_batch",
                            models.ForeignKey(
                                blank=True,
                                help_text="The calibration sample (its last link) the decision was made on.",
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="sample_routings",
                                to="annotation.batch",
                            ),
                        ),
                    ],
                    options={
                        "ordering": ["-created"],
                        "get_latest_by": "created",
                    },
                ),
                migrations.CreateModel(
                    name="TrainingQuery",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        (
                            "position",
                            models.PositiveSmallIntegerField(help_text="1-based; the form field is q-<position>."),
                        ),
                        ("qid", models.CharField(max_length=100)),
                        ("text", models.TextField()),
                        (
                            "label",
                            models.CharField(
                                choices=[
                                    ("n", "Non-gendered"),
                                    ("f", "Female"),
                                    ("m", "Male"),
                                    ("o", "Other or multiple genders"),
                                ],
                                max_length=1,
                            ),
                        ),
                        (
                            "batch",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="training_queries",
                                to="annotation.batch",
                            ),
                        ),
                    ],
                    options={
                        "ordering": ["batch", "position"],
                        "constraints": [
                            models.UniqueConstraint(fields=("batch", "position"), name="unique_training_position"),
                            models.UniqueConstraint(fields=("batch", "qid"), name="unique_training_qid"),
                        ],
                    },
                ),
                migrations.CreateModel(
                    name="Qualification",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("correct", models.PositiveSmallIntegerField()),
                        ("total", models.PositiveSmallIntegerField()),
                        ("passed", models.BooleanField()),
                        ("answers", models.JSONField(default=dict, help_text="q-<position> -> label, as posted.")),
                        ("feedback", models.TextField(blank=True)),
                        ("created", models.DateTimeField(auto_now_add=True)),
                        (
                            "batch",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="qualifications_taken",
                                to="annotation.batch",
                            ),
                        ),
                        (
                            "worker",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="qualifications",
                                to="annotation.worker",
                            ),
                        ),
                    ],
                    options={
                        "ordering": ["batch", "created"],
                        "constraints": [
                            models.UniqueConstraint(fields=("batch", "worker"), name="one_qualification_per_worker")
                        ],
                    },
                ),
                migrations.CreateModel(
                    name="WorkerFlag",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("level", models.CharField(choices=[("warn", "Flagged"), ("block", "Blocked")], max_length=5)),
                        ("reason", models.CharField(max_length=300)),
                        ("provider_blocked", models.BooleanField(default=False)),
                        ("created", models.DateTimeField(auto_now_add=True)),
                        ("updated", models.DateTimeField(auto_now=True)),
                        (
                            "batch",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="worker_flags",
                                to="annotation.batch",
                            ),
                        ),
                        (
                            "worker",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="flags",
                                to="annotation.worker",
                            ),
                        ),
                    ],
                    options={
                        "ordering": ["batch", "worker"],
                        "constraints": [
                            models.UniqueConstraint(fields=("batch", "worker"), name="one_flag_per_worker_and_batch")
                        ],
                    },
                ),
            ],
        ),
        migrations.AddField(
            model_name="hit",
            name="queries",
            field=models.ManyToManyField(
                related_name="hits", through="annotation.HitQuery", to="annotation.batchquery"
            ),
        ),
        migrations.RunPython(create_cache_tables, drop_cache_tables),
    ]
