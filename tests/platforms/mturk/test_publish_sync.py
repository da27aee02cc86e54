"""MTurk through the services, with botocore's Stubber on a real client (no network).

Publishing: HIT type then HITs with deterministic tokens; an interruption after MTurk
created a HIT but before we recorded it is repaired by re-running (HitAlreadyExists gives
the id back, no second HIT). Syncing: pagination, answer parsing, invalid answers, gold
failure -> rejection with feedback, already approved assignments.
"""

import datetime as dt
from decimal import Decimal

import pytest
from botocore.stub import ANY, Stubber

from annotation import services
from annotation.crowd.services.batches import cancel_batch, read_gold_file
from annotation.crowd.services.sync import sync_batch
from annotation.models import Assignment, Batch, Hit, Judgment, Worker, WorkerIdentity
from annotation.quality.services.escalation import escalate_batch, plan_escalation
from core.errors import ServiceError
from platforms.mturk.client import MTurk, make_client
from platforms.mturk.provider import MTurkProvider
from tests.annotation.conftest import TRUTH
from tests.platforms.mturk.fake_server import build_answers_xml

HIT_TYPE = "3HITTYPE0000000000000000000001"
HIT_IDS = ["3HIT00000000000000000000000001", "3HIT00000000000000000000000002"]
T0 = dt.datetime(2024, 5, 1, 12, 0, tzinfo=dt.UTC)


@pytest.fixture
def stubbed(monkeypatch):
    """A real MTurk client (sandbox endpoint, fake credentials) whose answers the test scripts."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    client = make_client()
    with Stubber(client) as stubber:
        yield stubber, MTurkProvider(MTurk(client, max_calls_per_second=None))
        stubber.assert_no_pending_responses()


@pytest.fixture
def mturk_batch(query_set, tmp_path):
    gold = tmp_path / "gold.tsv"
    gold.write_text("g1\tis my mother at home\tf\n")
    return services.create_batch(
        "mt",
        services.BatchSettings(
            provider="mturk",
            assignments_per_query=2,
            queries_per_hit=3,
            reward=Decimal("0.10"),
            provider_options={"locales": ["US"], "min_approval_rate": 95},
            gold_per_hit=1,
        ),
        query_set=query_set,
        gold=read_gold_file(gold),
    )


def _expect_hit_type(stubber):
    stubber.add_response(
        "create_hit_type",
        {"HITTypeId": HIT_TYPE},
        {
            "Title": ANY,
            "Description": ANY,
            "Keywords": ANY,
            "Reward": "0.10",
            "AssignmentDurationInSeconds": 1800,
            "AutoApprovalDelayInSeconds": 3 * 86400,
            "QualificationRequirements": [
                {
                    "QualificationTypeId": "00000000000000000071",
                    "Comparator": "In",
                    "LocaleValues": [{"Country": "US"}],
                    "ActionsGuarded": "Accept",
                },
                {
                    "QualificationTypeId": "000000000000000000L0",
                    "Comparator": "GreaterThanOrEqualTo",
                    "IntegerValues": [95],
                    "ActionsGuarded": "Accept",
                },
            ],
        },
    )


def _create_params(hit: Hit) -> dict:
    return {
        "HITTypeId": HIT_TYPE,
        "Question": ANY,
        "LifetimeInSeconds": 7 * 86400,
        "MaxAssignments": 2,
        "UniqueRequestToken": hit.unique_token,
        "RequesterAnnotation": f"mt HIT {hit.position}",
    }


def _expect_create(stubber, hit: Hit, hit_id: str):
    stubber.add_response("create_hit_with_hit_type", {"HIT": {"HITId": hit_id}}, _create_params(hit))


def _publish(mturk_batch, stubbed):
    stubber, provider = stubbed
    _expect_hit_type(stubber)
    for hit, hit_id in zip(mturk_batch.hits.order_by("position"), HIT_IDS, strict=True):
        _expect_create(stubber, hit, hit_id)
    assert services.publish_batch(mturk_batch, provider) == 2


def test_publish_creates_a_hit_type_then_one_hit_per_local_hit(mturk_batch, stubbed):
    captured = []
    original = MTurkProvider.publish_hit

    def spy(self, hit, html):
        captured.append(html)
        return original(self, hit, html)

    MTurkProvider.publish_hit = spy
    try:
        _publish(mturk_batch, stubbed)
    finally:
        MTurkProvider.publish_hit = original
    mturk_batch.refresh_from_db()
    assert mturk_batch.status == Batch.Status.PUBLISHED and mturk_batch.hit_type_id == HIT_TYPE
    assert list(mturk_batch.hits.order_by("position").values_list("provider_id", flat=True)) == HIT_IDS
    # The HIT page posts to the sandbox's externalSubmit with the assignment id, and is self-contained.
    page = captured[0]
    assert 'action="https://workersandbox.mturk.com/mturk/externalSubmit"' in page
    assert 'name="assignmentId"' in page and "csrfmiddlewaretoken" not in page
    assert page.count("<fieldset") == 4  # 3 queries and 1 gold question


def test_interrupted_publish_is_finished_by_running_again_without_a_second_hit(mturk_batch, stubbed):
    """MTurk created HIT 2, then the process died before its id was saved."""
    stubber, provider = stubbed
    hits = list(mturk_batch.hits.order_by("position"))
    _expect_hit_type(stubber)
    _expect_create(stubber, hits[0], HIT_IDS[0])
    _expect_create(stubber, hits[1], HIT_IDS[1])
    original = MTurkProvider.publish_hit
    calls = []

    def dies_after_second_call(self, hit, html):
        hit_id = original(self, hit, html)
        calls.append(hit_id)
        if len(calls) == 2:
            raise KeyboardInterrupt  # after MTurk answered, before the id is recorded
        return hit_id

    MTurkProvider.publish_hit = dies_after_second_call
    try:
        with pytest.raises(KeyboardInterrupt):
            services.publish_batch(mturk_batch, provider)
    finally:
        MTurkProvider.publish_hit = original
    assert list(Hit.objects.filter(batch=mturk_batch).order_by("position").values_list("provider_id", flat=True)) == [
        HIT_IDS[0],
        None,
    ]

    # Re-run: the HIT type is not created again; HIT 1 is skipped; HIT 2 is requested with
    # the same token and MTurk answers HitAlreadyExists naming the HIT it made.
    stubber.add_client_error(
        "create_hit_with_hit_type",
        service_error_code="RequestError",
        service_message=f"The HIT with ID {HIT_IDS[1]} already exists.",
        modeled_fields={
            "Message": f"The HIT with ID {HIT_IDS[1]} already exists.",
            "TurkErrorCode": "AWS.MechanicalTurk.HitAlreadyExists",
        },
        expected_params=_create_params(hits[1]),
    )
    batch = Batch.objects.get(pk=mturk_batch.pk)
    assert services.publish_batch(batch, provider) == 1
    assert list(batch.hits.order_by("position").values_list("provider_id", flat=True)) == HIT_IDS
    assert batch.status == Batch.Status.PUBLISHED
    # A third run has nothing to do and calls nothing.
    assert services.publish_batch(batch, provider) == 0


def _hit_listing(hit: Hit, hit_id: str) -> dict:
    return {
        "HITId": hit_id,
        "HITTypeId": HIT_TYPE,
        "RequesterAnnotation": f"{hit.batch.name} HIT {hit.position}",
        "CreationTime": T0,
    }


def test_after_mturk_forgot_the_token_a_lost_hit_is_found_not_created_again(mturk_batch, stubbed):
    """An attempt 2 days ago may have created HIT 2; MTurk no longer knows its token."""
    stubber, provider = stubbed
    hits = list(mturk_batch.hits.order_by("position"))
    Batch.objects.filter(pk=mturk_batch.pk).update(hit_type_id=HIT_TYPE, status=Batch.Status.PUBLISHED)
    Hit.objects.filter(pk=hits[0].pk).update(provider_id=HIT_IDS[0], status=Hit.Status.OPEN)
    two_days_ago = dt.datetime.now(dt.UTC) - dt.timedelta(days=2)
    Hit.objects.filter(pk=hits[1].pk).update(publish_attempted=two_days_ago)
    # ListHITs over two short pages finds it: no CreateHITWithHITType call is expected.
    stubber.add_response(
        "list_hits",
        {"HITs": [_hit_listing(hits[0], HIT_IDS[0])], "NextToken": "p2", "NumResults": 1},
        {"MaxResults": 100},
    )
    stubber.add_response(
        "list_hits",
        {"HITs": [_hit_listing(hits[1], HIT_IDS[1])], "NumResults": 1},
        {"MaxResults": 100, "NextToken": "p2"},
    )
    batch = Batch.objects.get(pk=mturk_batch.pk)
    assert services.publish_batch(batch, provider) == 1
    assert list(batch.hits.order_by("position").values_list("provider_id", flat=True)) == HIT_IDS


def test_after_mturk_forgot_the_token_a_hit_not_found_is_created(mturk_batch, stubbed):
    stubber, provider = stubbed
    hits = list(mturk_batch.hits.order_by("position"))
    Batch.objects.filter(pk=mturk_batch.pk).update(hit_type_id=HIT_TYPE, status=Batch.Status.PUBLISHED)
    Hit.objects.filter(pk=hits[0].pk).update(provider_id=HIT_IDS[0], status=Hit.Status.OPEN)
    Hit.objects.filter(pk=hits[1].pk).update(publish_attempted=dt.datetime.now(dt.UTC) - dt.timedelta(days=2))
    stubber.add_response(
        "list_hits", {"HITs": [_hit_listing(hits[0], HIT_IDS[0])], "NumResults": 1}, {"MaxResults": 100}
    )
    _expect_create(stubber, hits[1], HIT_IDS[1])
    batch = Batch.objects.get(pk=mturk_batch.pk)
    assert services.publish_batch(batch, provider) == 1
    assert batch.hits.get(position=2).provider_id == HIT_IDS[1]


def _assignment(number: int, hit_id: str, worker: str, answers: dict[str, str], status="Submitted") -> dict:
    return {
        "AssignmentId": f"3ASSIGNMENT{number:019d}",
        "WorkerId": worker,
        "HITId": hit_id,
        "AssignmentStatus": status,
        "AcceptTime": T0,
        "SubmitTime": T0 + dt.timedelta(minutes=number),
        "Answer": build_answers_xml(answers),
    }


def _truthful(hit: Hit, **override) -> dict[str, str]:
    answers = {}
    for hq in hit.hit_queries.select_related("batch_query"):
        bq = hq.batch_query
        answers[hq.field_name] = override.get(bq.qid, bq.gold_label if bq.is_gold else TRUTH[bq.qid])
    answers["assignmentId"] = "ignored"
    return answers


def test_sync_pages_parses_validates_and_reviews(mturk_batch, stubbed):
    stubber, provider = stubbed
    _publish(mturk_batch, stubbed)
    hit1, hit2 = mturk_batch.hits.order_by("position")
    missing = _truthful(hit1)
    missing.pop("q-2")
    unknown = _truthful(hit2)
    unknown["q-1"] = "maybe"
    assignments_1 = [
        _assignment(1, HIT_IDS[0], "AWORKER1", _truthful(hit1)),  # valid, passes gold
        _assignment(2, HIT_IDS[0], "AWORKER2", missing),  # one answer missing: rejected, saying which
    ]
    assignments_2 = [
        _assignment(3, HIT_IDS[1], "AWORKER1", _truthful(hit2, g1="m")),  # fails gold: rejected
        _assignment(4, HIT_IDS[1], "AWORKER3", unknown),  # unknown category, gold fine: rejected too
    ]
    # HIT 1 comes in two pages, the first one short but with a NextToken.
    params = {"HITId": HIT_IDS[0], "MaxResults": 100, "AssignmentStatuses": ["Submitted", "Approved", "Rejected"]}
    stubber.add_response(
        "list_assignments_for_hit", {"Assignments": assignments_1[:1], "NextToken": "page-2", "NumResults": 1}, params
    )
    stubber.add_response(
        "list_assignments_for_hit",
        {"Assignments": assignments_1[1:], "NumResults": 1},
        params | {"NextToken": "page-2"},
    )
    stubber.add_response(
        "list_assignments_for_hit",
        {"Assignments": assignments_2, "NumResults": 2},
        params | {"HITId": HIT_IDS[1]},
    )
    stubber.add_response("approve_assignment", {}, {"AssignmentId": assignments_1[0]["AssignmentId"]})
    for rejected in (assignments_1[1], *assignments_2):
        stubber.add_response(
            "reject_assignment", {}, {"AssignmentId": rejected["AssignmentId"], "RequesterFeedback": ANY}
        )
    # each rejected place is offered again (annotation.quality.services.reoffers), once, with its own token
    for hit_id in (HIT_IDS[0], HIT_IDS[1], HIT_IDS[1]):
        stubber.add_response(
            "create_additional_assignments_for_hit",
            {},
            {"HITId": hit_id, "NumberOfAdditionalAssignments": 1, "UniqueRequestToken": ANY},
        )
    result = sync_batch(mturk_batch, provider)
    assert (result.new, result.invalid, result.approved, result.rejected, result.kept) == (4, 2, 1, 3, 0)

    stored = {a.provider_assignment_id: a for a in Assignment.objects.all()}
    assert len(stored) == 4
    first, second = (stored[a["AssignmentId"]] for a in assignments_1)
    gold_failed, bad_category = (stored[a["AssignmentId"]] for a in assignments_2)
    assert first.status == "approved" and first.valid and first.gold_passed
    assert second.status == "rejected" and second.valid is False and second.gold_passed is True
    assert Judgment.objects.get(assignment=second, label=None).invalid_reason == "missing answer"
    assert second.feedback.startswith("1 of the 4 queries of this HIT was left without a usable answer (")
    assert gold_failed.status == "rejected" and gold_failed.gold_passed is False
    assert "is my mother at home" in gold_failed.feedback and "you answered Male" in gold_failed.feedback
    assert Judgment.objects.get(assignment=bad_category, label=None).invalid_reason == "unknown category 'maybe'"
    assert bad_category.status == "rejected" and "an answer that is not a category" in bad_category.feedback
    assert "<QuestionFormAnswers" in first.raw_answer

    # Workers are pseudonymous: MTurk ids live only in WorkerIdentity.
    assert Worker.objects.count() == 3
    assert set(WorkerIdentity.objects.values_list("external_id", flat=True)) == {"AWORKER1", "AWORKER2", "AWORKER3"}
    assert not any(w.startswith("A") for w in Worker.objects.values_list("pseudonym", flat=True))
    assert first.worker == gold_failed.worker  # the same MTurk worker is one worker across HITs


def test_sync_stores_each_assignment_once_and_tolerates_already_approved(mturk_batch, stubbed):
    stubber, provider = stubbed
    _publish(mturk_batch, stubbed)
    hit1, _ = mturk_batch.hits.order_by("position")
    params = {"HITId": HIT_IDS[0], "MaxResults": 100, "AssignmentStatuses": ["Submitted", "Approved", "Rejected"]}
    only = _assignment(1, HIT_IDS[0], "AWORKER1", _truthful(hit1))
    for sync_round in range(2):
        stubber.add_response("list_assignments_for_hit", {"Assignments": [only], "NumResults": 1}, params)
        stubber.add_response(
            "list_assignments_for_hit", {"Assignments": [], "NumResults": 0}, params | {"HITId": HIT_IDS[1]}
        )
        if sync_round == 0:
            # Someone approved it on the requester website meanwhile: MTurk refuses, the
            # assignment turns out to be Approved, which is what we wanted.
            stubber.add_client_error(
                "approve_assignment",
                service_error_code="RequestError",
                service_message="This operation can be called with a status of: Submitted",
                modeled_fields={"Message": "This operation can be called with a status of: Submitted"},
                expected_params={"AssignmentId": only["AssignmentId"]},
            )
            stubber.add_response(
                "get_assignment",
                {"Assignment": only | {"AssignmentStatus": "Approved"}},
                {"AssignmentId": only["AssignmentId"]},
            )
    first = sync_batch(mturk_batch, provider)
    assert (first.new, first.approved) == (1, 1)
    second = sync_batch(mturk_batch, provider)  # nothing new, nothing reviewed again
    assert (second.new, second.approved, second.rejected) == (0, 0, 0)
    assert Assignment.objects.get().status == "approved"
    assert Judgment.objects.count() == 4


def test_approve_all_approves_failed_gold(mturk_batch, stubbed):
    stubber, provider = stubbed
    _publish(mturk_batch, stubbed)
    hit1, _ = mturk_batch.hits.order_by("position")
    params = {"HITId": HIT_IDS[0], "MaxResults": 100, "AssignmentStatuses": ["Submitted", "Approved", "Rejected"]}
    failed = _assignment(1, HIT_IDS[0], "AWORKER1", _truthful(hit1, g1="n"))
    stubber.add_response("list_assignments_for_hit", {"Assignments": [failed], "NumResults": 1}, params)
    stubber.add_response(
        "list_assignments_for_hit", {"Assignments": [], "NumResults": 0}, params | {"HITId": HIT_IDS[1]}
    )
    stubber.add_response("approve_assignment", {}, {"AssignmentId": failed["AssignmentId"]})
    result = sync_batch(mturk_batch, provider, approve_all=True)
    assert (result.approved, result.rejected) == (1, 0)


def test_escalation_on_mturk_adds_assignments_with_a_deterministic_token(mturk_batch, stubbed):
    stubber, provider = stubbed
    _publish(mturk_batch, stubbed)
    hit1 = mturk_batch.hits.get(position=1)
    params = {"HITId": HIT_IDS[0], "MaxResults": 100, "AssignmentStatuses": ["Submitted", "Approved", "Rejected"]}
    # HIT 1: two workers disagree on its first query; HIT 2 gets no answers.
    first_qid = hit1.hit_queries.exclude(batch_query__is_gold=True).order_by("position")[0].batch_query.qid
    other = "o" if TRUTH[first_qid] != "o" else "n"
    answers = [
        _assignment(1, HIT_IDS[0], "AWORKER1", _truthful(hit1)),
        _assignment(2, HIT_IDS[0], "AWORKER2", _truthful(hit1, **{first_qid: other})),
    ]
    stubber.add_response("list_assignments_for_hit", {"Assignments": answers, "NumResults": 2}, params)
    stubber.add_response(
        "list_assignments_for_hit", {"Assignments": [], "NumResults": 0}, params | {"HITId": HIT_IDS[1]}
    )
    for a in answers:
        stubber.add_response("approve_assignment", {}, {"AssignmentId": a["AssignmentId"]})
    sync_batch(mturk_batch, provider)

    plan = plan_escalation(mturk_batch, max_assignments=3)
    assert [(hit.pk, qids) for hit, qids in plan.hits] == [(hit1.pk, [first_qid])]
    assert plan.cost.total == Decimal("0.12")  # $0.10 reward + $0.02 fee
    stubber.add_response(
        "create_additional_assignments_for_hit",
        {},
        {"HITId": HIT_IDS[0], "NumberOfAdditionalAssignments": 1, "UniqueRequestToken": ANY},
    )
    escalations = escalate_batch(mturk_batch, max_assignments=3, provider=provider)
    assert len(escalations) == 1 and escalations[0].applied is False  # object as created; row is applied
    assert mturk_batch.escalations.get().applied
    hit1.refresh_from_db()
    assert hit1.max_assignments == 3
    with pytest.raises(ServiceError, match="fewer than 10"):
        plan_escalation(mturk_batch, max_assignments=10)


def test_cancel_expires_every_open_hit(mturk_batch, stubbed):
    stubber, provider = stubbed
    _publish(mturk_batch, stubbed)
    for hit_id in HIT_IDS:
        stubber.add_response("update_expiration_for_hit", {}, {"HITId": hit_id, "ExpireAt": ANY})
    assert cancel_batch(mturk_batch, provider) == 2
    assert set(mturk_batch.hits.values_list("status", flat=True)) == {"expired"}


def test_unreadable_answer_xml_is_recorded_as_invalid_never_guessed(mturk_batch, stubbed):
    stubber, provider = stubbed
    _publish(mturk_batch, stubbed)
    params = {"HITId": HIT_IDS[0], "MaxResults": 100, "AssignmentStatuses": ["Submitted", "Approved", "Rejected"]}
    broken = _assignment(1, HIT_IDS[0], "AWORKER1", {}) | {"Answer": "<QuestionFormAnswers><Answer>"}
    stubber.add_response("list_assignments_for_hit", {"Assignments": [broken], "NumResults": 1}, params)
    stubber.add_response(
        "list_assignments_for_hit", {"Assignments": [], "NumResults": 0}, params | {"HITId": HIT_IDS[1]}
    )
    # Not the worker's fault (MTurk wrote the document): approved with an explanation, never guessed.
    from annotation.crowd.services.answers import UNREADABLE_FEEDBACK

    stubber.add_response(
        "approve_assignment",
        {},
        {"AssignmentId": broken["AssignmentId"], "RequesterFeedback": UNREADABLE_FEEDBACK},
    )
    result = sync_batch(mturk_batch, provider)
    assert (result.new, result.invalid, result.approved, result.kept) == (1, 1, 1, 0)
    assignment = Assignment.objects.get()
    assert assignment.raw_answer == "<QuestionFormAnswers><Answer>"
    assert set(assignment.judgments.values_list("label", "invalid_reason")) == {(None, "unreadable answer")}


def test_mturk_admin_balance_and_block_worker_by_pseudonym(db, stubbed, monkeypatch):
    from io import StringIO

    from django.core.management import call_command

    from annotation.crowd.services.pseudonyms import worker_for

    stubber, provider = stubbed
    monkeypatch.setattr("platforms.mturk.services.default_mturk", lambda: provider.mturk)
    out = StringIO()
    stubber.add_response("get_account_balance", {"AvailableBalance": "10000.00"}, {})
    call_command("mturk_admin", "balance", stdout=out)
    assert "Available balance: $10000.00" in out.getvalue()
    worker = worker_for("mturk", "AWORKER9")
    stubber.add_response("create_worker_block", {}, {"WorkerId": "AWORKER9", "Reason": "copied answers"})
    call_command("mturk_admin", "block-worker", worker.pseudonym, "--reason", "copied answers", stdout=out)
    worker.refresh_from_db()
    assert worker.blocked


def test_hit_forms_post_to_the_configured_submit_url(settings, stubbed):
    _, provider = stubbed
    assert provider.form_action() == "https://workersandbox.mturk.com/mturk/externalSubmit"
    settings.MTURK_ENDPOINT_URL = "http://127.0.0.1:5000"
    assert provider.form_action() == "http://127.0.0.1:5000/mturk/externalSubmit"
    settings.MTURK_SUBMIT_URL = "http://127.0.0.1:5001/submit"
    assert provider.form_action() == "http://127.0.0.1:5001/submit"
