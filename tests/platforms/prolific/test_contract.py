"""The project's calls to Prolific, and its Prolific-compatible test servers, against Prolific's published
API reference (``../shared/reference/prolific/publicapi.yaml``), through :mod:`.contract` (openapi-core).

Every call site of the client modules is found in their source and must be an operation of the
reference (a plain text search for ``.request(``/``.pages(`` finds no call the source scan missed);
every route a test server answers under ``/api/`` must be one too; and the servers' own checks are
shown to refuse what the reference does not offer (404/405), to refuse a body it refuses (400), and to
turn an answer that breaks it into a 500, each recorded for the test to fail on.
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request

import pytest

from tests.platforms.prolific import contract
from tests.platforms.prolific.fake_server import TOKEN, FakeProlific, serve
from tests.platforms.taskbuilder.fake_server import FakeTaskBuilder

pytestmark = pytest.mark.skipif(not contract.REFERENCE.is_file(), reason=f"no reference at {contract.REFERENCE}")

CALLS = contract.client_calls() if contract.REFERENCE.is_file() else []
#: Call sites whose path is a variable (the client's own plumbing: the page reader's next link, the
#: transport under ``request``): not calls of an operation themselves.
PLUMBING = {
    ('self.request("GET", url)', "list_pages"),
    ("transport.request(method, path, body, repeatable=repeatable)", "request"),
}


@pytest.mark.parametrize("call", CALLS, ids=lambda c: f"{c.method} {c.path} ({c.where})")
def test_every_call_of_the_clients_is_an_operation_of_the_reference(call):
    found = contract.reference().operation(call.method, call.example())
    assert found is not None, f"{call.where}: {call.method} {call.example()} is not in Prolific's reference"


def test_the_source_scan_misses_no_call():
    """Every ``.request(``/``.pages(`` of the client modules, found by a plain text search, is a call the
    scan listed (same file and line) or the client's plumbing, whose path is a variable."""
    listed = {c.where for c in CALLS}
    unlisted = []
    for file in contract.CLIENT_FILES:
        for number, line in enumerate(file.read_text(encoding="utf-8").splitlines(), 1):
            for match in re.finditer(r"[\w.]+\.(request|pages)\((.*)", line):
                text = match.group(0)
                where = f"{file.relative_to(contract.ROOT)}:{number}"
                if where in listed or text.startswith("def ") or any(text.startswith(p[0]) for p in PLUMBING):
                    continue
                if re.search(r"\.(request|pages)\(\s*$", text) or "self.request(\n" in text:
                    continue
                unlisted.append(f"{where}: {text.strip()}")
    assert not unlisted, "calls the contract does not see:\n" + "\n".join(unlisted)
    assert len(CALLS) >= 30  # studies, submissions, bonuses, groups, hooks, Task Builder: all found
    assert (
        sum(c.where.startswith("platforms/prolific/connection/services.py") for c in CALLS) == 3
    )  # the connection's test


def _routes(server_class) -> list[tuple[str, str]]:
    found = []
    for verb, pattern, _name in server_class.ROUTES:
        path = "/" + re.sub(r"\(\?P<\w+>\[\^/\]\+\)", "5f0c0ffee0000000000000a1", pattern)
        if path.startswith(contract.API_PREFIXES):
            found.append((verb, path))
    return found


@pytest.mark.parametrize(
    ("verb", "path"), sorted(set(_routes(FakeProlific) + _routes(FakeTaskBuilder))), ids=lambda v: str(v)
)
def test_every_route_of_the_test_servers_is_an_operation_of_the_reference(verb, path):
    reference = contract.reference()
    assert reference.operation(verb, path) or reference.operation(verb, path + "/"), f"{verb} {path}"


def _call(base: str, method: str, path: str, body=None) -> tuple[int, dict]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(base + path, data=data, method=method)
    request.add_header("Authorization", f"Token {TOKEN}")
    request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, json.loads(answer.read() or b"null")
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"null")


def test_a_server_refuses_what_the_reference_does_not_offer_and_records_it():
    fake = FakeTaskBuilder()
    base, server = serve(fake)
    try:
        # No list of datasets in the reference: the path exists (POST), the method does not.
        assert _call(base, "GET", "/api/v1/data-collection/datasets?workspace_id=w")[0] == 405
        # No such path at all.
        assert _call(base, "GET", "/api/v1/data-collection/datasets/d1/imports/i1")[0] == 404
        # A body the reference refuses: a Task Builder batch without its task_details.
        status, answer = _call(base, "POST", "/api/v1/data-collection/batches", {"name": "n", "workspace_id": "w"})
        assert status == 400 and "task_details" in answer["error"]["detail"]
        assert fake.calls == []  # none of them reached a route
    finally:
        server.shutdown()
    found = contract.reset()
    assert len(found) == 3 and "405" in found[0] and "404" in found[1] and "task_details" in found[2]


def test_an_answer_that_breaks_the_reference_becomes_a_500_and_is_recorded():
    fake = FakeTaskBuilder()
    fake.batches["b1"] = {"status": "READY"}
    fake.batch_status = lambda args, query, body: (200, {"status": "DONE"})  # not one of the reference's statuses
    base, server = serve(fake)
    try:
        status, answer = _call(base, "GET", "/api/v1/data-collection/batches/b1/status")
    finally:
        server.shutdown()
    assert status == 500 and "DONE" in answer["error"]["detail"]
    found = contract.reset()
    assert len(found) == 1 and "'DONE' is not one of" in found[0]


def test_a_study_body_the_reference_refuses_is_refused_as_prolific_would():
    """``reward`` is an integer (cents) in the reference's study: a decimal string is a 400, never a study."""
    fake = FakeProlific()
    base, server = serve(fake)
    try:
        status, _ = _call(
            base,
            "POST",
            "/api/v1/studies/",
            {"name": "n", "description": "d", "reward": "1.50", "total_available_places": 3},
        )
    finally:
        server.shutdown()
    assert status == 400 and fake.studies == {}
    found = contract.reset()
    assert len(found) == 1 and "reward" in found[0]


@pytest.fixture
def task_builder(settings, query_set, tmp_path):
    """The Task Builder server (Prolific's routes and Task Builder's) serving the settings' Prolific API,
    and a Task Builder batch of 6 queries, 2 HITs with one gold question each, 2 answers a query."""
    from annotation import services
    from annotation.crowd.services.batches import read_gold_file
    from tests.platforms.taskbuilder.fake_server import serve as serve_task_builder

    fake = FakeTaskBuilder()
    url, server = serve_task_builder(fake)
    settings.PROLIFIC_API_URL, settings.PROLIFIC_API_TOKEN = url, TOKEN
    settings.PROLIFIC_WORKSPACE_ID, settings.PROLIFIC_PROJECT_ID = "ws-1", "project-1"
    settings.SITE_URL = "http://127.0.0.1:9"  # the test server's webhook deliveries are refused: nothing else gets them
    gold_file = tmp_path / "gold.tsv"
    gold_file.write_text("g1\twhat is a mother\tf\ng2\twhat is a father\tm\n")
    batch = services.create_batch(
        "tb",
        services.BatchSettings(
            provider="taskbuilder", queries_per_hit=3, assignments_per_query=2, gold_per_hit=1, gold_pass_fraction=1.0
        ),
        query_set=query_set,
        gold=read_gold_file(gold_file),
    )
    yield fake, batch
    server.shutdown()


def test_every_operation_the_clients_call_is_sent_through_a_validating_server(task_builder, settings):
    """Each operation the call sites name is driven once through the Task Builder server (which serves
    Prolific's routes too), with the bodies and parameters the clients build, and validated there: a
    Task Builder batch published, worked and synced (approve, reject), escalated; the study's places,
    its cost, a submission read, bonuses set up and paid, participant groups, the webhook calls, and the
    Connections page's test. A call site added without driving it here fails, naming its operation."""
    from decimal import Decimal

    from annotation import services
    from annotation.crowd.services.sync import sync_batch
    from platforms.prolific.client import Prolific
    from platforms.prolific.connection.services import check_prolific
    from tests.platforms.taskbuilder.test_taskbuilder import _truth_of, provider, wrong_on_gold

    fake, batch = task_builder
    contract.SEEN.clear()
    services.publish_batch(batch, provider())
    batch.refresh_from_db()
    study_id = batch.hit_type_id
    sessions = [fake.work(study_id, "P1", _truth_of), fake.work(study_id, "P2", wrong_on_gold)]
    fake.advance(3600)
    sync_batch(batch, provider(fake))
    hit = batch.hits.first()
    type(hit).objects.filter(pk=hit.pk).update(max_assignments=3)
    provider(fake).add_assignments(batch.hits.get(pk=hit.pk), 1, "e1")

    client = Prolific(settings.PROLIFIC_API_URL, TOKEN, sleep=lambda seconds: None)
    client.set_places(study_id, 9)
    client.study_cost(Decimal("0.40"), 4)
    client.get_submission(sessions[0])
    client.submission_bonuses(sessions[0])
    client.pay_bonuses(client.set_up_bonuses(study_id, {"P1": Decimal("0.10")}))
    group = client.create_group("ws-1", "g")
    assert client.find_group("ws-1", "g")["id"] == group["id"]
    client.add_to_group(group["id"], ["P1", "P2"])
    client.delete_group(group["id"])
    client.hook_secrets("ws-1")
    client.create_hook_secret("ws-1")
    subscription, secret = client.create_hook_subscription("ws-1", "study.status.change", "https://example.org/h/")
    client.confirm_hook_subscription(subscription["id"], secret)
    client.all_hook_subscriptions("ws-1")
    list(client.subscription_events(subscription["id"], ("FAILED", "PENDING")))
    client.delete_hook_subscription(subscription["id"])
    # A rehearsal: a test participant, then a test study made from a draft (the draft is the server's
    # state here; creating a study was driven above through the Task Builder publish).
    client.create_test_participant("rehearsal@example.org")
    fake.studies["draft-contract"] = dict(fake.studies[study_id], id="draft-contract", status="UNPUBLISHED")
    client.create_test_study("draft-contract")
    check_prolific()

    reference = contract.reference()
    called = {reference.operation(c.method, c.example()).operation_id: c.where for c in CALLS}
    assert not contract.reset()
    missing = {op: where for op, where in called.items() if op not in contract.SEEN}
    assert not missing, f"operations called by the clients but never driven through a validating server: {missing}"
