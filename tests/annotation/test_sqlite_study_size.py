"""Lists and prefetches at the study's size on SQLite (issue 53): a page of 100 HITs of 11 queries
reads 1,100 batch queries, past SQLite's limits on one statement when read as one list."""

from decimal import Decimal

import pytest

from annotation import services
from pooling.models import QuerySet
from pooling.services import create_query_set

QUERIES_PER_HIT = 11
HITS = 110  # more than a page (100)


@pytest.fixture
def big_batch(db):
    queries = [(f"q{i}", f"who is query number {i} about her") for i in range(HITS * QUERIES_PER_HIT)]
    query_set = create_query_set("big", queries, origin=QuerySet.Origin.IMPORTED)
    settings = services.BatchSettings(
        provider="local", assignments_per_query=1, queries_per_hit=QUERIES_PER_HIT, reward=Decimal("0.05")
    )
    return services.create_batch("big-batch", settings, query_set=query_set)


def test_the_api_lists_a_page_of_100_hits_of_11_queries(big_batch, admin_client):
    answer = admin_client.get("/api/annotation/hits/")
    assert answer.status_code == 200, answer.content[:500]
    hits = answer.json()["results"]
    assert len(hits) == 100
    # Each HIT's queries: the database's own count per HIT, an independent read.
    from annotation.models import HitQuery

    for hit in hits:
        assert len(hit["queries"]) == HitQuery.objects.filter(hit_id=hit["id"]).count() == QUERIES_PER_HIT
    assert answer.json()["next"]
