"""A Task Builder study end to end over real HTTP, against the Task Builder–compatible server beside
these tests (:mod:`.fake_server`): the batch's queries and gold become a dataset and a batch with the
four-category question, published as a study; participants label on "Prolific"; a sync reads the
finished sessions' responses and they become judgments like any other (gold checked, approved or
rejected on Prolific, agreement, export). Throttling (429 + Retry-After), 5xx, lost answers,
duplicated and out-of-order responses and a session still in progress are dealt on the way."""

from __future__ import annotations

from decimal import Decimal

import pytest

from annotation import services
from annotation.crowd.services.batches import read_gold_file
from annotation.crowd.services.sync import sync_batch
from annotation.exports.services import export_queries
from annotation.models import Assignment, Judgment, Worker
from annotation.results.selectors.agreement import agreement_summary
from genderbias.labels import LABELS
from platforms.taskbuilder.client import TaskBuilder, TaskBuilderError
from platforms.taskbuilder.provider import QUIET_SECONDS, SCHEMA, TaskBuilderProvider, batch_items
from tests.annotation.conftest import TRUTH
from tests.platforms.taskbuilder.fake_server import TOKEN, FakeTaskBuilder, serve

GOLD = {"g1": "f", "g2": "m"}


@pytest.fixture
def fake(settings):
    fake = FakeTaskBuilder()
    url, server = serve(fake)
    settings.PROLIFIC_API_URL = url
    settings.PROLIFIC_API_TOKEN = TOKEN
    settings.PROLIFIC_WORKSPACE_ID = "ws-1"
    settings.PROLIFIC_PROJECT_ID = "project-1"
    settings.SITE_URL = "http://127.0.0.1:9"  # the test server's webhook deliveries are refused: nothing else gets them
    yield fake
    server.shutdown()


def provider(fake: FakeTaskBuilder | None = None) -> TaskBuilderProvider:
    """A provider whose client waits for nothing (back-off and polls still counted by the server), on the
    server's clock when given."""
    from django.conf import settings

    client = TaskBuilder(settings.PROLIFIC_API_URL, TOKEN, sleep=lambda seconds: None, base_delay=0.0)
    return TaskBuilderProvider(client, polls=10, poll_seconds=0.0, clock=(lambda: fake.clock) if fake else None)


def synced(fake: FakeTaskBuilder, batch, *, wait: float = QUIET_SECONDS + 1):
    """A sync ``wait`` seconds later on the server's clock (by default once finished sessions are quiet)."""
    fake.advance(wait)
    return sync_batch(batch, provider(fake))


@pytest.fixture
def batch(query_set, tmp_path):
    """6 queries in 2 HITs of 3, one gold question in each, 2 participants a HIT: 4 places."""
    gold_file = tmp_path / "gold.tsv"
    gold_file.write_text("g1\twhat is a mother\tf\ng2\twhat is a father\tm\n")
    return services.create_batch(
        "tb",
        services.BatchSettings(
            provider="taskbuilder",
            queries_per_hit=3,
            assignments_per_query=2,
            gold_per_hit=1,
            gold_pass_fraction=1.0,
            reward=Decimal("0.40"),
            provider_options={"taskbuilder_minutes": 4},
        ),
        query_set=query_set,
        gold=read_gold_file(gold_file),
    )


def _truth_of(point: dict) -> str:
    from annotation.models import BatchQuery

    query = BatchQuery.objects.get(text=point["query"])
    return query.gold_label if query.is_gold else TRUTH[query.qid]


def wrong_on_gold(point: dict) -> str:
    from annotation.models import BatchQuery

    query = BatchQuery.objects.get(text=point["query"])
    return "o" if query.is_gold else TRUTH[query.qid]


def test_a_task_builder_study_runs_end_to_end_over_real_http(fake, batch, tmp_path):
    # Publishing through a Prolific that throttles, fails and loses answers: each creation is
    # looked up by name after a lost answer, the upload is PUT again after a 429 and a 5xx.
    fake.faults["create_dataset"] = ["throttle"]
    fake.faults["upload"] = ["throttle:1", "error"]
    fake.faults["dataset_status"] = ["error", "throttle"]
    fake.faults["create_batch"] = ["throttle", "lose_response"]
    fake.faults["set_up_batch"] = ["lose_response"]
    fake.faults["create_study"] = ["lose_response"]
    fake.faults["transition_study"] = ["throttle", "lose_response"]
    published = services.publish_batch(batch, provider())
    batch.refresh_from_db()

    assert published == 2 and batch.status == batch.Status.PUBLISHED
    assert len(fake.datasets) == len(fake.batches) == len(fake.studies) == 1
    (dataset,) = fake.datasets.values()
    (tb_batch,) = fake.batches.values()
    (study,) = fake.studies.values()
    assert dataset["total_datapoint_count"] == 8  # 2 HITs of 3 queries and 1 gold question, uploaded once
    assert sorted(len(group) for group in tb_batch["groups"].values()) == [4, 4]
    assert set(tb_batch["groups"]) == set(batch.hits.values_list("unique_token", flat=True))
    assert tb_batch["options"] == list(LABELS) and tb_batch["status"] == "READY"
    assert study["id"] == batch.hit_type_id and study["status"] == "ACTIVE"
    assert study["data_collection_id"] == tb_batch["id"] and study["total_available_places"] == 4
    assert study["data_collection_metadata"] == {"annotators_per_task": 2}  # the batch's answers per query
    assert study["reward"] == 40 and study["estimated_completion_time"] == 4

    # Three participants finish (one misses the gold question), one is still working.
    sessions = [
        fake.work(study["id"], pid, choose)
        for pid, choose in (("P1", _truth_of), ("P2", _truth_of), ("P3", wrong_on_gold))
    ]
    working = fake.start(study["id"], "P4", _truth_of, answered=2)
    # Reading them back through duplicated, shuffled pages, a throttled and a failing read.
    fake.duplicate_responses = fake.shuffle_responses = True
    fake.faults["list_responses"] = ["throttle", "error"]
    fake.faults["list_submissions"] = ["error"]

    result = synced(fake, batch)

    assert (result.new, result.invalid, result.approved, result.rejected) == (3, 0, 2, 1)
    assert {fake.submissions[s]["status"] for s in sessions[:2]} == {"APPROVED"}
    assert fake.submissions[sessions[2]]["status"] == "REJECTED"
    assert fake.submissions[sessions[2]]["rejection"][0] == "FAILED_CHECK"
    assert fake.submissions[working]["status"] == "ACTIVE"
    assert not Assignment.objects.filter(provider_assignment_id=working).exists()
    recorded = Assignment.objects.filter(hit__batch=batch)
    assert set(recorded.values_list("provider_assignment_id", flat=True)) == set(sessions)
    assert set(Worker.objects.filter(assignments__hit__batch=batch).values_list("provider", flat=True)) == {
        "taskbuilder"
    }
    # Each finished session's answers are judgments: its HIT's 3 queries and its gold question, once each.
    assert Judgment.objects.filter(assignment__hit__batch=batch).count() == 3 * 4
    for judgment in Judgment.objects.filter(assignment__provider_assignment_id=sessions[0]).select_related(
        "batch_query"
    ):
        query = judgment.batch_query
        assert judgment.label == (query.gold_label if query.is_gold else TRUTH[query.qid])

    # A rejected session gives its place back on Prolific: nothing is added, nothing paid twice.
    assert study["total_available_places"] == 4
    # A second sync (a new provider: nothing cached) changes nothing.
    again = synced(fake, batch)
    assert (again.new, again.approved, again.rejected) == (0, 0, 0)
    assert Judgment.objects.filter(assignment__hit__batch=batch).count() == 12

    # The one still working submits, a fifth takes the place the rejected one gave back; the next sync reads both.
    fake.finish(working, _truth_of)
    fifth = fake.work(study["id"], "P5", _truth_of)
    result = synced(fake, batch)
    assert (result.new, result.approved, result.rejected) == (2, 2, 0)
    assert {fake.submissions[s]["status"] for s in (working, fifth)} == {"APPROVED"}

    # What the answers add up to, and the export, as for any batch: two approved votes a query, all true.
    assert agreement_summary(batch)["judgments"] == 6 * 2
    export = export_queries(batch, "all", tmp_path / "out.tsv")
    assert export.queries == 6


def test_publishing_again_after_a_failure_creates_nothing_twice(fake, batch):
    """Prolific keeps failing the study's creation: publishing fails with the dataset and batch made;
    publishing again finds them by name, uploads nothing twice and makes one study."""
    fake.standing["create_study"] = "error"
    with pytest.raises(TaskBuilderError):
        services.publish_batch(batch, provider())
    assert len(fake.datasets) == len(fake.batches) == 1 and not fake.studies

    del fake.standing["create_study"]
    services.publish_batch(batch, provider())
    batch.refresh_from_db()
    (dataset,) = fake.datasets.values()
    assert dataset["total_datapoint_count"] == 8
    assert len(fake.batches) == len(fake.studies) == 1
    assert fake.calls.count("upload") == 1 and fake.calls.count("set_up_batch") == 1
    assert batch.hit_type_id in fake.studies and fake.studies[batch.hit_type_id]["status"] == "ACTIVE"


def _received(fake: FakeTaskBuilder) -> list[dict]:
    """The import jobs that received a file (each file received is appended to its dataset)."""
    return [job for job in fake.imports.values() if job["status"] != "uninitialised"]


def test_an_upload_whose_answers_are_lost_is_imported_once_whatever_stops_publishing(fake, batch):
    """Review finding (issue 42): the file was uploaded again after an interrupted import. Here every
    answer to the upload is lost though the file arrived (publishing fails), then every answer to the
    dataset's status is lost while it is imported (publishing fails again): the next publish sees from
    the dataset's status that it received a file and waits for it. One dataset, one batch, one study,
    each query once."""
    fake.standing["upload"] = "lose_response"  # carried out, then the connection dropped, every time
    with pytest.raises(TaskBuilderError, match="uploading the dataset's file"):
        services.publish_batch(batch, provider())
    assert len(fake.datasets) == len(fake.batches) == 1 and len(_received(fake)) == 1 and not fake.studies

    del fake.standing["upload"]
    fake.standing["dataset_status"] = "lose_response"
    with pytest.raises(TaskBuilderError, match="status"):
        services.publish_batch(batch, provider())
    assert len(_received(fake)) == 1

    del fake.standing["dataset_status"]
    fake.faults["list_batches"] = ["lose_response"]  # the batch looked up again after a lost answer
    services.publish_batch(batch, provider())
    batch.refresh_from_db()

    assert batch.status == batch.Status.PUBLISHED
    assert len(fake.datasets) == len(fake.batches) == len(fake.studies) == 1
    assert fake.calls.count("upload_url") == 1 and len(_received(fake)) == 1
    (dataset,) = fake.datasets.values()
    points = [(point["hit_token"], point["field"]) for point in dataset["datapoints"]]
    assert dataset["total_datapoint_count"] == len(points) == len(set(points)) == 8  # no query twice
    (tb_batch,) = fake.batches.values()
    assert sorted(len(group) for group in tb_batch["groups"].values()) == [4, 4]
    assert fake.studies[batch.hit_type_id]["data_collection_id"] == tb_batch["id"]


def test_a_dataset_whose_creation_lost_its_answer_is_left_empty_and_nothing_is_imported_twice(fake, batch):
    """The reference lists no datasets, so a dataset whose creation answer was lost cannot be found again:
    another is made, and the lost one stays empty (no file, no batch, no study uses it)."""
    fake.faults["create_dataset"] = ["lose_response"]
    with pytest.raises(TaskBuilderError, match="may have been done"):
        services.publish_batch(batch, provider())
    services.publish_batch(batch, provider())
    batch.refresh_from_db()
    assert batch.status == batch.Status.PUBLISHED and len(fake.datasets) == 2
    assert sorted(d["total_datapoint_count"] for d in fake.datasets.values()) == [0, 8]
    (tb_batch,) = fake.batches.values()
    assert fake.datasets[tb_batch["dataset_id"]]["total_datapoint_count"] == 8
    assert len(fake.studies) == 1 and fake.calls.count("upload_url") == 1


def test_the_files_a_dataset_receives_are_imported_one_at_a_time_and_each_is_appended(fake):
    """The test server as the pages describe it: a second file waits while the first is processed, the
    dataset is ``PROCESSING`` until both are in, and both are appended (why the provider never sends
    its file twice)."""
    from django.conf import settings

    client = TaskBuilder(settings.PROLIFIC_API_URL, TOKEN, sleep=lambda seconds: None)
    dataset = client.create_dataset("ws-1", "d", SCHEMA)
    assert dataset["status"] == "UNINITIALISED" == client.dataset_status(dataset["id"])
    line = b'{"query": "what is a synapse", "hit": "h", "hit_token": "h", "field": "q-1"}\n'
    first, second = (client.upload_url(dataset["id"], "queries.jsonl") for _ in range(2))
    for target in (first, second):
        client.upload(target["upload_url"], line, "application/jsonl")
    looks = [client.dataset_status(dataset["id"]) for _ in range(4)]
    assert looks == ["PROCESSING", "PROCESSING", "PROCESSING", "READY"]
    assert fake.datasets[dataset["id"]]["total_datapoint_count"] == 2


def test_a_refusal_is_a_clear_error_and_nothing_is_published(fake, batch):
    """A 4xx from Prolific (here its refusal of our token) names the call, and the batch stays a draft."""
    from django.conf import settings

    client = TaskBuilder(settings.PROLIFIC_API_URL, "wrong-token", sleep=lambda seconds: None)
    with pytest.raises(TaskBuilderError, match=r"data-collection/.*HTTP 401"):
        services.publish_batch(batch, TaskBuilderProvider(client, polls=3, poll_seconds=0.0))
    batch.refresh_from_db()
    assert batch.status == batch.Status.DRAFT and not fake.datasets


def test_a_throttled_call_waits_as_long_as_prolific_asks_and_a_lost_creation_is_found_again(fake):
    """429 with ``Retry-After: 7``: the client waits 7 s (its sleep records it) and asks again, the
    upload's PUT included; a creation whose answer was lost is not sent twice: it is looked up by name."""
    from django.conf import settings

    waits: list[float] = []
    client = TaskBuilder(settings.PROLIFIC_API_URL, TOKEN, sleep=waits.append, base_delay=0.25)
    fake.faults["create_dataset"] = ["throttle:7"]
    dataset = client.create_dataset("ws-1", "d", SCHEMA)
    assert waits == [7.0] and len(fake.datasets) == 1

    target = client.upload_url(dataset["id"], "queries.jsonl")
    fake.faults["upload"] = ["throttle:3", "error"]
    client.upload(
        target["upload_url"],
        b'{"query": "what is a synapse", "hit": "h", "hit_token": "h", "field": "q-1"}\n',
        "application/jsonl",
    )
    assert waits == [7.0, 3.0, 0.5]  # what Prolific asked, then the back-off's second step
    assert client.dataset_status(dataset["id"]) == "PROCESSING"

    fake.faults["create_batch"] = ["lose_response"]
    provider = TaskBuilderProvider(client, polls=3, poll_seconds=0.0)
    made = provider._once(
        lambda: client.find_batch("ws-1", "b"),
        lambda: client.create_batch(
            {
                "name": "b",
                "workspace_id": "ws-1",
                "dataset_id": dataset["id"],
                "task_details": {"task_name": "t", "task_introduction": "i", "task_steps": "s"},
                "batch_items": batch_items(),
            }
        ),
    )
    assert len(fake.batches) == 1 and made["id"] in fake.batches


def test_its_option_is_refused_on_another_platform_naming_task_builder_alone(query_set):
    """Two platforms store provider options now: a refusal names the one whose option was given."""
    from core.errors import ServiceError

    settings = services.BatchSettings(provider="local", provider_options={"taskbuilder_minutes": 5})
    with pytest.raises(
        ServiceError,
        match=r"^Prolific Task Builder \(hosted by Prolific\) options only apply to the taskbuilder provider$",
    ):
        services.create_batch("elsewhere", settings, query_set=query_set)
    with pytest.raises(ServiceError, match="unknown Task Builder option"):
        services.create_batch(
            "odd",
            services.BatchSettings(provider="taskbuilder", provider_options={"bonus": "0.10"}),
            query_set=query_set,
        )


def _published(fake, batch) -> dict:
    services.publish_batch(batch, provider())
    batch.refresh_from_db()
    return fake.studies[batch.hit_type_id]


def test_each_task_group_takes_the_batchs_answers_per_query_and_escalation_adds_places_a_group_can_take(fake, batch):
    """Prolific gives each task group ``annotators_per_task`` participants (1 when not set): the batch's 2
    answers per query make 2 HITs x 2 = 4 places, every one of which a participant can take, and no fifth.
    An escalated HIT raises the number for every group (Prolific's one lever): 2 more places, one each."""
    study = _published(fake, batch)
    assert study["data_collection_metadata"] == {"annotators_per_task": 2} and study["total_available_places"] == 4
    for pid in ("P1", "P2", "P3", "P4"):
        fake.work(study["id"], pid, _truth_of)
    with pytest.raises(ValueError, match="4 places taken"):
        fake.work(study["id"], "P5", _truth_of)
    assert synced(fake, batch).approved == 4

    from annotation.models import Hit

    hit = batch.hits.order_by("position").first()
    Hit.objects.filter(pk=hit.pk).update(max_assignments=3)  # as escalation_round does before asking for places
    hit.refresh_from_db()
    provider().add_assignments(hit, 1, "escalation-1")
    provider().add_assignments(hit, 1, "escalation-1")  # repeated: nothing more
    assert study["data_collection_metadata"] == {"annotators_per_task": 3} and study["total_available_places"] == 6
    assert fake.calls.count("update_study") == 1
    groups = {fake.task_groups[fake.work(study["id"], pid, _truth_of)] for pid in ("P5", "P6")}
    assert groups == set(batch.hits.values_list("unique_token", flat=True))
    result = synced(fake, batch)
    assert result.new == 2 and Assignment.objects.filter(hit=hit, status="approved").count() == 3


def test_responses_listed_late_or_changed_are_waited_for_and_nobody_is_judged_on_a_missing_one(fake, batch):
    """Prolific lists a session's responses up to 40 s after the session is finished, and a changed answer
    as a later response. A session is not read (not stored, not reviewed) until it has been quiet for
    ``QUIET_SECONDS`` with every query of its HIT answered; then its answers are the last given: the honest
    are approved, the one who missed gold rejected, each once."""
    study = _published(fake, batch)
    fake.late_share, fake.late_seconds, fake.change_share, fake.seed = 0.5, 40.0, 0.5, 3
    honest = [fake.work(study["id"], pid, _truth_of) for pid in ("P1", "P2", "P3")]
    cheat = fake.work(study["id"], "P4", wrong_on_gold)
    assert any(r["_listed_at"] > fake.clock for r in fake.responses)  # the draw dealt late ones
    assert len(fake.responses) > 4 * 4  # and changed answers (two responses to one task)

    for wait in (0, 30, 60):  # responses still arriving: nobody stored, reviewed or rejected
        assert synced(fake, batch, wait=wait).new == 0
    assert all(s["status"] == "AWAITING REVIEW" for s in fake.submissions.values())

    result = synced(fake, batch)
    assert (result.new, result.approved, result.rejected) == (4, 3, 1)
    assert [fake.submissions[s]["status"] for s in honest] == ["APPROVED"] * 3
    assert fake.submissions[cheat]["status"] == "REJECTED"
    for judgment in Judgment.objects.filter(assignment__provider_assignment_id__in=honest).select_related(
        "batch_query"
    ):
        query = judgment.batch_query
        assert judgment.label == (query.gold_label if query.is_gold else TRUTH[query.qid])
    assert synced(fake, batch).new == 0  # each reviewed once


def test_responses_that_do_not_tie_answers_to_queries_stop_the_sync_naming_the_batch(fake, batch):
    """The answer-to-query link is the datapoint's metadata on each response; a Prolific that returns none is
    a clear error naming the batch, and nothing is stored or reviewed."""
    study = _published(fake, batch)
    for tb_batch in fake.batches.values():
        tb_batch["metadata_fields"] = []  # responses without the datapoint's metadata
    session = fake.work(study["id"], "P1", _truth_of)
    with pytest.raises(TaskBuilderError, match=r"batch 'tb'.*no metadata \(hit_token, field\)"):
        synced(fake, batch)
    assert not Assignment.objects.filter(hit__batch=batch).exists()
    assert fake.submissions[session]["status"] == "AWAITING REVIEW"


def test_a_participant_who_takes_the_study_again_is_recorded_once_and_the_sync_carries_on(fake, batch):
    """Rejected (gold missed), the place freed, the same participant takes the study again: the sync
    records their first session only and goes on with everyone else's (it stopped at them before)."""
    study = _published(fake, batch)
    first = fake.work(study["id"], "P1", wrong_on_gold)
    assert synced(fake, batch).rejected == 1
    again = fake.work(study["id"], "P1", _truth_of)
    others = [fake.work(study["id"], pid, _truth_of) for pid in ("P2", "P3")]
    result = synced(fake, batch)
    assert result.new == 2 and result.approved == 2
    stored = Assignment.objects.filter(hit__batch=batch)
    assert set(stored.values_list("provider_assignment_id", flat=True)) == {first, *others}
    assert (
        stored.filter(
            worker__in=stored.get(provider_assignment_id=first).worker.__class__.objects.filter(
                assignments__provider_assignment_id=first
            )
        ).count()
        == 1
    )
    assert fake.submissions[again]["status"] == "AWAITING REVIEW"  # left for a person on Prolific


def test_a_signed_status_change_of_a_task_builder_study_re_reads_its_batch(fake, batch, settings):
    """A Task Builder study is a Prolific study: publishing subscribes the workspace to Prolific's events,
    and a signed ``study.status.change`` of the study (and a submission's) schedules a re-read of its batch
    (202, not "ignored"), which reviews the finished session."""
    import base64
    import datetime as dt
    import hashlib
    import hmac
    import json
    import time

    from core.models import Job
    from platforms.prolific.models import ProlificEvent, ProlificHookSecret
    from platforms.prolific.webhooks.services.deliveries import receive, resync_job

    settings.PROLIFIC_WEBHOOKS = True
    study = _published(fake, batch)
    assert sorted(s["event_type"] for s in fake.enabled_subscriptions()) == sorted(
        ["study.has_high_return_rate", "study.progress.change", "study.status.change", "submission.status.change"]
    )
    secret = ProlificHookSecret.objects.get(workspace_id="ws-1").value
    fake.clock -= dt.timedelta(minutes=10)  # the session completed ten minutes ago: settled at the re-read
    session = fake.work(study["id"], "P1", _truth_of)

    def delivered(payload: dict, event_id: str):
        body = json.dumps(payload).encode()
        stamp = str(int(time.time()))
        signature = base64.b64encode(hmac.new(secret.encode(), stamp.encode() + body, hashlib.sha256).digest())
        headers = {
            "X-Prolific-Request-Signature": signature.decode(),
            "X-Prolific-Request-Timestamp": stamp,
            "X-Event-ID": event_id,
        }
        return receive(headers, body)

    status = {"resource_id": study["id"], "event_type": "study.status.change", "status": "AWAITING REVIEW"}
    receipt = delivered(status, "e-study")
    assert (receipt.status, receipt.outcome, receipt.batch) == (202, "scheduled", batch.name)
    assert ProlificEvent.objects.get(event_id="e-study").batch == batch
    job = Job.objects.get(pk=receipt.job)
    resync_job.work(job, batch.pk)
    assert fake.submissions[session]["status"] == "APPROVED"
    assert Assignment.objects.get(provider_assignment_id=session).status == "approved"
    # The session's own event names a stored assignment of the Task Builder batch: a re-read too.
    changed = {"resource_id": session, "event_type": "submission.status.change", "status": "APPROVED"}
    assert delivered(changed, "e-session").status == 202


def test_slow_processing_stops_publishing_and_publishing_again_resumes_where_it_stopped(fake, batch):
    """Prolific takes longer to import the queries and to make the tasks than publishing waits: publishing
    stops ("publish again later"), and publishing again waits on, sending nothing twice."""
    fake.processing_polls = 7
    slow = TaskBuilderProvider(provider().client, polls=4, poll_seconds=0.0)
    with pytest.raises(TaskBuilderError, match="still processing"):
        services.publish_batch(batch, slow)  # the dataset's import is not over
    with pytest.raises(TaskBuilderError, match="still processing"):
        services.publish_batch(batch, slow)  # the import is over; the tasks are still being made
    assert fake.calls.count("upload") == fake.calls.count("set_up_batch") == 1 and not fake.studies
    services.publish_batch(batch, slow)
    batch.refresh_from_db()
    assert batch.status == batch.Status.PUBLISHED and len(fake.datasets) == len(fake.batches) == 1
    assert fake.calls.count("upload") == fake.calls.count("set_up_batch") == fake.calls.count("create_study") == 1
