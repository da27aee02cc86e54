"""A batch of 120 queries (and two gold questions) to audit, and members of its group by role."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from annotation import services
from annotation.crowd.services.batch_settings import GoldQuery
from core.db.scope import acting_in
from core.models import Membership, ResearchGroup
from platforms.inhouse.services.annotators import create_annotator
from pooling.models import QuerySet
from pooling.services import create_query_set

#: 120 queries with ids that do not sort as their positions do (the draw sorts the ids).
QUERIES = [(f"q{(i * 37) % 120:03d}", f"audited query number {i}") for i in range(120)]


@pytest.fixture
def big_batch(db):
    query_set = create_query_set("audit-set", QUERIES, origin=QuerySet.Origin.IMPORTED)
    gold = [GoldQuery("g1", "what is a mother", "f"), GoldQuery("g2", "what is a father", "m")]
    return services.create_batch(
        "audited",
        services.BatchSettings(provider="local", assignments_per_query=2, queries_per_hit=5, gold_per_hit=1),
        query_set=query_set,
        gold=gold,
    )


def member(username: str, role: str, group: ResearchGroup | None = None):
    """A staff account (an annotator's when ``role`` is annotator) with ``role`` in ``group`` (the site's first)."""
    group = group or ResearchGroup.objects.order_by("pk").first()
    if role == Membership.Role.ANNOTATOR:
        with acting_in(group.pk):
            return create_annotator(username, password="pw-secret-123")
    user = get_user_model().objects.create_user(username, password="pw-secret-123", is_staff=True)
    Membership.objects.create(user=user, group=group, role=role)
    return user


@pytest.fixture
def people(big_batch):
    """An owner, two researchers, a viewer and an annotator of the batch's group."""
    roles = {"owner": "owner", "rita": "researcher", "rob": "researcher", "vic": "viewer", "ann": "annotator"}
    return {name: member(name, role, big_batch.group) for name, role in roles.items()}
