"""MTurk review over real HTTP against the MTurk-compatible server: a submission with a query
left unanswered, or answered with something that is not a category, is rejected at sync with
feedback the worker can understand -- never left for MTurk to approve and pay after the
auto-approval delay -- and a second sync changes nothing."""

import datetime as dt
from decimal import Decimal

import pytest

from annotation import services
from annotation.crowd.services.sync import sync_batch
from annotation.models import Assignment, Hit, Judgment
from core.errors import ServiceError
from tests.annotation.conftest import TRUTH
from tests.platforms.mturk.fake_server import build_answers_xml
from tests.platforms.mturk.test_mturk_compatible_server import server  # noqa: F401  (the server fixture)


def _answers(hit: Hit, override: dict[str, str | None] | None = None) -> str:
    """The HIT answered truthfully but for ``override`` (``None``: the query left out)."""
    answers = {}
    for hq in hit.hit_queries.select_related("batch_query").order_by("position"):
        answer = (override or {}).get(hq.batch_query.qid, TRUTH[hq.batch_query.qid])
        if answer is not None:
            answers[hq.field_name] = answer
    return build_answers_xml({**answers, "assignmentId": "from-the-form"})


@pytest.fixture
def batch(query_set):
    return services.create_batch(
        "review",
        services.BatchSettings(provider="mturk", assignments_per_query=3, queries_per_hit=3, reward=Decimal("0.05")),
        query_set=query_set,
    )


def test_empty_and_invalid_submissions_are_rejected_with_feedback_and_a_second_sync_changes_nothing(
    server,  # noqa: F811
    batch,
):
    fake, _ = server
    services.publish_batch(batch)
    hit = batch.hits.order_by("position").first()
    qids = [hq.batch_query.qid for hq in hit.hit_queries.order_by("position")]
    valid = fake.submit(hit.provider_id, "GOOD", _answers(hit))
    empty = fake.submit(hit.provider_id, "EMPTY", build_answers_xml({"assignmentId": "from-the-form"}))
    invalid = fake.submit(hit.provider_id, "SLOPPY", _answers(hit, {qids[0]: "maybe", qids[2]: None}))

    result = sync_batch(batch)

    assert (result.new, result.invalid, result.approved, result.rejected, result.kept) == (3, 2, 1, 2, 0)
    assert fake.assignments[valid]["AssignmentStatus"] == "Approved"
    assert fake.assignments[empty]["AssignmentStatus"] == "Rejected"
    assert fake.assignments[invalid]["AssignmentStatus"] == "Rejected"
    shown = fake.assignments[empty]["RequesterFeedback"]
    assert shown.startswith("This HIT was submitted without a usable answer to any of its 3 queries")
    assert "Non-gendered, Female, Male, Other or multiple genders" in shown
    shown = fake.assignments[invalid]["RequesterFeedback"]
    texts = {hq.batch_query.qid: hq.batch_query.text for hq in hit.hit_queries.select_related("batch_query")}
    assert shown.startswith("2 of the 3 queries of this HIT were left without a usable answer")
    assert f'"{texts[qids[0]]}": an answer that is not a category' in shown
    assert f'"{texts[qids[2]]}": no answer' in shown
    assert texts[qids[1]] not in shown
    stored = {a.provider_assignment_id: a for a in Assignment.objects.all()}
    assert stored[invalid].status == "rejected" and stored[invalid].feedback == shown
    assert stored[invalid].reviewed_at is not None and stored[valid].status == "approved"

    calls = (fake.calls.count("ApproveAssignment"), fake.calls.count("RejectAssignment"))
    again = sync_batch(batch)
    assert (again.new, again.approved, again.rejected, again.updated) == (0, 0, 0, 0)
    assert (fake.calls.count("ApproveAssignment"), fake.calls.count("RejectAssignment")) == calls


def test_a_rejection_mturk_already_made_is_tolerated_once(server, batch):  # noqa: F811
    """The answer to RejectAssignment was lost after MTurk rejected: botocore retries, MTurk
    says the assignment is no longer Submitted, it is looked up and found rejected: done."""
    fake, _ = server
    services.publish_batch(batch)
    hit = batch.hits.order_by("position").first()
    empty = fake.submit(hit.provider_id, "EMPTY", build_answers_xml({"assignmentId": "from-the-form"}))
    fake.faults["RejectAssignment"] = ["lose_response"]

    result = sync_batch(batch)

    assert result.rejected == 1
    assert fake.calls.count("RejectAssignment") == 2 and fake.assignments[empty]["AssignmentStatus"] == "Rejected"
    assert Assignment.objects.get().status == "rejected"
    assert sync_batch(batch).rejected == 0
    assert fake.calls.count("RejectAssignment") == 2


def test_an_unreadable_answer_document_is_approved_not_left_to_auto_approval(server, batch):  # noqa: F811
    """MTurk writes the answer document from the posted form: one we cannot read is not the worker's fault."""
    fake, _ = server
    services.publish_batch(batch)
    hit = batch.hits.order_by("position").first()
    broken = fake.submit(hit.provider_id, "WORKER", "<QuestionFormAnswers><Answer>")
    result = sync_batch(batch)
    assert (result.new, result.invalid, result.approved, result.rejected, result.kept) == (1, 1, 1, 0, 0)
    assert fake.assignments[broken]["AssignmentStatus"] == "Approved"
    assert "RejectAssignment" not in fake.calls
    assert not Judgment.objects.filter(assignment__provider_assignment_id=broken, label__isnull=False).exists()
    assert sync_batch(batch).approved == 0  # reviewed once


def test_an_mturk_batch_refuses_an_auto_approval_delay_not_longer_than_the_sync_interval(query_set, settings):
    settings.MTURK_SYNC_INTERVAL_SECONDS = 86400
    assert services.BatchSettings().auto_approval_delay == dt.timedelta(days=3)
    short = services.BatchSettings(provider="mturk", auto_approval_delay=dt.timedelta(hours=12))
    with pytest.raises(
        ServiceError, match=r"auto-approval delay must be longer than the sync interval \(1 day, 0:00:00"
    ):
        short.validate()
    services.BatchSettings(provider="mturk", auto_approval_delay=dt.timedelta(days=1, seconds=1)).validate()
    services.BatchSettings(provider="local", auto_approval_delay=dt.timedelta(hours=12)).validate()
    settings.MTURK_SYNC_INTERVAL_SECONDS = 3600
    short.validate()
