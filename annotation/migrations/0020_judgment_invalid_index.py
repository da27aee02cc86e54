"""An index of the invalid judgments by assignment (issue 31): a batch's judgments are counted
along its assignments from indexes alone (the answers' version read by every results page and
the live fragment polled every 2 s). An index only: no row changes."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0019_prolific_groups_bonuses"),
    ]

    operations = [
        migrations.AddIndex(
            model_name="judgment",
            index=models.Index(
                condition=models.Q(("label__isnull", True)), fields=["assignment"], name="judgment_invalid"
            ),
        ),
    ]
