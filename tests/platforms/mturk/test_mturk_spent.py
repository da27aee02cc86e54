"""Money figures that add up on MTurk (issue 41): every spend figure of an MTurk batch equals what
MTurk's test server charged for approved assignments (reward + commission each) and each bonus
(+ 20%, at least $0.01), each also computed by hand (tests/annotation/crowd/test_spent.py reads the figures)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from annotation import services
from annotation.crowd.selectors import spent
from annotation.crowd.services.sync import sync_batch
from annotation.models import Assignment
from core.errors import StateError
from platforms.mturk import services as mturk_admin
from tests.annotation.conftest import TRUTH
from tests.annotation.spent_figures import shown
from tests.platforms.mturk.fake_server import FakeMTurk, build_answers_xml
from tests.platforms.mturk.fake_server import serve as serve_mturk


@pytest.fixture
def mturk(settings, monkeypatch):
    fake = FakeMTurk()
    url, http = serve_mturk(fake)
    settings.MTURK_ENDPOINT_URL = url
    settings.MTURK_LIVE = False
    settings.MTURK_MAX_CALLS_PER_SECOND = 0
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    yield fake
    http.shutdown()


def test_every_figure_of_an_mturk_batch_is_what_mturk_charged(mturk, query_set, researcher, client, tmp_path):
    client.force_login(researcher)
    batch = services.create_batch(
        "turk",
        services.BatchSettings(provider="mturk", assignments_per_query=2, queries_per_hit=3, reward=Decimal("0.07")),
        query_set=query_set,
    )
    services.publish_batch(batch)
    for hit in batch.hits.order_by("position"):
        for worker in ("WORKERA", "WORKERB"):
            answers = {hq.field_name: TRUTH[hq.batch_query.qid] for hq in hit.hit_queries.select_related("batch_query")}
            mturk.submit(hit.provider_id, worker, build_answers_xml({**answers, "assignmentId": "x"}))
    sync_batch(batch)
    # 4 assignments approved at $0.07 + 20% ($0.014 -> $0.01 each): $0.32.
    assert spent(batch) == mturk.charged() == Decimal("0.32")
    assignment = Assignment.objects.filter(hit__batch=batch).order_by("pk").first()
    mturk_admin.send_bonus(assignment, "0.04", "careful work")
    with pytest.raises(StateError, match=r"has a bonus of \$0.04 already"):
        mturk_admin.send_bonus(assignment, "0.04", "careful work")  # once per assignment
    # A $0.04 bonus + 20% ($0.008), at least $0.01: $0.05 more.
    assert spent(batch) == mturk.charged() == Decimal("0.37")
    assert set(shown(client, batch, tmp_path).values()) == {"0.37"}
