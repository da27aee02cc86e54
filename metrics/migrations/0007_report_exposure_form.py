from django.db import migrations, models


class Migration(migrations.Migration):
    """The exposure metrics' form (issue 40): every report stored before it was computed in the adapted
    form, the default, so its results keep their meaning."""

    dependencies = [
        ("metrics", "0006_report_label_batch"),
    ]

    operations = [
        migrations.AddField(
            model_name="report",
            name="exposure_form",
            field=models.CharField(
                default="adapted",
                help_text="How AWRF, rKL, rND, rRD were defined: 'adapted' (the platform's: the target share as "
                "reference) or 'reference' (as the cited papers' reference code computes them).",
                max_length=20,
            ),
        ),
    ]
