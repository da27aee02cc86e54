"""A Prolific participant in a real browser: from the study URL to Prolific's completion URL."""

import pytest

from annotation import services
from annotation.models import Assignment, Judgment
from platforms.prolific.client import Prolific
from platforms.prolific.provider import ProlificProvider, completion_code
from tests.annotation.conftest import TRUTH
from tests.browser_jobs import JOB_DEADLINE_MS
from tests.platforms.prolific.fake_server import TOKEN, FakeProlific, hexid, serve
from tests.platforms.prolific.test_prolific import make_prolific_batch

NAMES = {"n": "Non-gendered", "f": "Female", "m": "Male", "o": "Other or multiple genders"}


@pytest.fixture
def prolific_server(settings, live_server):
    fake = FakeProlific()
    url, http = serve(fake)
    settings.PROLIFIC_API_URL = f"{url}/api/v1/"
    settings.PROLIFIC_API_TOKEN = TOKEN
    settings.PROLIFIC_PROJECT_ID = "project-1"
    settings.PROLIFIC_COMPLETION_URL = f"{url}/submissions/complete?cc="
    settings.SITE_URL = live_server.url
    yield fake
    http.shutdown()


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_participant_arrives_from_prolific_answers_and_is_sent_back_with_the_code(query_set, prolific_server, page):
    batch = make_prolific_batch(query_set)
    provider = ProlificProvider(Prolific(f"{prolific_server.base}/api/v1/", TOKEN, sleep=lambda s: None))
    services.publish_batch(batch, provider)
    batch.refresh_from_db()

    session, study_url = prolific_server.start(batch.hit_type_id, hexid("PIDBROWSER"))
    assert f"PROLIFIC_PID={hexid('PIDBROWSER')}" in study_url and f"SESSION_ID={session}" in study_url
    page.goto(study_url)  # no account, no login: the link from Prolific is enough

    assignment = Assignment.objects.get(provider_assignment_id=session)
    hit_queries = list(assignment.hit.hit_queries.select_related("batch_query").order_by("position"))
    assert page.get_by_role("heading", name=batch.title).count() == 1
    assert page.get_by_role("link", name="Overview").count() == 0  # no site navigation for participants
    for hq in hit_queries:
        label = TRUTH.get(hq.batch_query.qid, hq.batch_query.gold_label)
        page.get_by_role("group", name=hq.batch_query.text, exact=True).get_by_role(
            "radio", name=NAMES[label], exact=True
        ).check()
    with page.expect_navigation():
        page.get_by_role("button", name="Submit").click()

    assert page.url == f"{prolific_server.base}/submissions/complete?cc={completion_code(batch)}"
    assert prolific_server.completed_by == [completion_code(batch)]
    stored = dict(Judgment.objects.filter(assignment=assignment).values_list("batch_query__qid", "label"))
    assert stored == {hq.batch_query.qid: TRUTH.get(hq.batch_query.qid, "m") for hq in hit_queries}


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_a_participant_prolific_cannot_confirm_yet_is_taken_in_by_the_waiting_page(
    query_set, prolific_server, page, settings
):
    """Issue 41: Prolific throttles the check for the whole deadline; the participant sees a page
    that says it is waiting and will take them in by itself; nobody reloads it, and once Prolific
    answers again the page itself brings them to their HIT."""
    settings.PROLIFIC_ARRIVAL_DEADLINE_SECONDS = 0.5
    settings.PROLIFIC_ARRIVAL_REFRESH_SECONDS = 1
    batch = make_prolific_batch(query_set)
    provider = ProlificProvider(Prolific(f"{prolific_server.base}/api/v1/", TOKEN, sleep=lambda s: None))
    services.publish_batch(batch, provider)
    batch.refresh_from_db()
    session, study_url = prolific_server.start(batch.hit_type_id, hexid("PIDWAIT"))
    prolific_server.standing["get_submission"] = "throttle:1"

    page.goto(study_url)
    assert page.get_by_role("heading", name="Waiting for Prolific").count() == 1
    assert "takes you to the study as soon as Prolific answers" in page.get_by_role("status").inner_text()
    assert not Assignment.objects.filter(provider_assignment_id=session).exists()
    del prolific_server.standing["get_submission"]
    page.get_by_role("heading", name=batch.title).wait_for(timeout=JOB_DEADLINE_MS)  # no reload, no click
    assert Assignment.objects.filter(provider_assignment_id=session).exists()


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_a_participants_hand_signals_are_stored_with_their_answers(query_set, prolific_server, page):
    """Issue 69: the external-study page records what a participant's hands leave, as the in-house HIT page
    does: a paste while the first query is shown, the tab left while the second is, then the answers."""
    from tests.platforms.inhouse.test_browser_hand_signals import KEYS, _paste, _switch_tab_and_back

    batch = make_prolific_batch(query_set)
    provider = ProlificProvider(Prolific(f"{prolific_server.base}/api/v1/", TOKEN, sleep=lambda s: None))
    services.publish_batch(batch, provider)
    batch.refresh_from_db()
    session, study_url = prolific_server.start(batch.hit_type_id, hexid("PIDHANDS"))
    page.goto(study_url)
    assignment = Assignment.objects.get(provider_assignment_id=session)
    queries = [hq.batch_query for hq in assignment.hit.hit_queries.select_related("batch_query").order_by("position")]
    label = {q.qid: TRUTH.get(q.qid, q.gold_label) for q in queries}

    _paste(page)  # while the first query is shown
    page.keyboard.press(KEYS[label[queries[0].qid]])
    _switch_tab_and_back(page)  # while the second is
    page.keyboard.press(KEYS[label[queries[1].qid]])
    for query in queries[2:]:  # the rest (the HIT's gold question among them)
        page.keyboard.press(KEYS[label[query.qid]])
    with page.expect_navigation():
        page.keyboard.press("Enter")

    assert page.url == f"{prolific_server.base}/submissions/complete?cc={completion_code(batch)}"
    stored = {
        qid: (answer, pastes, leaves, ms)
        for qid, answer, pastes, leaves, ms in Judgment.objects.filter(assignment=assignment).values_list(
            "batch_query__qid", "label", "pastes", "tab_leaves", "item_ms"
        )
    }
    assert {qid: row[:3] for qid, row in stored.items()} == {
        q.qid: (label[q.qid], int(i == 0), int(i == 1)) for i, q in enumerate(queries)
    }
    assert all(ms is not None and ms >= 0 for *_, ms in stored.values())
