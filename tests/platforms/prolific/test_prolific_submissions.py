"""What Prolific's dashboard shows of each submission, on the batch page and the API (issue 45):
status (returned, timed out...), time taken and effective hourly rate, beside this site's quality
figures — read at sync from a Prolific-compatible server that throttles and loses answers."""

from decimal import Decimal

import pytest
from django.urls import reverse

from annotation.crowd.pay_rate import hourly_rate, median_or_none, seconds_taken
from annotation.crowd.services.sync import sync_batch
from platforms.prolific.models import ProlificSubmission
from tests.annotation.conftest import make_batch
from tests.platforms.prolific import test_prolific as base
from tests.platforms.prolific.fake_server import hexid
from tests.platforms.prolific.test_prolific import Participant, _publish, make_prolific_batch

pytestmark = pytest.mark.django_db

# The Prolific-compatible server and its client, as the main Prolific tests set them up.
server, provider, sleeps, client_class = base.server, base.provider, base.sleeps, base.client_class


def _times(server, session, started, completed=None):
    server.submissions[session]["started_at"] = f"2026-11-24T10:{started}Z"
    server.submissions[session]["completed_at"] = f"2026-11-24T10:{completed}Z" if completed else None


@pytest.fixture
def study(server, provider, query_set, client_class):
    batch = _publish(make_prolific_batch(query_set), provider)
    quick = Participant(server, batch.hit_type_id, hexid("QUICK"), client_class)
    quick.answer()
    quick.complete()
    slow = Participant(server, batch.hit_type_id, hexid("SLOW"), client_class)
    slow.answer()
    slow.complete()
    gave_up = Participant(server, batch.hit_type_id, hexid("GAVEUP"), client_class)
    server.set_status(gave_up.session, "RETURNED")
    never, _ = server.start(batch.hit_type_id, hexid("NEVER"))  # took a place on Prolific, never reached the site
    server.set_status(never, "TIMED-OUT")
    _times(server, quick.session, "00:00", "06:00")  # 360 s: $0.90 an HIT is $9.00 an hour
    _times(server, slow.session, "00:00", "18:00")  # 1,080 s: $3.00 an hour
    _times(server, gave_up.session, "01:00")
    _times(server, never, "02:00")
    return batch, quick, slow, gave_up


def test_a_sync_keeps_each_submission_once_through_throttling_and_a_lost_answer(server, provider, study):
    batch, quick, *_ = study
    server.faults["list_submissions"] = ["throttle", "lose_response"]
    sync_batch(batch, provider)
    sync_batch(batch, provider)  # again: the same four rows, updated
    assert ProlificSubmission.objects.filter(batch=batch).count() == 4
    server.set_status(quick.session, "APPROVED")
    sync_batch(batch, provider)
    assert ProlificSubmission.objects.get(submission_id=quick.session).status == "APPROVED"
    assert ProlificSubmission.objects.filter(batch=batch).count() == 4


def test_the_page_and_the_api_show_status_time_and_hourly_rate_beside_gold(server, provider, study, client, researcher):
    batch, quick, _, gave_up = study
    sync_batch(batch, provider)
    client.force_login(researcher)
    whole = client.get(reverse("annotation:batch-detail", args=[batch.name])).content.decode()
    page = whole[whole.index('<section id="prolific-submissions"') :]
    page = page[: page.index("</section>")]
    assert "Submissions on Prolific" in page
    assert "4 submissions" in page and "1 returned" in page and "1 timed-out" in page
    assert "6 min 00 s" in page and "$9.00" in page and "18 min 00 s" in page and "$3.00" in page
    assert "never arrived" in page  # the timed-out place was never on the site
    assert 'id="median-time">12 min 00 s<' in page and 'id="median-rate">$6.00<' in page  # medians of 360/1,080 s
    assert hexid("QUICK") not in page  # pseudonyms, never Prolific ids

    answer = client.get(f"/api/annotation/batches/{batch.name}/prolific-submissions/")
    assert answer.status_code == 200
    data = answer.json()
    assert data["total"] == 4 and data["median_seconds"] == 720.0 and data["median_hourly_rate"] == 6.0
    rows = {row["submission_id"]: row for row in data["rows"]}
    assert rows[quick.session]["seconds"] == 360 and rows[quick.session]["hourly_rate"] == "9.00"
    assert rows[quick.session]["gold_total"] == 1 and rows[quick.session]["gold_correct"] == 1
    assert rows[quick.session]["participant"] == quick.assignment.worker.pseudonym
    assert rows[gave_up.session]["status"] == "RETURNED" and rows[gave_up.session]["seconds"] is None


def test_other_batches_have_no_submissions_and_the_api_says_so(query_set, client, researcher):
    batch = make_batch(query_set)
    client.force_login(researcher)
    assert (
        "Submissions on Prolific"
        not in client.get(reverse("annotation:batch-detail", args=[batch.name])).content.decode()
    )
    answer = client.get(f"/api/annotation/batches/{batch.name}/prolific-submissions/")
    assert answer.status_code == 404 and "not a Prolific batch" in answer.json()["detail"]


def test_annotators_cannot_read_them(server, study, client, django_user_model):
    batch, *_ = study
    client.force_login(django_user_model.objects.create_user("ann", password="pw-secret-123"))
    assert client.get(f"/api/annotation/batches/{batch.name}/prolific-submissions/").status_code == 403


def test_pay_rate_by_hand():
    import datetime as dt

    start = dt.datetime(2026, 11, 24, 10, 0, tzinfo=dt.UTC)
    assert seconds_taken(start, start + dt.timedelta(minutes=4, seconds=30)) == 270
    assert seconds_taken(start, start - dt.timedelta(seconds=1)) is None  # impossible order: unknown
    assert seconds_taken(None, start) is None
    assert hourly_rate(Decimal("0.90"), 270) == Decimal("12.00")  # 0.90 × 3600 / 270
    assert hourly_rate(Decimal("0.50"), 7) == Decimal("257.14")  # 257.142857… rounded half up
    assert hourly_rate(Decimal("0.90"), 0) is None and hourly_rate(Decimal("0.90"), None) is None
    assert median_or_none([None, 3, 1]) == 2 and median_or_none([None]) is None
