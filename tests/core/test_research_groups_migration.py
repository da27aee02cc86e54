"""The research_groups migrations put an existing site in one group: its studies, its staff as owners,
its in-house annotators as annotators; a Prolific participant stays without a group."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [
    ("metrics", "0008_report_crowd_quality"),
    ("annotation", "0026_batch_failed_gold_answers"),
    ("pooling", "0007_query_label"),
    ("core", "0006_connection"),
]


@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
def test_existing_studies_and_people_go_to_the_default_group():
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    old = executor.loader.project_state(BEFORE).apps
    User = old.get_model("auth", "User")
    staff = User.objects.create(username="old-researcher", is_staff=True)
    inhouse = User.objects.create(username="old-annotator")
    participant = User.objects.create(username="old-participant")
    Identity = old.get_model("annotation", "WorkerIdentity")
    Identity.objects.create(provider="local", external_id="old-annotator", user=inhouse)
    Identity.objects.create(provider="prolific", external_id="p1", user=participant)
    query_set = old.get_model("pooling", "QuerySet").objects.create(name="old-queries", origin="imported", sha256="x")
    old.get_model("core", "Job").objects.create(kind="pool", description="old")

    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())

    from core.models import Job, Membership, ResearchGroup
    from pooling.models import QuerySet

    group = ResearchGroup.objects.get()
    assert group.slug == "default"
    assert QuerySet._base_manager.get(pk=query_set.pk).group == group
    assert Job._base_manager.get(description="old").group == group
    roles = dict(Membership.objects.values_list("user__username", "role"))
    assert roles == {"old-researcher": "owner", "old-annotator": "annotator"}
    assert staff.pk and participant.pk
