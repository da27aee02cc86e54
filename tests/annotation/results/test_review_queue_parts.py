"""The review queue keeps its rows in parts (issue 31): a view reads the statuses of the queries
that have one and the one part of whole rows holding the query it shows, not every row. Every
query, filter and walk shows what the page without any cache shows, in every part, and a ruling
or an escalation is on the next view."""

from decimal import Decimal

import pytest

from annotation.models import Escalation
from annotation.quality import selectors
from annotation.quality.services.adjudication import adjudicate
from tests.annotation.conftest import disputed_batch
from tests.annotation.results.test_agreement_page_cache import page, uncached

QIDS = ["101", "102", "103", "104", "105", "106"]


@pytest.fixture
def batch(query_set, annotators, monkeypatch):
    """Parts of two rows; ann-b disagrees with ann-a on 101, 102, 104, 105 and 106: five disputed
    queries (three parts), 103 agreed (no status)."""
    monkeypatch.setattr(selectors, "REVIEW_PART", 2)
    return disputed_batch(query_set, annotators, "parts")


def shown_everywhere(client, url, settings):
    """Every query of the batch, the first of each filter and each walk's next step, with the
    kept parts and without any cache: the same pages and redirects."""
    for query in [f"?status=disputed&qid={qid}" for qid in QIDS] + [f"?status={s}" for s in ("disputed", "settled")]:
        assert page(client, url + query) == uncached(client, url + query, settings), query
    for after in QIDS:
        kept = client.get(url + f"?status=disputed&after={after}")["Location"]
        settings_caches = settings.CACHES
        settings.CACHES = settings_caches | {"results": {"BACKEND": "django.core.cache.backends.dummy.DummyCache"}}
        try:
            assert client.get(url + f"?status=disputed&after={after}")["Location"] == kept
        finally:
            settings.CACHES = settings_caches


def test_every_query_of_every_part_is_shown_as_without_a_cache(batch, researcher, client, settings):
    client.force_login(researcher)
    url = f"/annotation/batches/{batch.name}/review/"
    queue = selectors.review_queue(batch)
    assert [row["qid"] for row in queue.rows] == ["101", "102", "104", "105", "106"]
    assert [row["index"] for row in queue.rows] == [0, 1, 3, 4, 5]
    assert queue.total == 6
    assert set(queue.rows[0]) == {"qid", "statuses", "index"}  # the walk's rows: no votes, no counts
    whole = queue.full(queue.rows[4])  # in the third part
    assert whole["qid"] == "106" and whole["index"] == 5 and len(whole["votes"]) == 2 and whole["counts"]["n"] == 1
    assert queue.find("103")["qid"] == "103"  # no status: read whole, as before
    shown_everywhere(client, url, settings)
    assert ">105</code>" in page(client, url + "?status=disputed&qid=105")
    assert "Disputed query 4 of 5" in page(client, url + "?status=disputed&qid=105")


@pytest.mark.slow
def test_a_ruling_and_an_escalation_are_on_the_next_view_of_every_part(batch, researcher, client, settings):
    client.force_login(researcher)
    url = f"/annotation/batches/{batch.name}/review/"
    shown_everywhere(client, url, settings)  # every part kept
    adjudicate(batch, "105", "m", "the query names a man", researcher)
    ruled = page(client, url + "?status=settled")
    assert ">105</code>" in ruled and "Settled as <strong>Male</strong>" in ruled
    assert "Disputed query 4 of 4" in page(client, url + "?status=disputed&qid=106")
    shown_everywhere(client, url, settings)
    Escalation.objects.create(
        batch=batch, hit=batch.hits.get(position=2), added=1, assignments_before=2, disputed=["106"], cost=Decimal("1")
    )
    escalated = page(client, url + "?status=escalated")
    assert ">106</code>" in escalated and escalated == uncached(client, url + "?status=escalated", settings)
    shown_everywhere(client, url, settings)
