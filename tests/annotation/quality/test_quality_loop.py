"""Warn and block thresholds, budgets and adaptive escalation with in-house annotators.

Numbers are worked by hand: a worker who gets 0 of 4 gold answers right has gold
accuracy 0.00; a local assignment costs its reward (no fee), so a budget of 0.05 pays
for exactly one extra assignment at 0.05.
"""

from decimal import Decimal

import pytest
from django.core.management import call_command

from annotation import services
from annotation.crowd.providers import get_provider
from annotation.crowd.services.sync import sync_batch
from annotation.models import Batch, Escalation, WorkerFlag
from annotation.quality.services.budget import budget_left, set_extra_budget
from annotation.quality.services.escalation import (
    escalate_batch,
    parse_until,
    plan_escalation,
    set_auto_escalation,
    settled_queries,
)
from annotation.quality.services.thresholds import apply_thresholds
from core.errors import ServiceError
from platforms.inhouse.services.handout import next_assignment
from platforms.inhouse.services.hit_page import submit_local_assignment
from tests.annotation.conftest import TRUTH, answers_for, make_batch


def _do_all(batch, annotator, override=None):
    """The annotator answers every HIT of the batch they are given."""
    while (assignment := next_assignment(annotator, batch)) is not None:
        submit_local_assignment(assignment, answers_for(assignment, override=override))


def test_block_and_warn_thresholds_at_sync(gold_batch, annotators, client, researcher):
    Batch.objects.filter(pk=gold_batch.pk).update(block_gold_accuracy=0.5, warn_gold_accuracy=0.9, min_answers_judged=4)
    gold_batch.refresh_from_db()
    good, careless, sloppy = annotators
    _do_all(gold_batch, good)
    _do_all(gold_batch, careless, {"g1": "n", "g2": "n"})  # 0 of 4 gold right

    result = sync_batch(gold_batch)

    flag = WorkerFlag.objects.get()
    assert flag.level == "block" and flag.reason == "gold accuracy 0.00 < 0.50 over 4 answers"
    assert result.blocked == [flag.worker.pseudonym] and result.flagged == []
    assert flag.provider_blocked  # nothing to call for local: recorded as done
    # The rejected places reopen for others; the blocked annotator gets nothing more.
    assert next_assignment(careless, gold_batch) is None
    assert next_assignment(sloppy, gold_batch) is not None

    client.force_login(researcher)
    page = client.get(f"/annotation/batches/{gold_batch.name}/agreement/").content.decode()
    assert "Blocked:</strong> gold accuracy 0.00 &lt; 0.50 over 4 answers" in page
    api = client.get(f"/api/annotation/batches/{gold_batch.name}/workers/").json()
    rows = {row["worker"]: row for row in api}
    assert rows[flag.worker.pseudonym]["flag"] == "block"


def test_warn_flag_is_lifted_when_the_worker_recovers_and_needs_enough_answers(gold_batch, annotators):
    Batch.objects.filter(pk=gold_batch.pk).update(warn_gold_accuracy=0.8, min_answers_judged=2)
    gold_batch.refresh_from_db()
    provider = get_provider("local")
    first = next_assignment(annotators[0], gold_batch)
    submit_local_assignment(first, answers_for(first, override={"g1": "n"}))  # 1 of 2: 0.50
    assert apply_thresholds(gold_batch, provider).flagged
    flag = WorkerFlag.objects.get()
    assert flag.level == "warn" and flag.reason == "gold accuracy 0.50 < 0.80 over 2 answers"
    assert not flag.worker.blocked

    second = next_assignment(annotators[0], gold_batch)
    submit_local_assignment(second, answers_for(second))  # 3 of 4: 0.75, still below
    apply_thresholds(gold_batch, provider)
    assert WorkerFlag.objects.get().reason == "gold accuracy 0.75 < 0.80 over 4 answers"

    Batch.objects.filter(pk=gold_batch.pk).update(warn_gold_accuracy=0.7)
    gold_batch.refresh_from_db()
    assert apply_thresholds(gold_batch, provider).lifted == [flag.worker.pseudonym]
    assert not WorkerFlag.objects.exists()

    Batch.objects.filter(pk=gold_batch.pk).update(warn_gold_accuracy=0.8, min_answers_judged=5)
    gold_batch.refresh_from_db()
    apply_thresholds(gold_batch, provider)
    assert not WorkerFlag.objects.exists()  # 4 gold answers are not enough to judge


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"block_gold_accuracy": 1.5}, "between 0 and 1"),
        ({"warn_agreement": 0.5, "block_agreement": 0.7}, "above the warn one"),
        ({"min_answers_judged": 0}, "at least 1"),
        ({"extra_budget": Decimal("-1")}, "extra budget: must be at least 0"),
    ],
)
def test_create_batch_refuses_bad_thresholds(query_set, values, message):
    with pytest.raises(ServiceError, match=message):
        make_batch(query_set, **values)
    assert not Batch.objects.exists()


def test_create_batch_command_stores_thresholds_and_budget(query_set):
    call_command(
        "create_batch",
        "--name=th",
        "--queries=gq",
        "--warn-gold=0.9",
        "--block-gold=0.6",
        "--block-agreement=0.4",
        "--min-answers=5",
        "--budget=2.50",
        verbosity=0,
    )
    batch = Batch.objects.get(name="th")
    assert (batch.warn_gold_accuracy, batch.block_gold_accuracy, batch.warn_agreement, batch.block_agreement) == (
        0.9,
        0.6,
        None,
        0.4,
    )
    assert batch.min_answers_judged == 5 and batch.extra_budget == Decimal("2.50")


def test_parse_until():
    assert parse_until("majority") is None and parse_until("posterior:0.9") == 0.9
    for bad in ("posterior:0.4", "posterior:1", "posterior:x", "consensus"):
        with pytest.raises(ServiceError, match="majority or posterior"):
            parse_until(bad)


def _tied_batch(query_set, annotators, **settings):
    """6 queries in 2 HITs of 3, 2 annotators each; they disagree on 101 and on 103: one tie per HIT."""
    batch = make_batch(query_set, **settings)
    services.publish_batch(batch)
    batch.refresh_from_db()
    _do_all(batch, annotators[0])
    _do_all(batch, annotators[1], {"101": "f", "103": "n"})
    sync_batch(batch)
    return batch


def test_posterior_target_settles_fewer_queries_than_majority(query_set, annotators):
    batch = _tied_batch(query_set, annotators)
    by_majority = settled_queries(batch, "majority")
    assert by_majority == set(TRUTH) - {"101", "103"}
    # Two workers who agree on 4 of 6: no query reaches a 0.99 posterior with two votes.
    strict, loose = settled_queries(batch, "posterior:0.99"), settled_queries(batch, "posterior:0.6")
    # A higher target settles a subset; two agreeing votes reach 0.6 but not 0.99 everywhere.
    assert strict < loose and by_majority <= loose
    assert plan_escalation(batch, until="posterior:0.6").extra_assignments == 0
    plan = plan_escalation(batch, until="posterior:0.99")
    unsettled_hits = {
        hit.pk for hit in batch.hits.all() if {hq.batch_query.qid for hq in hit.hit_queries.all()} - strict
    }
    assert {hit.pk for hit, _ in plan.hits} == unsettled_hits and len(unsettled_hits) >= 1


def test_budget_caps_the_escalation_and_the_plan_says_what_is_left_out(query_set, annotators):
    batch = _tied_batch(query_set, annotators)
    set_extra_budget(batch, Decimal("0.05"))  # one local assignment at 0.05
    plan = plan_escalation(batch)
    assert (plan.extra_assignments, len(plan.over_budget), plan.budget_left) == (1, 1, Decimal("0.05"))
    assert plan.cost.total == Decimal("0.05")
    escalations = escalate_batch(batch)
    assert len(escalations) == 1 and budget_left(batch) == Decimal("0.00")
    assert plan_escalation(batch).extra_assignments == 0  # nothing more is paid for


def test_automatic_escalation_runs_one_round_per_sync_until_a_majority(query_set, annotators):
    batch = _tied_batch(query_set, annotators)
    with pytest.raises(ServiceError, match="needs a budget"):
        set_auto_escalation(batch, "majority", max_assignments=4)
    set_extra_budget(batch, Decimal("1.00"))
    set_auto_escalation(batch, "majority", max_assignments=4)

    first = sync_batch(batch)
    assert first.escalated == 2
    again = sync_batch(batch)
    assert again.escalated == 0  # the extended HITs are not finished: no second round yet
    assert Escalation.objects.count() == 2

    _do_all(batch, annotators[2])  # the third vote follows the truth: both ties broken
    third = sync_batch(batch)
    assert third.escalated == 0 and third.completed
    assert settled_queries(batch) == set(TRUTH)
    assert budget_left(batch) == Decimal("0.90")  # 1.00 less two local assignments at 0.05


def test_escalate_command_sets_budget_and_auto(query_set, annotators, capsys):
    batch = _tied_batch(query_set, annotators)
    call_command("escalate_batch", batch.name, "--budget=0.05", "--auto", "--until=majority", "--yes")
    out = capsys.readouterr().out
    assert "Budget left: $0.05 of $0.05; 1 HIT(s) left out for lack of budget" in out
    assert "Extra cost: 1 assignment(s) = $0.05 rewards + $0.00 fees = $0.05" in out
    batch.refresh_from_db()
    assert batch.escalate_until == "majority" and batch.extra_budget == Decimal("0.05")
    assert Escalation.objects.count() == 1
    call_command("escalate_batch", batch.name, "--stop-auto")
    batch.refresh_from_db()
    assert batch.escalate_until == ""


def test_form_and_api_take_thresholds_and_budget(query_set, researcher, client):
    client.force_login(researcher)
    form = {"provider": "local", "assignments_per_query": 2, "queries_per_hit": 3, "reward": "0.10", "gold_per_hit": 0}
    thresholds = {"block_gold_accuracy": 0.6, "warn_agreement": 0.7, "min_answers_judged": 4, "extra_budget": "1.50"}
    response = client.post(
        "/api/annotation/batches/",
        {**form, **thresholds, "name": "api-th", "queries": "gq"},
        content_type="application/json",
    )
    assert response.status_code == 201
    body = response.json()
    assert (body["block_gold_accuracy"], body["warn_agreement"], body["min_answers_judged"]) == (0.6, 0.7, 4)
    assert body["extra_budget"] == "1.50" and body["warn_gold_accuracy"] is None
    page = client.post(
        "/annotation/batches/new/",
        {**form, "warn_agreement": "0.5", "block_agreement": "0.6", "name": "page-th", "queries": "gq"},
    )
    assert page.status_code == 400 and "above the warn one" in page.content.decode()
    assert not Batch.objects.filter(name="page-th").exists()
    out_of_range = client.post(
        "/api/annotation/batches/",
        {**form, "block_gold_accuracy": 1.5, "name": "api-bad", "queries": "gq"},
        content_type="application/json",
    )
    assert out_of_range.status_code == 400 and "block_gold_accuracy" in out_of_range.json()


def test_batch_page_shows_thresholds_and_the_budget_used(query_set, annotators, researcher, client):
    batch = _tied_batch(query_set, annotators, block_gold_accuracy=0.5, extra_budget=Decimal("1.00"))
    escalate_batch(batch)  # two HITs, 0.05 each
    client.force_login(researcher)
    page = client.get(f"/annotation/batches/{batch.name}/").content.decode()
    assert "block below 0.5" in page and "after 10 answers (0 workers flagged or blocked" in page
    assert "$0.10 of $1.00 used" in page
