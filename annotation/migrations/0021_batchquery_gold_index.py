"""A partial index of the gold questions by batch (issue 31): a batch's progress counts its
queries along the batch's index and its few gold questions along this one, reading no query row
(50,000 rows at 50,000 queries before). An index only: no row changes.

(On SQLite the change log the kept counts read is made after every ``migrate``, not here:
:mod:`annotation.crowd.services.change_log`.)"""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0020_judgment_invalid_index"),
    ]

    operations = [
        migrations.AddIndex(
            model_name="batchquery",
            index=models.Index(condition=models.Q(("is_gold", True)), fields=["batch"], name="batchquery_gold"),
        ),
    ]
