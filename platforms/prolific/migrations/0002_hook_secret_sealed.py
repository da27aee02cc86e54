"""The Prolific webhook secret sealed with the connections key (core.sealing), as the connection
secrets are: a secret stored in plaintext before is sealed here, then the plaintext column goes."""

from django.db import migrations, models


def seal_existing(apps, schema_editor):
    from core.services.connections import seal_secret

    for row in apps.get_model("prolific", "ProlificHookSecret").objects.all():
        row.sealed = seal_secret(row.value)
        row.save(update_fields=["sealed"])


def open_existing(apps, schema_editor):
    from core.services.connections import open_secret

    for row in apps.get_model("prolific", "ProlificHookSecret").objects.all():
        row.value = open_secret(row.sealed)
        row.save(update_fields=["value"])


class Migration(migrations.Migration):
    dependencies = [("prolific", "0001_initial")]

    operations = [
        migrations.AddField(
            model_name="prolifichooksecret", name="sealed", field=models.TextField(default=""), preserve_default=False
        ),
        migrations.AlterField(
            model_name="prolifichooksecret", name="value", field=models.CharField(max_length=200, blank=True)
        ),
        migrations.RunPython(seal_existing, open_existing),
        migrations.RemoveField(model_name="prolifichooksecret", name="value"),
    ]
