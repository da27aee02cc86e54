"""The batch page lists its HITs a page at a time, answers counted in SQL, so its cost does not
grow with the batch."""

from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotation import services
from pooling.models import QuerySet
from pooling.services import create_query_set


def _batch(name: str, queries: int):
    query_set = create_query_set(
        name, [(str(i), f"query {i}") for i in range(queries)], origin=QuerySet.Origin.IMPORTED
    )
    options = services.BatchSettings(
        provider="local", assignments_per_query=1, queries_per_hit=2, reward=Decimal("0.05")
    )
    batch = services.create_batch(name, options, query_set=query_set)
    services.publish_batch(batch)
    return batch


@pytest.mark.django_db
def test_hits_are_paged_with_their_answers_counted(researcher, client):
    client.force_login(researcher)
    small, big = _batch("few-hits", 4), _batch("many-hits", 120)
    for batch in (small, big):  # first views: the session, the agreement cached for the answers
        client.get(f"/annotation/batches/{batch.name}/")
    with CaptureQueriesContext(connection) as few:
        client.get(f"/annotation/batches/{small.name}/")
    with CaptureQueriesContext(connection) as many:
        first = client.get(f"/annotation/batches/{big.name}/").content.decode()
    assert len(many) == len(few)  # 60 HITs cost the statements of 2
    assert first.count("/preview/") == 50 and "HITs 1–50 of 60" in first and "?hits=2#hits" in first
    last = client.get(f"/annotation/batches/{big.name}/?hits=2").content.decode()
    assert last.count("/preview/") == 10 and "HITs 51–60 of 60" in last and "?hits=1#hits" in last
    assert "/hits/60/preview/" in last and "/hits/60/preview/" not in first
    # A page number past the end shows the last page, as a person following an old link expects.
    assert client.get(f"/annotation/batches/{big.name}/?hits=99").content.decode().count("/preview/") == 10
