"""Prolific's models, taken over from annotation (its migration 0031) with the tables annotation made
(``db_table``): only Django's state changes, no table is created or touched."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("annotation", "0031_platform_models_to_their_apps"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
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
                    options={
                        "db_table": "annotation_prolifichooksecret",
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
                        "db_table": "annotation_participantgroup",
                        "ordering": ["created", "pk"],
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
                    options={
                        "db_table": "annotation_prolificsession",
                    },
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
                        (
                            "confirmed_at",
                            models.DateTimeField(
                                blank=True,
                                help_text="When this site's confirm call with the X-Hook-Secret succeeded.",
                                null=True,
                            ),
                        ),
                        ("create_attempted", models.DateTimeField(blank=True, null=True)),
                        ("updated", models.DateTimeField(auto_now=True)),
                    ],
                    options={
                        "db_table": "annotation_prolificsubscription",
                        "constraints": [
                            models.UniqueConstraint(
                                fields=("workspace_id", "event_type"), name="one_subscription_per_event_type"
                            )
                        ],
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
                                to="prolific.participantgroup",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "annotation_groupmember",
                        "constraints": [
                            models.UniqueConstraint(fields=("group", "participant_id"), name="one_membership_per_group")
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
                        ("signature", models.CharField(blank=True, db_index=True, max_length=64)),
                        (
                            "recovered",
                            models.BooleanField(
                                default=False, help_text="Found in Prolific's event log, never delivered."
                            ),
                        ),
                        ("event_type", models.CharField(max_length=100)),
                        ("resource_id", models.CharField(max_length=64)),
                        ("workspace_id", models.CharField(blank=True, max_length=64)),
                        ("metadata", models.JSONField(blank=True, default=dict)),
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
                        "db_table": "annotation_prolificevent",
                        "ordering": ["received", "pk"],
                        "indexes": [
                            models.Index(fields=["workspace_id", "received"], name="prolific_event_workspace"),
                            models.Index(fields=["event_type", "batch"], name="prolific_event_type_batch"),
                        ],
                    },
                ),
                migrations.CreateModel(
                    name="ProlificSubmission",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("submission_id", models.CharField(max_length=64, unique=True)),
                        ("participant_id", models.CharField(max_length=64)),
                        ("status", models.CharField(max_length=30)),
                        ("started_at", models.DateTimeField(blank=True, null=True)),
                        ("completed_at", models.DateTimeField(blank=True, null=True)),
                        ("listed_at", models.DateTimeField(help_text="When a sync last read it from Prolific.")),
                        (
                            "batch",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="prolific_submissions",
                                to="annotation.batch",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "annotation_prolificsubmission",
                        "indexes": [models.Index(fields=["batch", "status"], name="prolific_submission_status")],
                    },
                ),
            ],
            database_operations=[],
        ),
    ]
