"""The Job model moved from ``pooling`` to ``core``: an existing installation keeps its rows."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor


@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
def test_job_rows_survive_the_move_to_core():
    executor = MigrationExecutor(connection)
    before = [("pooling", "0001_initial"), ("core", None)]
    executor.migrate(before)
    old_state = executor.loader.project_state([("pooling", "0001_initial")])
    OldJob = old_state.apps.get_model("pooling", "Job")
    OldJob.objects.create(kind="pool", description="kept across the move", done=3, total=4)

    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())

    from core.models import Job

    job = Job.objects.get(kind="pool")
    assert (job.description, job.done, job.total, job.fraction) == ("kept across the move", 3, 4, 0.75)
    assert "core_job" in connection.introspection.table_names()
    assert "pooling_job" not in connection.introspection.table_names()
