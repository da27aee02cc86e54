"""Routing records the calibration sample it was made on and the risk δ of its guarantee.

Existing routings keep working: their sample is unknown (null) and their risk null (they
were made on a point estimate, with no guarantee).
"""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0012_derived_batches_routing"),
    ]

    operations = [
        migrations.AddField(
            model_name="routing",
            name="sample_batch",
            field=models.ForeignKey(
                blank=True,
                help_text="The calibration sample (its last link) the decision was made on.",
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="sample_routings",
                to="annotation.batch",
            ),
        ),
        migrations.AddField(
            model_name="routing",
            name="risk",
            field=models.FloatField(
                blank=True,
                help_text="δ of the guarantee (fixed-sequence test); null: the point-estimate rule, no guarantee.",
                null=True,
            ),
        ),
    ]
