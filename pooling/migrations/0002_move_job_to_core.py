"""Job moves to the shared ``core`` app: its table is renamed, its rows kept."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("pooling", "0001_initial")]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.DeleteModel(name="Job")],
            database_operations=[migrations.AlterModelTable(name="job", table="core_job")],
        ),
    ]
