"""The MTurk client layer against botocore's real MTurk model, never the network.

Most tests use botocore's ``Stubber``, which validates every request against the MTurk
API model. The Stubber answers in the ``before-call`` event, i.e. *before* botocore's
retry handler, so it cannot show retries. The tests of retrying (throttling, a retried
CreateHIT meeting HitAlreadyExists) instead answer raw HTTP in ``before-send``, which runs
inside botocore's real retry loop: request serialisation, signing, the ``standard``
retry policy and the JSON error parser are all the real ones.
"""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pytest
from botocore.awsrequest import AWSResponse
from botocore.exceptions import ClientError
from botocore.stub import Stubber

from platforms.mturk.client import (
    LIVE_ENDPOINT,
    LIVE_SUBMIT_URL,
    SANDBOX_ENDPOINT,
    SANDBOX_SUBMIT_URL,
    MTurk,
    make_client,
    qualification_requirements,
    submit_url,
)
from platforms.mturk.errors import MTurkError

HIT_TYPE_ID = "3W2G6J6KDKBHJ72AR3LQ5DFG8M7QEA"
HIT_ID = "3U18MJKL1WA8S1G7ULNIMQIIED9NCW"
ASSIGNMENT_ID = "34QN5IT0T2G6HMWH25AHYCMAK3608U"
WORKER_ID = "A12IHTKQFQIPD1"
TOKEN = "7-3-0123456789ab"
ROOT = Path(__file__).resolve().parents[3]
WRONG_STATUS = "This operation can be called with a status of: Submitted (1537741087056)"


@pytest.fixture(autouse=True)
def fake_aws(monkeypatch, tmp_path):
    """Fake credentials, and nothing from this machine's AWS configuration."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDTESTTESTTESTTEST")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "test-secret")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    for name in (
        "AWS_SESSION_TOKEN",
        "AWS_PROFILE",
        "AWS_DEFAULT_PROFILE",
        "AWS_ENDPOINT_URL",
        "AWS_ENDPOINT_URL_MTURK",
        "AWS_RETRY_MODE",
        "AWS_MAX_ATTEMPTS",
    ):
        monkeypatch.delenv(name, raising=False)


def _forbid_network(request, **kwargs):
    raise AssertionError(f"a test tried to send a real request to {request.url}")


class Recorded:
    """A real client (``make_client``) with a Stubber, and the operations it was asked for."""

    def __init__(self, **client_kwargs) -> None:
        self.client = make_client(**client_kwargs)
        self.operations: list[str] = []
        self.client.meta.events.register("provide-client-params.mturk", self._record)
        self.client.meta.events.register("before-send.mturk", _forbid_network)
        self.stubber = Stubber(self.client)
        self.stubber.activate()

    def _record(self, model, **kwargs):
        self.operations.append(model.name)


@pytest.fixture
def stubbed():
    recorded = Recorded()
    yield recorded
    recorded.stubber.deactivate()


@pytest.fixture
def api(stubbed) -> MTurk:
    return MTurk(stubbed.client, max_calls_per_second=None)


def request_error(stubber: Stubber, method: str, message: str, turk_code: str = "AWS.MechanicalTurk.RequestError"):
    """A RequestError as botocore surfaces MTurk's: modeled Message and TurkErrorCode."""
    stubber.add_client_error(
        method,
        service_error_code="RequestError",
        service_message=message,
        http_status_code=400,
        modeled_fields={"Message": message, "TurkErrorCode": turk_code},
    )


# -- client, endpoints, submit address -------------------------------------------------


def test_sandbox_is_the_default():
    client = make_client()
    assert client.meta.endpoint_url == SANDBOX_ENDPOINT
    assert client.meta.region_name == "us-east-1"
    assert submit_url() == SANDBOX_SUBMIT_URL


def test_live_uses_production_endpoint_and_worker_site():
    assert make_client(live=True).meta.endpoint_url == LIVE_ENDPOINT
    assert submit_url(None, True) == LIVE_SUBMIT_URL
    assert submit_url(LIVE_ENDPOINT, False) == LIVE_SUBMIT_URL
    assert submit_url(SANDBOX_ENDPOINT, True) == SANDBOX_SUBMIT_URL


def test_endpoint_override_for_any_mturk_compatible_server():
    client = make_client(endpoint_url="http://fake-turk.test:8123", live=True)
    assert client.meta.endpoint_url == "http://fake-turk.test:8123"
    assert submit_url("http://fake-turk.test:8123/", True) == "http://fake-turk.test:8123/mturk/externalSubmit"
    assert submit_url("http://fake-turk.test:8123", False, "http://x.test/post") == "http://x.test/post"


def test_client_retries_in_standard_mode():
    """botocore's ``max_attempts`` counts retries after the first request: 8 means up to 9 requests."""
    assert make_client().meta.config.retries == {"mode": "standard", "total_max_attempts": 9}
    assert make_client(max_attempts=3).meta.config.retries == {"mode": "standard", "total_max_attempts": 4}


# -- qualification requirements and HIT types --------------------------------------------


def test_masters_id_differs_between_sandbox_and_production():
    sandbox = qualification_requirements(live=False, masters=True)
    live = qualification_requirements(live=True, masters=True)
    assert sandbox == [
        {"QualificationTypeId": "2ARFPLSP75KLA8M8DH1HTEQVJT3SY6", "Comparator": "Exists", "ActionsGuarded": "Accept"}
    ]
    assert live[0]["QualificationTypeId"] == "2F1QJWKUDD8XADTFD2Q0G6UTO95ALH"


def test_no_settings_means_no_requirements():
    assert qualification_requirements(live=True) == []


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"locales": ["USA"]}, "ISO 3166"),
        ({"min_approval_rate": 101}, "percentage"),
        ({"min_approved_hits": -1}, "negative"),
    ],
)
def test_bad_qualification_settings_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        qualification_requirements(live=False, **kwargs)


def test_create_hit_type_sends_requirements_in_the_api_format(stubbed, api):
    requirements = qualification_requirements(
        live=False, locales=["US", "gb", "US-NY"], min_approval_rate=98, min_approved_hits=1000, masters=True
    )
    stubbed.stubber.add_response(
        "create_hit_type",
        {"HITTypeId": HIT_TYPE_ID},
        expected_params={
            "Title": "Is this query about a gender?",
            "Description": "Read search queries and say whom they are about.",
            "Keywords": "categorization, gender",
            "Reward": "0.10",
            "AssignmentDurationInSeconds": 1800,
            "AutoApprovalDelayInSeconds": 259200,
            "QualificationRequirements": [
                {
                    "QualificationTypeId": "00000000000000000071",
                    "Comparator": "In",
                    "LocaleValues": [{"Country": "US"}, {"Country": "GB"}, {"Country": "US", "Subdivision": "NY"}],
                    "ActionsGuarded": "Accept",
                },
                {
                    "QualificationTypeId": "000000000000000000L0",
                    "Comparator": "GreaterThanOrEqualTo",
                    "IntegerValues": [98],
                    "ActionsGuarded": "Accept",
                },
                {
                    "QualificationTypeId": "00000000000000000040",
                    "Comparator": "GreaterThanOrEqualTo",
                    "IntegerValues": [1000],
                    "ActionsGuarded": "Accept",
                },
                {
                    "QualificationTypeId": "2ARFPLSP75KLA8M8DH1HTEQVJT3SY6",
                    "Comparator": "Exists",
                    "ActionsGuarded": "Accept",
                },
            ],
        },
    )
    hit_type = api.create_hit_type(
        title="Is this query about a gender?",
        description="Read search queries and say whom they are about.",
        keywords=["categorization", "gender"],
        reward=Decimal("0.1"),
        assignment_duration_seconds=1800,
        auto_approval_delay_seconds=259200,
        qualification_requirements=requirements,
    )
    assert hit_type == HIT_TYPE_ID
    stubbed.stubber.assert_no_pending_responses()


def test_hit_type_without_requirements_sends_none(stubbed, api):
    stubbed.stubber.add_response(
        "create_hit_type",
        {"HITTypeId": HIT_TYPE_ID},
        expected_params={
            "Title": "t",
            "Description": "d",
            "Keywords": "k",
            "Reward": "1.00",
            "AssignmentDurationInSeconds": 60,
            "AutoApprovalDelayInSeconds": 3600,
        },
    )
    hit_type = api.create_hit_type(
        title="t",
        description="d",
        keywords="k",
        reward=Decimal(1),
        assignment_duration_seconds=60,
        auto_approval_delay_seconds=3600,
        qualification_requirements=[],
    )
    assert hit_type == HIT_TYPE_ID


def test_reward_with_fractions_of_a_cent_is_refused_before_any_call(stubbed, api):
    with pytest.raises(ValueError, match="whole cents"):
        api.create_hit_type(
            title="t",
            description="d",
            keywords="k",
            reward=Decimal("0.105"),
            assignment_duration_seconds=60,
            auto_approval_delay_seconds=60,
            qualification_requirements=[],
        )
    assert stubbed.operations == []


# -- creating HITs ----------------------------------------------------------------------


def create_kwargs(**overrides):
    kwargs = {
        "hit_type_id": HIT_TYPE_ID,
        "question": "<HTMLQuestion/>",
        "lifetime_seconds": 86400,
        "max_assignments": 3,
        "unique_request_token": TOKEN,
        "requester_annotation": "batch-1 HIT 3",
    }
    return kwargs | overrides


def test_create_hit_with_hit_type(stubbed, api):
    stubbed.stubber.add_response(
        "create_hit_with_hit_type",
        {"HIT": {"HITId": HIT_ID, "HITTypeId": HIT_TYPE_ID}},
        expected_params={
            "HITTypeId": HIT_TYPE_ID,
            "Question": "<HTMLQuestion/>",
            "LifetimeInSeconds": 86400,
            "MaxAssignments": 3,
            "UniqueRequestToken": TOKEN,
            "RequesterAnnotation": "batch-1 HIT 3",
        },
    )
    assert api.create_hit(**create_kwargs()) == HIT_ID
    stubbed.stubber.assert_no_pending_responses()


@pytest.mark.parametrize(
    "message",
    [
        f"There is already a HIT with this unique request token: {HIT_ID} (1626172412406)",
        f'HIT with UniqueRequestToken "{TOKEN}" already exists for HITTypeId {HIT_TYPE_ID}: HITId={HIT_ID}',
        f"{HIT_ID}",
    ],
)
def test_hit_already_exists_returns_the_existing_hit_and_creates_nothing(stubbed, api, message):
    request_error(stubbed.stubber, "create_hit_with_hit_type", message, "AWS.MechanicalTurk.HitAlreadyExists")
    assert api.create_hit(**create_kwargs()) == HIT_ID
    assert stubbed.operations == ["CreateHITWithHITType"]
    stubbed.stubber.assert_no_pending_responses()


def test_hit_already_exists_is_recognised_wherever_the_turk_code_is(stubbed, api):
    """Some servers put the Turk code inside Error rather than as a modeled field."""
    stubbed.stubber.add_client_error(
        "create_hit_with_hit_type",
        service_error_code="RequestError",
        service_message=f"HIT {HIT_ID} already exists.",
        service_error_meta={"TurkErrorCode": "AWS.MechanicalTurk.HitAlreadyExists"},
    )
    assert api.create_hit(**create_kwargs()) == HIT_ID
    assert stubbed.operations == ["CreateHITWithHITType"]


@pytest.mark.parametrize(
    "message",
    [
        "A HIT with this token already exists. (1626172412406)",
        f"HITs {HIT_ID} and 3ZZZZZZZZZZZZZZZZZZZZZZZZZZZZZ exist",
    ],
)
def test_hit_already_exists_without_a_readable_id_is_a_clear_error_not_a_new_hit(stubbed, api, message):
    request_error(stubbed.stubber, "create_hit_with_hit_type", message, "AWS.MechanicalTurk.HitAlreadyExists")
    with pytest.raises(MTurkError, match="No second HIT was created") as raised:
        api.create_hit(**create_kwargs())
    assert "batch-1 HIT 3" in str(raised.value)
    assert raised.value.turk_code == "AWS.MechanicalTurk.HitAlreadyExists"
    assert stubbed.operations == ["CreateHITWithHITType"]


def test_other_create_errors_are_raised_with_a_readable_message(stubbed, api):
    request_error(
        stubbed.stubber,
        "create_hit_with_hit_type",
        "Your account balance is insufficient. (1626172412406)",
        "AWS.MechanicalTurk.InsufficientFunds",
    )
    with pytest.raises(MTurkError) as raised:
        api.create_hit(**create_kwargs())
    error = raised.value
    assert str(error) == (
        "MTurk refused CreateHITWithHITType: Your account balance is insufficient. (1626172412406) "
        "[AWS.MechanicalTurk.InsufficientFunds]"
    )
    assert (error.operation, error.code) == ("CreateHITWithHITType", "RequestError")
    assert isinstance(error.__cause__, ClientError)


# -- botocore's real retry loop (raw HTTP answered in before-send) -------------------------


class _Body:
    def __init__(self, payload: dict) -> None:
        self._data = json.dumps(payload).encode()

    def stream(self, **kwargs):
        yield self._data


class FakeServer:
    """Answers each HTTP attempt in turn and keeps the requests botocore really sent."""

    def __init__(self, client, answers: list[tuple[int, dict]]) -> None:
        self.answers = list(answers)
        self.requests: list[dict] = []
        client.meta.events.register("before-send.mturk", self)

    def __call__(self, request, **kwargs):
        self.requests.append(
            {"target": request.headers["X-Amz-Target"].decode(), "body": json.loads(request.body or b"{}")}
        )
        status, payload = self.answers.pop(0)
        headers = {"Content-Type": "application/x-amz-json-1.1", "x-amzn-RequestId": "test-request"}
        return AWSResponse(request.url, status, headers, _Body(payload))


@pytest.fixture
def sleeps(monkeypatch):
    """botocore's backoff sleeps, recorded instead of slept."""
    slept: list[float] = []
    monkeypatch.setattr("botocore.endpoint.time.sleep", slept.append)
    return slept


THROTTLED = (400, {"__type": "ThrottlingException", "message": "Rate exceeded"})


def test_throttling_is_retried_by_botocore(sleeps):
    client = make_client()
    server = FakeServer(client, [THROTTLED, THROTTLED, (200, {"AvailableBalance": "10000.00"})])
    assert MTurk(client, max_calls_per_second=None).account_balance() == Decimal("10000.00")
    assert [r["target"] for r in server.requests] == ["MTurkRequesterServiceV20170117.GetAccountBalance"] * 3
    assert len(sleeps) == 2


def test_throttling_beyond_max_attempts_is_a_readable_error(sleeps):
    client = make_client(max_attempts=1)  # one retry after the first request
    server = FakeServer(client, [THROTTLED, THROTTLED])
    with pytest.raises(MTurkError, match="still throttled") as raised:
        MTurk(client, max_calls_per_second=None).account_balance()
    assert raised.value.code == "ThrottlingException"
    assert len(server.requests) == 2
    assert server.answers == []


def test_retried_create_meeting_its_own_success_returns_that_hit(sleeps):
    """The first attempt created the HIT but its answer was lost (500); the retry hears HitAlreadyExists."""
    client = make_client()
    server = FakeServer(
        client,
        [
            (500, {"__type": "ServiceFault", "Message": "Internal error", "TurkErrorCode": "ServiceFault"}),
            (
                400,
                {
                    "__type": "RequestError",
                    "Message": f"There is already a HIT with this unique request token: {HIT_ID} (1626172412406)",
                    "TurkErrorCode": "AWS.MechanicalTurk.HitAlreadyExists",
                },
            ),
        ],
    )
    assert MTurk(client, max_calls_per_second=None).create_hit(**create_kwargs()) == HIT_ID
    assert [r["target"].rsplit(".", 1)[1] for r in server.requests] == ["CreateHITWithHITType"] * 2
    assert {r["body"]["UniqueRequestToken"] for r in server.requests} == {TOKEN}
    assert server.answers == []


def test_missing_credentials_is_a_readable_error_and_nothing_is_sent(monkeypatch):
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    client = make_client()
    client.meta.events.register("before-send.mturk", _forbid_network)
    with pytest.raises(MTurkError, match="AWS_ACCESS_KEY_ID"):
        MTurk(client, max_calls_per_second=None).account_balance()


# -- assignments -----------------------------------------------------------------------


def assignment(number: int, status: str = "Submitted") -> dict:
    return {
        "AssignmentId": f"{number:030d}",
        "WorkerId": f"A{number:013d}",
        "HITId": HIT_ID,
        "AssignmentStatus": status,
        "Answer": "<QuestionFormAnswers/>",
    }


def test_iter_assignments_follows_next_token_across_short_pages(stubbed, api):
    pages = [([assignment(1), assignment(2)], "page-2"), ([assignment(3)], "page-3"), ([assignment(4)], None)]
    expected = {"HITId": HIT_ID, "MaxResults": 100, "AssignmentStatuses": ["Submitted", "Approved", "Rejected"]}
    previous = None
    for items, token in pages:
        response = {"Assignments": items, "NumResults": len(items)} | ({"NextToken": token} if token else {})
        params = expected | ({"NextToken": previous} if previous else {})
        stubbed.stubber.add_response("list_assignments_for_hit", response, expected_params=params)
        previous = token
    ids = [a["AssignmentId"] for a in api.iter_assignments(HIT_ID)]
    assert ids == [f"{n:030d}" for n in (1, 2, 3, 4)]
    stubbed.stubber.assert_no_pending_responses()


def test_iter_assignments_with_chosen_statuses_and_an_empty_hit(stubbed, api):
    stubbed.stubber.add_response(
        "list_assignments_for_hit",
        {"Assignments": [], "NumResults": 0},
        expected_params={"HITId": HIT_ID, "MaxResults": 100, "AssignmentStatuses": ["Submitted"]},
    )
    assert list(api.iter_assignments(HIT_ID, statuses=("Submitted",))) == []
    stubbed.stubber.assert_no_pending_responses()


def test_a_repeated_next_token_stops_instead_of_looping(stubbed, api):
    for _ in range(2):
        stubbed.stubber.add_response(
            "list_assignments_for_hit", {"Assignments": [assignment(1)], "NextToken": "same", "NumResults": 1}
        )
    with pytest.raises(MTurkError, match="repeated a NextToken"):
        list(api.iter_assignments(HIT_ID))
    assert stubbed.operations == ["ListAssignmentsForHIT"] * 2


def test_approve(stubbed, api):
    stubbed.stubber.add_response(
        "approve_assignment", {}, expected_params={"AssignmentId": ASSIGNMENT_ID, "RequesterFeedback": "Thanks!"}
    )
    stubbed.stubber.add_response("approve_assignment", {}, expected_params={"AssignmentId": ASSIGNMENT_ID})
    assert api.approve(ASSIGNMENT_ID, feedback="Thanks!") is True
    assert api.approve(ASSIGNMENT_ID) is True
    stubbed.stubber.assert_no_pending_responses()


def stub_status(stubber: Stubber, status: str) -> None:
    stubber.add_response(
        "get_assignment",
        {"Assignment": assignment(1, status) | {"AssignmentId": ASSIGNMENT_ID}, "HIT": {"HITId": HIT_ID}},
        expected_params={"AssignmentId": ASSIGNMENT_ID},
    )


def test_approving_an_approved_assignment_is_not_an_error(stubbed, api):
    request_error(stubbed.stubber, "approve_assignment", WRONG_STATUS)
    stub_status(stubbed.stubber, "Approved")
    assert api.approve(ASSIGNMENT_ID) is False
    assert stubbed.operations == ["ApproveAssignment", "GetAssignment"]
    stubbed.stubber.assert_no_pending_responses()


def test_approving_a_rejected_assignment_is_an_error(stubbed, api):
    request_error(stubbed.stubber, "approve_assignment", WRONG_STATUS)
    stub_status(stubbed.stubber, "Rejected")
    with pytest.raises(MTurkError, match="the assignment is Rejected, not Approved"):
        api.approve(ASSIGNMENT_ID)
    stubbed.stubber.assert_no_pending_responses()


def test_approving_a_not_yet_submitted_assignment_is_an_error(stubbed, api):
    """Right after submission MTurk can say "status of: null"; that is not "already approved"."""
    request_error(stubbed.stubber, "approve_assignment", "This operation can be called with a status of: null")
    stub_status(stubbed.stubber, "Submitted")
    with pytest.raises(MTurkError, match="status of: null"):
        api.approve(ASSIGNMENT_ID)


def test_other_approve_errors_are_raised_without_looking_further(stubbed, api):
    request_error(
        stubbed.stubber,
        "approve_assignment",
        f"Assignment {ASSIGNMENT_ID} does not exist. (1373477231604)",
        "AWS.MechanicalTurk.AssignmentDoesNotExist",
    )
    with pytest.raises(MTurkError, match="does not exist") as raised:
        api.approve(ASSIGNMENT_ID)
    assert raised.value.turk_code == "AWS.MechanicalTurk.AssignmentDoesNotExist"
    assert stubbed.operations == ["ApproveAssignment"]


def test_reject(stubbed, api):
    stubbed.stubber.add_response(
        "reject_assignment", {}, expected_params={"AssignmentId": ASSIGNMENT_ID, "RequesterFeedback": "Empty form."}
    )
    assert api.reject(ASSIGNMENT_ID, "Empty form.") is True
    stubbed.stubber.assert_no_pending_responses()


def test_rejecting_a_rejected_assignment_is_not_an_error(stubbed, api):
    request_error(stubbed.stubber, "reject_assignment", WRONG_STATUS)
    stub_status(stubbed.stubber, "Rejected")
    assert api.reject(ASSIGNMENT_ID, "Empty form.") is False
    stubbed.stubber.assert_no_pending_responses()


def test_rejecting_an_approved_assignment_is_an_error(stubbed, api):
    request_error(stubbed.stubber, "reject_assignment", WRONG_STATUS)
    stub_status(stubbed.stubber, "Approved")
    with pytest.raises(MTurkError, match="the assignment is Approved, not Rejected"):
        api.reject(ASSIGNMENT_ID, "Empty form.")


def test_feedback_is_made_acceptable_to_mturk(stubbed, api):
    """MTurk: up to 1024 characters, none of ASCII 0-8, 11, 12, 14-31."""
    long_feedback = "You missed gold question 2.\x0b" + "x" * 2000
    stubbed.stubber.add_response(
        "reject_assignment",
        {},
        expected_params={
            "AssignmentId": ASSIGNMENT_ID,
            "RequesterFeedback": "You missed gold question 2. " + "x" * (1024 - 29) + "…",
        },
    )
    assert api.reject(ASSIGNMENT_ID, long_feedback) is True
    stubbed.stubber.assert_no_pending_responses()


def test_reject_needs_feedback(stubbed, api):
    with pytest.raises(ValueError, match="feedback"):
        api.reject(ASSIGNMENT_ID, "  ")
    assert stubbed.operations == []


# -- rate limit --------------------------------------------------------------------------


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def test_rate_limit_spaces_every_call(stubbed):
    clock = FakeClock()
    api = MTurk(stubbed.client, max_calls_per_second=4, sleep=clock.sleep, clock=clock)
    call_times: list[float] = []
    stubbed.client.meta.events.register("provide-client-params.mturk", lambda **kw: call_times.append(clock.now))
    for _ in range(4):
        stubbed.stubber.add_response("get_account_balance", {"AvailableBalance": "1.00"})
    for _ in range(3):
        api.account_balance()
    clock.now += 10  # a long pause needs no waiting
    api.account_balance()
    assert clock.sleeps == [0.25, 0.25]
    assert call_times == [100.0, 100.25, 100.5, 110.5]


def test_rate_limit_also_spaces_pages_of_a_listing(stubbed):
    clock = FakeClock()
    api = MTurk(stubbed.client, max_calls_per_second=2, sleep=clock.sleep, clock=clock)
    stubbed.stubber.add_response("list_assignments_for_hit", {"Assignments": [], "NextToken": "t2"})
    stubbed.stubber.add_response("list_assignments_for_hit", {"Assignments": []})
    assert list(api.iter_assignments(HIT_ID)) == []
    assert clock.sleeps == [0.5]


# -- extending, expiring, bonuses, blocks, balance -----------------------------------------


def test_add_assignments(stubbed, api):
    stubbed.stubber.add_response(
        "create_additional_assignments_for_hit",
        {},
        expected_params={"HITId": HIT_ID, "NumberOfAdditionalAssignments": 2, "UniqueRequestToken": "tok-esc1"},
    )
    api.add_assignments(HIT_ID, 2, "tok-esc1")
    stubbed.stubber.assert_no_pending_responses()


def test_add_assignments_repeated_with_the_same_token_is_a_success(stubbed, api):
    request_error(
        stubbed.stubber,
        "create_additional_assignments_for_hit",
        'The idempotency token "tok-esc1" has already been processed. (1626172412406)',
    )
    api.add_assignments(HIT_ID, 2, "tok-esc1")
    assert stubbed.operations == ["CreateAdditionalAssignmentsForHIT"]


def test_add_assignments_other_errors_are_raised(stubbed, api):
    request_error(
        stubbed.stubber,
        "create_additional_assignments_for_hit",
        "HITs created with fewer than 10 assignments cannot be extended to 10 or more.",
        "AWS.MechanicalTurk.InvalidMaximumAssignmentsIncrease",
    )
    with pytest.raises(MTurkError, match="InvalidMaximumAssignmentsIncrease"):
        api.add_assignments(HIT_ID, 8, "tok-esc1")


def test_a_processed_token_that_is_not_ours_is_not_taken_for_success(stubbed, api):
    request_error(
        stubbed.stubber,
        "create_additional_assignments_for_hit",
        'The idempotency token "someone-else" has already been processed.',
    )
    with pytest.raises(MTurkError):
        api.add_assignments(HIT_ID, 2, "tok-esc1")


def test_send_bonus_once(stubbed, api):
    params = {
        "WorkerId": WORKER_ID,
        "AssignmentId": ASSIGNMENT_ID,
        "BonusAmount": "0.50",
        "Reason": "Careful work.",
        "UniqueRequestToken": "bonus-1",
    }
    stubbed.stubber.add_response("send_bonus", {}, expected_params=params)
    request_error(stubbed.stubber, "send_bonus", 'The idempotency token "bonus-1" has already been processed.')
    for _ in range(2):
        api.send_bonus(
            worker_id=WORKER_ID,
            assignment_id=ASSIGNMENT_ID,
            amount=Decimal("0.5"),
            reason="Careful work.",
            unique_request_token="bonus-1",
        )
    stubbed.stubber.assert_no_pending_responses()


@pytest.mark.parametrize("amount", [Decimal("0.001"), Decimal("-1"), Decimal("NaN")])
def test_send_bonus_refuses_impossible_amounts(stubbed, api, amount):
    with pytest.raises(ValueError):
        api.send_bonus(
            worker_id=WORKER_ID, assignment_id=ASSIGNMENT_ID, amount=amount, reason="r", unique_request_token="b"
        )
    assert stubbed.operations == []


def test_expire_hit_sets_expiry_in_the_past(stubbed, api):
    stubbed.stubber.add_response(
        "update_expiration_for_hit",
        {},
        expected_params={"HITId": HIT_ID, "ExpireAt": dt.datetime(2015, 1, 1, tzinfo=dt.UTC)},
    )
    api.expire_hit(HIT_ID)
    stubbed.stubber.assert_no_pending_responses()


def test_a_repeated_expiry_update_is_a_success(stubbed, api):
    request_error(
        stubbed.stubber,
        "update_expiration_for_hit",
        f'The idempotency token "{HIT_ID}Wed Jul 14 20:26:06 UTC 2021" has already been processed. (1626172412406)',
    )
    api.expire_hit(HIT_ID)
    assert stubbed.operations == ["UpdateExpirationForHIT"]


def test_extend_hit(stubbed, api):
    until = dt.datetime(2030, 5, 1, 12, tzinfo=dt.UTC)
    stubbed.stubber.add_response("update_expiration_for_hit", {}, expected_params={"HITId": HIT_ID, "ExpireAt": until})
    api.extend_hit(HIT_ID, until)
    with pytest.raises(ValueError, match="timezone-aware"):
        api.extend_hit(HIT_ID, dt.datetime(2030, 5, 1, 12))
    assert stubbed.operations == ["UpdateExpirationForHIT"]


def test_block_worker(stubbed, api):
    stubbed.stubber.add_response(
        "create_worker_block", {}, expected_params={"WorkerId": WORKER_ID, "Reason": "Random answers."}
    )
    api.block_worker(WORKER_ID, "Random answers.")
    stubbed.stubber.assert_no_pending_responses()


def test_account_balance_is_a_decimal(stubbed, api):
    stubbed.stubber.add_response("get_account_balance", {"AvailableBalance": "10000.00"}, expected_params={})
    balance = api.account_balance()
    assert balance == Decimal("10000.00") and isinstance(balance, Decimal)


def test_modules_import_without_django():
    """Pure Python: importing them must not pull Django in (checked in a fresh interpreter)."""
    code = "import sys, platforms.mturk.client, platforms.mturk.mturk_xml; print('django' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert result.stdout.strip() == "False"
