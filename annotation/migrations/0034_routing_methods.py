from django.db import migrations, models

#: The methods of the last main before methods were recorded (3c7dd83b, 2026-11-26): every routing made
#: before this migration was decided with them as far as the site can tell (genderbias.methods; frozen
#: here, as a migration must not read today's table).
BEFORE_RECORDING = {"crowd_model": "2026-11-26", "label_interval": "crossed", "ties": "2026-11-25", "wordlists": "2026-11-22"}


def record_methods(apps, schema_editor):
    apps.get_model("annotation", "Routing").objects.update(methods=BEFORE_RECORDING)


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0033_hand_signals_echo_restore"),
    ]

    operations = [
        migrations.AddField(
            model_name="routing",
            name="methods",
            field=models.JSONField(
                blank=True,
                default=dict,
                help_text="The version of each method that made the decision (genderbias.methods).",
            ),
        ),
        migrations.RunPython(record_methods, migrations.RunPython.noop),
    ]
