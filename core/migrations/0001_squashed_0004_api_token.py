"""core's migrations 0001–0004 in one (what a new database runs).

Django runs this squash on a database where none of the migrations it replaces is applied,
and records them all; a database with only some of them applied runs the remaining originals
instead (they stay beside this file until every deployment has passed them). The end state is
the originals' (tests/core/test_migrations.py).

Left out: 0004's carrying over of DRF tokens (a new database has no ``authtoken_token``).
"""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

import core.db.migrations


class Migration(migrations.Migration):
    initial = True

    replaces = [
        ("core", "0001_initial"),
        ("core", "0002_lease"),
        ("core", "0003_job_delivery"),
        ("core", "0004_api_token"),
    ]

    dependencies = [
        ("pooling", "0002_move_job_to_core"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        # The model as core's 0001 recorded it: its table (core_job, with 0001's columns) comes
        # from pooling (its squash makes it, or its 0001 + 0002 on an older database).
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="Job",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("kind", models.CharField(max_length=50)),
                        (
                            "status",
                            models.CharField(
                                choices=[
                                    ("pending", "Pending"),
                                    ("running", "Running"),
                                    ("done", "Done"),
                                    ("failed", "Failed"),
                                ],
                                default="pending",
                                max_length=10,
                            ),
                        ),
                        ("description", models.CharField(blank=True, max_length=500)),
                        ("total", models.BigIntegerField(null=True)),
                        ("done", models.BigIntegerField(default=0)),
                        ("message", models.TextField(blank=True)),
                        ("result", models.JSONField(blank=True, default=dict)),
                        ("created", models.DateTimeField(auto_now_add=True)),
                        ("updated", models.DateTimeField(auto_now=True)),
                    ],
                    options={"ordering": ["-created"]},
                ),
            ],
            database_operations=[],
        ),
        # 0003's columns.
        migrations.AddField(model_name="job", name="task", field=models.CharField(blank=True, max_length=200)),
        migrations.AddField(model_name="job", name="arguments", field=models.JSONField(blank=True, default=list)),
        migrations.AddField(model_name="job", name="message_id", field=models.CharField(blank=True, max_length=64)),
        migrations.AddField(model_name="job", name="queued", field=models.DateTimeField(blank=True, null=True)),
        migrations.AddField(model_name="job", name="attempts", field=models.PositiveIntegerField(default=0)),
        migrations.AddField(model_name="job", name="worker", field=models.CharField(blank=True, max_length=200)),
        migrations.AddField(model_name="job", name="heartbeat", field=models.DateTimeField(blank=True, null=True)),
        core.db.migrations.CreateModels(
            operations=[
                migrations.CreateModel(
                    name="Lease",
                    fields=[
                        ("key", models.CharField(max_length=200, primary_key=True, serialize=False)),
                        (
                            "owner",
                            models.CharField(
                                help_text="Random token of the holder; release and takeover compare it.", max_length=32
                            ),
                        ),
                        ("purpose", models.CharField(max_length=200)),
                        ("hostname", models.CharField(max_length=255)),
                        ("pid", models.IntegerField()),
                        ("acquired", models.DateTimeField()),
                        ("expires", models.DateTimeField()),
                    ],
                ),
                migrations.CreateModel(
                    name="ApiToken",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        (
                            "lookup",
                            models.CharField(
                                db_index=True, help_text="The key's first characters, to find the row.", max_length=8
                            ),
                        ),
                        ("digest", models.CharField(help_text="SHA-256 of the key (hex).", max_length=64, unique=True)),
                        ("created", models.DateTimeField(auto_now_add=True)),
                        ("expires", models.DateTimeField(blank=True, help_text="Empty: never.", null=True)),
                        (
                            "user",
                            models.OneToOneField(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="api_token",
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                    ],
                    options={
                        "verbose_name": "API token",
                    },
                ),
            ],
        ),
    ]
