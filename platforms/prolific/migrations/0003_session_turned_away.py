"""A Prolific session the site had no task for (issue 67): its participant is returning the study, so
the place it holds is about to free up and no task is kept for it."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("prolific", "0002_hook_secret_sealed")]

    operations = [
        migrations.AddField(
            model_name="prolificsession",
            name="turned_away_at",
            field=models.DateTimeField(
                blank=True,
                null=True,
                help_text=(
                    "When the site had no task for this session and sent the participant back to return the study."
                ),
            ),
        ),
    ]
