"""Every account's access epoch in its own row (``AccountState``), researchers' too.

The epochs already raised move over from ``WorkerIdentity.access_epoch`` before that field
goes, so no ended session or link comes back.
"""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


def _copy_epochs(apps, schema_editor):
    identity = apps.get_model("annotation", "WorkerIdentity")
    state = apps.get_model("annotation", "AccountState")
    rows = identity.objects.filter(user__isnull=False, access_epoch__gt=0).values_list("user_id", "access_epoch")
    state.objects.bulk_create([state(user_id=user_id, access_epoch=epoch) for user_id, epoch in rows])


def _copy_back(apps, schema_editor):
    identity = apps.get_model("annotation", "WorkerIdentity")
    state = apps.get_model("annotation", "AccountState")
    for user_id, epoch in state.objects.values_list("user_id", "access_epoch"):
        identity.objects.filter(user_id=user_id).update(access_epoch=epoch)


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0016_results_cache_table"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
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
        migrations.RunPython(_copy_epochs, _copy_back),
        migrations.RemoveField(model_name="workeridentity", name="access_epoch"),
    ]
