"""Prolific webhooks that never silently stop (issue 41).

- ``ProlificSubscription.confirmed_at`` replaces ``confirmed``: it is set only when this site's
  confirm call with the subscription's ``X-Hook-Secret`` succeeded. Earlier versions marked a
  subscription confirmed because a list showed it, even one never confirmed (a lost answer), so
  no row keeps that flag: every subscription recorded before counts as unconfirmed, and the next
  reconciliation (``manage.py poll_prolific``, every minute) makes each again and confirms it.
- ``ProlificEvent.workspace_id``: the workspace whose secret verified the event (a recent one of
  this workspace makes webhooks count as active); ``ProlificEvent.metadata``: a
  ``study.has_high_return_rate`` event's metadata, shown to the researcher.
"""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0021_batchquery_gold_index"),
    ]

    operations = [
        migrations.RemoveField(
            model_name="prolificsubscription",
            name="confirmed",
        ),
        migrations.AddField(
            model_name="prolificevent",
            name="metadata",
            field=models.JSONField(blank=True, default=dict),
        ),
        migrations.AddField(
            model_name="prolificevent",
            name="workspace_id",
            field=models.CharField(blank=True, max_length=64),
        ),
        migrations.AddField(
            model_name="prolificsubscription",
            name="confirmed_at",
            field=models.DateTimeField(
                blank=True, help_text="When this site's confirm call with the X-Hook-Secret succeeded.", null=True
            ),
        ),
        migrations.AddIndex(
            model_name="prolificevent",
            index=models.Index(fields=["workspace_id", "received"], name="prolific_event_workspace"),
        ),
        migrations.AddIndex(
            model_name="prolificevent",
            index=models.Index(fields=["event_type", "batch"], name="prolific_event_type_batch"),
        ),
    ]
