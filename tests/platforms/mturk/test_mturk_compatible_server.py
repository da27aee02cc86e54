"""The whole MTurk path over real HTTP against an MTurk-compatible server (MTURK_ENDPOINT_URL).

No Stubber here: a real boto3 client signs, sends, retries and parses as it would against
AWS. The server throttles the first CreateHIT and "loses" the response of the second after
creating the HIT, so the retry meets its own success (HitAlreadyExists): exactly one HIT per
group must exist, each recorded. Workers then answer through the server, and syncing twice
stores every assignment and judgment once.
"""

import re
from decimal import Decimal

import pytest

from annotation import services
from annotation.crowd.services.sync import sync_batch
from annotation.models import Assignment, Hit, Judgment
from annotation.results.selectors.labels import BatchAnswers
from tests.annotation.conftest import TRUTH
from tests.platforms.mturk.fake_server import FakeMTurk, build_answers_xml, serve


@pytest.fixture
def server(settings, monkeypatch):
    fake = FakeMTurk()
    url, http = serve(fake)
    settings.MTURK_ENDPOINT_URL = url
    settings.MTURK_LIVE = False
    settings.MTURK_MAX_CALLS_PER_SECOND = 0  # no client-side limit: the test server is local
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    yield fake, url
    http.shutdown()


@pytest.fixture
def batch(query_set):
    return services.create_batch(
        "compat",
        services.BatchSettings(provider="mturk", assignments_per_query=2, queries_per_hit=3, reward=Decimal("0.05")),
        query_set=query_set,
    )


def _answers(hit: Hit, override: dict[str, str] | None = None) -> str:
    override = override or {}
    answers = {
        hq.field_name: override.get(hq.batch_query.qid, TRUTH[hq.batch_query.qid])
        for hq in hit.hit_queries.select_related("batch_query")
    }
    return build_answers_xml({**answers, "assignmentId": "from-the-form"})


def test_publish_answer_sync_through_an_mturk_compatible_server(server, batch):
    fake, url = server
    fake.faults["CreateHITWithHITType"] = ["throttle", "lose_response"]

    assert services.publish_batch(batch) == 2

    # Throttled (nothing made), then made with the response lost, then HitAlreadyExists
    # for the same token; then the second HIT: four calls, two HITs, both recorded.
    assert fake.calls.count("CreateHITWithHITType") == 4
    assert len(fake.hits) == 2
    hits = list(batch.hits.order_by("position"))
    assert {hit.provider_id for hit in hits} == set(fake.hits)
    for hit in hits:
        question = fake.hits[hit.provider_id]["Question"]
        assert "HTMLQuestion" in question
        assert f'action="{url}/mturk/externalSubmit"' in question
        assert fake.hits[hit.provider_id]["RequesterAnnotation"] == f"compat HIT {hit.position}"

    # Two workers answer every HIT; worker B gives an unknown category for query 101.
    for hit in hits:
        fake.submit(hit.provider_id, "WORKERA", _answers(hit))
        fake.submit(hit.provider_id, "WORKERB", _answers(hit, {"101": "maybe"}))

    first = sync_batch(batch)
    assert (first.new, first.invalid) == (4, 1)
    assert Assignment.objects.filter(hit__batch=batch).count() == 4
    judgments = Judgment.objects.filter(assignment__hit__batch=batch).count()
    assert judgments == 12
    invalid = Judgment.objects.get(assignment__hit__batch=batch, label=None)
    assert invalid.batch_query.qid == "101" and re.search("unknown category", invalid.invalid_reason)
    # Valid work was approved on the server; the invalid one rejected, saying why (never
    # left for MTurk to approve by itself after the auto-approval delay).
    statuses = sorted(a["AssignmentStatus"] for a in fake.assignments.values())
    assert statuses == ["Approved", "Approved", "Approved", "Rejected"]
    assert first.rejected == 1 and first.kept == 0

    second = sync_batch(batch)
    assert second.new == 0
    assert Assignment.objects.filter(hit__batch=batch).count() == 4
    assert Judgment.objects.filter(assignment__hit__batch=batch).count() == judgments

    votes = BatchAnswers(batch).votes
    assert votes.loc["105", "label"] == "n" and votes.loc["103", "label"] == "m"


def test_hand_signals_posted_from_the_mturk_page_are_stored_by_the_sync(server, batch):
    """Issue 69: the HTMLQuestion page MTurk shows carries the hand-signal script inline; the fields it adds
    to the form come back in the assignment's answer XML (MTurk returns every field of the form), and
    the sync stores them with each judgment as the in-house and Prolific pages' posts are stored."""
    from annotation.crowd.services.answers import HAND_SIGNALS

    fake, _url = server
    services.publish_batch(batch)
    hit = batch.hits.order_by("position").first()
    question = fake.hits[hit.provider_id]["Question"]
    for name, _column, _most in HAND_SIGNALS:  # the script that posts each signal is on the page
        assert f'"{name}-"' in question
    assert "visibilitychange" in question and "<script src" not in question
    hit_queries = list(hit.hit_queries.select_related("batch_query").order_by("position"))
    posted = {hq.field_name: TRUTH[hq.batch_query.qid] for hq in hit_queries}
    signals = {hq.position: (i + 1, 2 * i, 1000 * (i + 3)) for i, hq in enumerate(hit_queries)}
    for position, (pastes, leaves, ms) in signals.items():
        posted |= {f"pastes-{position}": str(pastes), f"leaves-{position}": str(leaves), f"ms-{position}": str(ms)}
    fake.submit(hit.provider_id, "WORKERHANDS", build_answers_xml({**posted, "assignmentId": "from-the-form"}))

    assert sync_batch(batch).new == 1
    stored = (
        dict(Judgment.objects.filter(assignment__hit=hit).values_list("batch_query__qid", "label")),
        {
            qid: (pastes, leaves, ms)
            for qid, pastes, leaves, ms in Judgment.objects.filter(assignment__hit=hit).values_list(
                "batch_query__qid", "pastes", "tab_leaves", "item_ms"
            )
        },
    )
    assert stored == (
        {hq.batch_query.qid: TRUTH[hq.batch_query.qid] for hq in hit_queries},
        {hq.batch_query.qid: signals[hq.position] for hq in hit_queries},
    )
