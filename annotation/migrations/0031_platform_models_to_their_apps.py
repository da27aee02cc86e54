"""Prolific's models leave annotation for the prolific app (platforms/prolific, issue 55): only
Django's state changes. Their tables keep their names (``annotation_<model>``; the prolific app's
models name them in ``db_table``), so no row moves and ``migrate`` touches no table."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0030_answer_use"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.RemoveField(
                    model_name="groupmember",
                    name="group",
                ),
                migrations.RemoveField(
                    model_name="participantgroup",
                    name="batch",
                ),
                migrations.RemoveField(
                    model_name="prolificevent",
                    name="batch",
                ),
                migrations.DeleteModel(
                    name="ProlificHookSecret",
                ),
                migrations.RemoveField(
                    model_name="prolificsession",
                    name="batch",
                ),
                migrations.RemoveField(
                    model_name="prolificsubmission",
                    name="batch",
                ),
                migrations.DeleteModel(
                    name="ProlificSubscription",
                ),
                migrations.DeleteModel(
                    name="GroupMember",
                ),
                migrations.DeleteModel(
                    name="ParticipantGroup",
                ),
                migrations.DeleteModel(
                    name="ProlificEvent",
                ),
                migrations.DeleteModel(
                    name="ProlificSession",
                ),
                migrations.DeleteModel(
                    name="ProlificSubmission",
                ),
            ],
            database_operations=[],
        ),
    ]
