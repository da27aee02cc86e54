"""The quality loop over real HTTP against the MTurk-compatible server: rejected places are
offered again (once), a HIT whose rejected assignment was replaced counts as finished,
workers below a block threshold are blocked on MTurk once, escalation respects the budget."""

from decimal import Decimal

import pytest

from annotation import services
from annotation.crowd.services.batch_settings import GoldQuery
from annotation.crowd.services.batches import read_gold_file
from annotation.crowd.services.sync import sync_batch
from annotation.models import Assignment, Batch, Hit, Reoffer, WorkerFlag
from annotation.quality.services.budget import set_extra_budget
from annotation.quality.services.escalation import plan_escalation
from platforms.mturk.errors import MTurkError
from tests.annotation.conftest import TRUTH
from tests.platforms.mturk.fake_server import build_answers_xml
from tests.platforms.mturk.test_mturk_compatible_server import server  # noqa: F401  (the server fixture)


def _answers(hit: Hit, override: dict[str, str] | None = None) -> str:
    """The HIT answered truthfully (gold with its known label), but for ``override``."""
    override = override or {}
    answers = {
        hq.field_name: override.get(hq.batch_query.qid, TRUTH.get(hq.batch_query.qid, hq.batch_query.gold_label))
        for hq in hit.hit_queries.select_related("batch_query")
    }
    return build_answers_xml({**answers, "assignmentId": "from-the-form"})


@pytest.fixture
def gold_mturk_batch(query_set, tmp_path):
    """6 queries in 2 HITs of 3 + 1 gold question each, 2 assignments per HIT, on the test server."""
    gold_file = tmp_path / "gold.tsv"
    gold_file.write_text("g1\twhat is a mother\tf\n")
    batch = services.create_batch(
        "loop",
        services.BatchSettings(
            provider="mturk",
            assignments_per_query=2,
            queries_per_hit=3,
            reward=Decimal("0.10"),
            gold_per_hit=1,
            block_gold_accuracy=0.5,
            min_answers_judged=2,
        ),
        query_set=query_set,
        gold=read_gold_file(gold_file),
    )
    return batch


def _publish(batch):
    services.publish_batch(batch)
    batch.refresh_from_db()
    return list(batch.hits.order_by("position"))


def test_rejected_place_is_offered_again_once_and_the_hit_then_counts_as_finished(server, gold_mturk_batch):  # noqa: F811
    fake, _ = server
    batch = gold_mturk_batch
    first, second = _publish(batch)
    for hit in (first, second):
        fake.submit(hit.provider_id, "GOOD", _answers(hit))
    fake.submit(first.provider_id, "CARELESS", _answers(first, {"g1": "n"}))  # fails gold: rejected
    fake.submit(second.provider_id, "OTHER", _answers(second))
    # Before this work, MTurk gave the rejected place to nobody: the HIT stayed short for good.
    fake.faults["CreateAdditionalAssignmentsForHIT"] = ["lose_response"]

    result = sync_batch(batch)

    assert result.rejected == 1 and result.reoffered == 1
    # The lost answer was retried with the same token: two calls, one place added.
    assert fake.calls.count("CreateAdditionalAssignmentsForHIT") == 2
    assert fake.hits[first.provider_id]["MaxAssignments"] == 3
    reoffer = Reoffer.objects.get()
    assert reoffer.applied and reoffer.hit == first and reoffer.cost == Decimal("0.12")  # 0.10 + 20% fee
    first.refresh_from_db()
    assert first.max_assignments == 2 and first.status == Hit.Status.OPEN

    # The new worker disagrees on one query: a 1-1 tie in a finished HIT.
    qid = first.hit_queries.filter(batch_query__is_gold=False).first().batch_query.qid
    fake.submit(first.provider_id, "NEWCOMER", _answers(first, {qid: "o" if qid != "104" else "n"}))
    again = sync_batch(batch)
    assert again.new == 1 and again.reoffered == 0
    assert fake.calls.count("CreateAdditionalAssignmentsForHIT") == 2  # never a second place
    first.refresh_from_db()
    assert first.status == Hit.Status.COMPLETE
    batch.refresh_from_db()
    assert batch.status == Batch.Status.COMPLETED
    plan = plan_escalation(batch)
    assert plan.disputed == 1 and [hit.pk for hit, _ in plan.hits] == [first.pk]


def test_worker_below_the_block_threshold_is_blocked_on_mturk_once(server, gold_mturk_batch, client, researcher):  # noqa: F811
    fake, _ = server
    batch = gold_mturk_batch
    hits = _publish(batch)
    for hit in hits:
        fake.submit(hit.provider_id, "GOOD", _answers(hit))
        fake.submit(hit.provider_id, "CARELESS", _answers(hit, {"g1": "m"}))

    result = sync_batch(batch)

    flag = WorkerFlag.objects.get()
    assert result.blocked == [flag.worker.pseudonym]
    assert flag.level == "block" and flag.provider_blocked and flag.worker.blocked
    assert flag.reason == "gold accuracy 0.00 < 0.50 over 2 answers"
    assert [worker for worker, _ in fake.blocks] == ["CARELESS"]
    assert flag.reason in fake.blocks[0][1]

    sync_batch(batch)
    assert len(fake.blocks) == 1  # a later sync never blocks again

    client.force_login(researcher)
    page = client.get(f"/annotation/batches/{batch.name}/agreement/").content.decode()
    assert "Blocked:</strong> gold accuracy 0.00 &lt; 0.50 over 2 answers" in page


def test_interrupted_block_is_finished_by_the_next_sync(server, gold_mturk_batch):  # noqa: F811
    fake, _ = server
    batch = gold_mturk_batch
    hits = _publish(batch)
    for hit in hits:
        fake.submit(hit.provider_id, "GOOD", _answers(hit))
        fake.submit(hit.provider_id, "CARELESS", _answers(hit, {"g1": "m"}))
    fake.faults["CreateWorkerBlock"] = ["refuse"]

    with pytest.raises(MTurkError, match="CreateWorkerBlock"):
        sync_batch(batch)
    flag = WorkerFlag.objects.get()
    assert flag.worker.blocked and not flag.provider_blocked  # recorded before the call

    fake.faults["CreateWorkerBlock"] = []
    sync_batch(batch)
    flag.refresh_from_db()
    assert flag.provider_blocked and [w for w, _ in fake.blocks] == ["CARELESS"]


def test_reoffers_stop_at_the_budget_and_say_so(server, gold_mturk_batch):  # noqa: F811
    fake, _ = server
    batch = gold_mturk_batch
    set_extra_budget(batch, Decimal("0.20"))  # one place at 0.12, not two
    Batch.objects.filter(pk=batch.pk).update(block_gold_accuracy=None)
    hits = _publish(batch)
    for hit in hits:
        fake.submit(hit.provider_id, "GOOD", _answers(hit))
        fake.submit(hit.provider_id, "CARELESS", _answers(hit, {"g1": "m"}))

    result = sync_batch(batch)

    assert (result.rejected, result.reoffered, result.reoffer_over_budget) == (2, 1, 1)
    assert sum(h["MaxAssignments"] for h in fake.hits.values()) == 5
    assert plan_escalation(batch).budget_left == Decimal("0.08")
    assert Assignment.objects.filter(status="rejected", reoffer__isnull=True).count() == 1


def test_a_rejected_place_mturk_cannot_add_is_reported_and_the_sync_goes_on(server, query_set):  # noqa: F811
    fake, _ = server
    batch = services.create_batch(
        "nine",
        services.BatchSettings(provider="mturk", assignments_per_query=9, queries_per_hit=6, gold_per_hit=1),
        query_set=query_set,
        gold=[GoldQuery("g1", "what is a mother", "f")],
    )
    (hit,) = _publish(batch)
    fake.submit(hit.provider_id, "CARELESS", _answers(hit, {"g1": "m"}))

    result = sync_batch(batch)

    assert result.rejected == 1 and result.reoffered == 0
    assert "cannot extend a HIT of 9 assignments to 10" in result.reoffer_refused
    assert "CreateAdditionalAssignmentsForHIT" not in fake.calls and not Reoffer.objects.exists()
