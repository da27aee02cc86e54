"""Participant groups across waves and bonuses paid exactly once (issue 32): ``ParticipantGroup``,
``GroupMember`` and ``BonusPayment``, new tables only (no existing row changes)."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0018_prolific_webhooks"),
    ]

    operations = [
        migrations.CreateModel(
            name="ParticipantGroup",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
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
            name="BonusPayment",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("participant_id", models.CharField(max_length=64)),
                ("submission_id", models.CharField(max_length=64)),
                ("amount", models.DecimalField(decimal_places=2, max_digits=8)),
                ("reason", models.CharField(blank=True, max_length=200)),
                (
                    "state",
                    models.CharField(
                        choices=[("owed", "Owed"), ("set_up", "set up"), ("paying", "Paying"), ("paid", "Paid")],
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
                    models.UniqueConstraint(fields=("batch", "participant_id"), name="one_bonus_per_batch_participant")
                ],
            },
        ),
        migrations.CreateModel(
            name="GroupMember",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
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
    ]
