"""The Job model moves here from ``pooling`` with its table and rows.

``pooling``'s 0002 renames the table (``pooling_job`` -> ``core_job``) and forgets the
model; this migration only records it in ``core``'s state. The rows survive.
"""

from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True

    dependencies = [("pooling", "0002_move_job_to_core")]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="Job",
                    fields=[
                        ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                        ("kind", models.CharField(max_length=50)),
                        (
                            "status",
                            models.CharField(
                                choices=[("pending", "Pending"), ("running", "Running"), ("done", "Done"), ("failed", "Failed")],
                                default="pending",
                                max_length=10,
                            ),
                        ),
                        ("description", models.CharField(blank=True, max_length=500)),
                        ("total", models.BigIntegerField(null=True)),
                        ("done", models.BigIntegerField(default=0)),
                        ("message", models.TextField(blank=True)),
                        ("result", models.JSONField(blank=True, default=dict)),
                        ("created", models.DateTimeField(auto_now_add=True)),
                        ("updated", models.DateTimeField(auto_now=True)),
                    ],
                    options={"ordering": ["-created"]},
                ),
            ],
            database_operations=[],
        ),
    ]
