"""Issue 58: the machine route never spends blind. While a query of the blind sample may still change its
crowd label, ``route`` (command, API, page) routes and publishes nothing, whatever the flags, and says what
the sample waits for: how many sample queries, on which HITs, and why (places open, handed out, an
escalation at the next sync, places no member of the team can take and how many annotators are needed).
A three-person team completes the sample (a team batch never escalates past its members): a place freed
by a failed gold check goes back to the member who failed, the only one without a kept answer to its
queries (a retake), and the wait says so. Then, at target 0.90, the crowd sees at most 60% of the queries."""

from __future__ import annotations

from collections import Counter
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from annotation import services
from annotation.crowd.services.batches import read_gold_file
from annotation.crowd.services.sync import sync_batch
from annotation.machine.services.calibration import create_calibration_sample
from annotation.machine.services.prelabels import prelabel_batch
from annotation.machine.services.routing import plan_routing, route_batch
from annotation.models import Assignment, Batch, Escalation, Hit, Judgment, Routing
from core.errors import StateError
from platforms.inhouse.services.annotators import create_annotator
from platforms.inhouse.services.simulation import simulate_local_annotations
from pooling.models import QuerySet
from pooling.services import create_query_set
from tests.annotation.machine.test_routing_service import SureMachine, _texts

TEAM = [f"simulated-{i}" for i in (1, 2, 3)]


@pytest.fixture
def team_batch(db, tmp_path):
    """400 queries (240 the machine is sure and right on, 160 it is unsure of), 3 votes a query, 10 queries
    and one gold question a HIT, a team of three in-house annotators (the simulated accounts)."""
    gold = tmp_path / "gold.tsv"
    gold.write_text("gq1\twhat is a mother\tf\ngq2\twhat is a father\tm\n")
    query_set = create_query_set("tq", _texts(), origin=QuerySet.Origin.IMPORTED)
    settings = services.BatchSettings(assignments_per_query=3, queries_per_hit=10, gold_per_hit=1)
    batch = services.create_batch("tb", settings, query_set=query_set, gold=read_gold_file(gold))
    members = [create_annotator(name, reuse=True) for name in TEAM]
    batch.team.set(members)
    prelabel_batch(batch, SureMachine())
    return batch


def _route_refused(batch, *flags):
    out = StringIO()
    with pytest.raises(CommandError, match="Routing publishes nothing while the blind sample waits") as refused:
        call_command("route", batch.name, "--target-accuracy", "0.9", *flags, stdout=out)
    return out.getvalue(), str(refused.value)


def _answer(username, batch, hits):
    """``username`` answers their next ``hits`` HITs of ``batch`` (``None``: all they can) with the true labels."""
    from django.contrib.auth import get_user_model

    from platforms.inhouse.services.handout import next_assignment
    from platforms.inhouse.services.hit_page import submit_local_assignment
    from platforms.inhouse.services.simulation import oracle_label

    user = get_user_model().objects.get(username=username)
    for _ in range(hits if hits is not None else 10**6):
        assignment = next_assignment(user, batch)
        if assignment is None:
            return
        answers = {}
        for hq in assignment.hit.hit_queries.select_related("batch_query"):
            query = hq.batch_query
            answers[hq.field_name] = query.gold_label if query.is_gold else oracle_label(query.text)
        submit_local_assignment(assignment, answers)


def _nothing_routed(batch):
    return not Routing.objects.exists() and not Batch.objects.filter(purpose=Batch.Purpose.ROUTED).exists()


@pytest.mark.slow
def test_route_publishes_nothing_while_the_sample_waits_and_a_team_of_three_completes_it(
    team_batch, researcher, client
):
    batch = team_batch
    sample = create_calibration_sample(batch, 100, seed=0)  # a team batch: its team comes along
    assert set(sample.team.values_list("username", flat=True)) == set(TEAM)
    assert sample.escalate_until == "majority" and sample.escalation_cap == 7

    # Drawn, not yet published: every query waits, and no flag routes.
    with pytest.raises(StateError, match="100 sample queries on 10 HIT"):
        plan_routing(batch, 0.9)
    for flags in ([], ["--yes"], ["--no-guarantee", "--yes"], ["--risk", "0.2", "--yes"]):
        _, refusal = _route_refused(batch, *flags)
        assert "100 sample queries on 10 HIT(s)" in refusal and "not published yet" in refusal
    assert _nothing_routed(batch)

    services.publish_batch(sample)
    hits = list(Hit.objects.filter(batch=sample).order_by("position"))
    for name in TEAM:  # each member answers the first two HITs (rightly): 20 queries labelled, 80 waiting
        _answer(name, sample, hits=2)
    plan = plan_routing(batch, 0.9, risk=None)  # the point estimate waits too
    assert not plan.ready and plan.awaiting_votes == 80 and len(plan.waiting) == 8
    assert all(w["reason"] == "3 place(s) open, 3 member(s) of the team can take them" for w in plan.waiting)
    assert sorted(w["hit"] for w in plan.waiting) == [h.position for h in hits[2:]]
    shown, _ = _route_refused(batch, "--no-guarantee", "--yes")
    assert "80 sample queries on 8 HIT(s)" in shown and f"HIT 3 of {sample.name}" in shown

    client.force_login(researcher)
    api = f"/api/annotation/batches/{batch.name}/routing/"
    preview = client.get(api, {"target_accuracy": 0.9}).json()
    assert preview["ready"] is False and preview["awaiting_votes"] == 80 and len(preview["waiting"]) == 8
    for body in ({"target_accuracy": 0.9}, {"target_accuracy": 0.9, "no_guarantee": True}):
        response = client.post(api, body, content_type="application/json")
        assert response.status_code == 409 and "publishes nothing" in response.json()["detail"]
    page = client.get(f"/annotation/batches/{batch.name}/routing/", {"target_accuracy": 0.9}).content.decode()
    assert 'id="sample-waits-table"' in page and 'id="routing-confirm"' not in page
    with pytest.raises(StateError, match="publishes nothing"):
        route_batch(batch, 0.9, no_guarantee=True)
    assert _nothing_routed(batch)

    # The team of three answers at 0.85 (splits, and some failed gold checks).
    simulate_local_annotations(sample, annotators=3, accuracy=0.9, seed=4)
    failed = set(Assignment.objects.filter(hit__batch=sample, gold_passed=False).values_list("hit_id", "worker_id"))
    assert failed  # (seed 4: some member failed a gold question)
    sync_batch(sample)  # the review rejects the failed work: its place is free, and only its member can take it
    plan = plan_routing(batch, 0.9)
    retaken = [w for w in plan.waiting if "failed its gold check" in w["reason"]]
    assert not plan.ready and retaken and not any(w["needed"] for w in plan.waiting)
    assert all("no other member can" in w["reason"] for w in retaken)
    _route_refused(batch, "--yes")
    assert _nothing_routed(batch)
    for round_ in range(8):  # the members who failed take their HITs again (and may fail again): no one is added
        simulate_local_annotations(sample, annotators=3, accuracy=0.9, seed=10 + round_)
        sync_batch(sample)
        if plan_routing(batch, 0.9).ready:
            break
    plan = plan_routing(batch, 0.9)
    assert plan.ready and not plan.waiting, plan.waiting
    assert not Escalation.objects.filter(batch=sample).exists()  # every member gave every HIT its answer
    assert set(sample.team.values_list("username", flat=True)) == set(TEAM)
    retakes = Assignment.objects.filter(hit__batch=sample).values_list("hit_id", "worker_id")
    assert failed <= {pair for pair in retakes if list(retakes).count(pair) > 1}  # each failed member retook

    # Counted from the judgments table: every sample query has three kept answers from three distinct
    # members, none twice from one member (the failed work's answers discarded, never beside the retake's).
    kept = Judgment.objects.filter(
        assignment__hit__batch=sample,
        assignment__status__in=[Assignment.Status.SUBMITTED, Assignment.Status.APPROVED],
        batch_query__is_gold=False,
    ).exclude(assignment__gold_passed=False)
    per_query = Counter(kept.values_list("batch_query_id", flat=True))
    per_member = Counter(kept.values_list("batch_query_id", "assignment__worker_id"))
    assert len(per_query) == 100 and set(per_query.values()) == {3}
    assert set(per_member.values()) == {1}

    # Once the sample is in, the route proceeds: certified at 0.90 (its few splits stay split: the team's size
    # is its cap, and they count as the machine's errors), and the crowd sees at most 60% of the queries.
    plan = plan_routing(batch, 0.9)
    assert plan.ready and plan.certified and plan.threshold == 0.97
    queries = batch.queries.filter(is_gold=False).count()
    seen_by_crowd = plan.sampled + len(plan.to_humans) + len(plan.over_budget)
    assert seen_by_crowd / queries <= 0.60
    out = StringIO()
    call_command("route", batch.name, "--target-accuracy", "0.9", "--yes", stdout=out)
    routing = Routing.objects.get()
    assert routing.to_humans == len(plan.to_humans) and "Published" in out.getvalue()


def test_a_team_of_three_completes_a_sample_whose_splits_it_cannot_escalate(db):
    """Without gold failures, three members answer every HIT once and the sample is in: a split query is
    final (the team's size is its cap; it counts as the machine's error), never a place nobody can take."""
    query_set = create_query_set("t3", _texts()[200:320], origin=QuerySet.Origin.IMPORTED)
    settings = services.BatchSettings(assignments_per_query=3, queries_per_hit=10)
    batch = services.create_batch("t3b", settings, query_set=query_set)
    batch.team.set([create_annotator(name, reuse=True) for name in TEAM])
    prelabel_batch(batch, SureMachine())
    sample = create_calibration_sample(batch, 60, seed=0)
    services.publish_batch(sample)
    simulate_local_annotations(sample, annotators=3, accuracy=0.7, seed=1)
    before = plan_routing(batch, 0.9, risk=None)
    assert before.ready and before.undecided > 0  # splits, none awaiting a fourth vote
    sync_batch(sample)
    assert not Escalation.objects.filter(batch=sample).exists()
    assert Batch.objects.get(pk=sample.pk).status == Batch.Status.COMPLETED
    assert plan_routing(batch, 0.9, risk=None).ready


@pytest.mark.slow
def test_places_escalation_added_that_no_member_can_take_say_who_is_needed(db, researcher, client):
    """A team of four: three members answer the sample, splits are escalated (one more place on their HITs,
    for the fourth member, the only one who has not answered them), and the fourth member leaves. Those places
    can never be filled by the team: the wait (command, API, page) and the sample's batch page say which HITs,
    why (escalation asks an answer from someone who has not answered), and that a fourth member is needed.
    A new member takes them, and the sample is in: counted from the judgments table."""
    from django.contrib.auth import get_user_model
    from django.urls import reverse

    from platforms.inhouse.services.team import set_active

    query_set = create_query_set("t4", _texts()[200:320], origin=QuerySet.Origin.IMPORTED)
    settings = services.BatchSettings(assignments_per_query=3, queries_per_hit=10)
    batch = services.create_batch("t4b", settings, query_set=query_set)
    batch.team.set([create_annotator(name, reuse=True) for name in [*TEAM, "member-4"]])
    prelabel_batch(batch, SureMachine())
    sample = create_calibration_sample(batch, 60, seed=0)
    services.publish_batch(sample)
    simulate_local_annotations(sample, annotators=3, accuracy=0.6, seed=1)  # the three simulated members
    sync_batch(sample)  # splits: their HITs get a fourth place, which member-4 could take
    escalated = set(Hit.objects.filter(batch=sample, max_assignments=4).values_list("position", flat=True))
    assert escalated and Escalation.objects.filter(batch=sample).exists()
    plan = plan_routing(batch, 0.9, risk=None)
    assert not plan.ready and not any(w["needed"] for w in plan.waiting)  # member-4 can take them

    set_active(get_user_model().objects.get(username="member-4"), False)  # member-4 leaves
    plan = plan_routing(batch, 0.9, risk=None)
    stuck = [w for w in plan.waiting if w["needed"]]
    assert not plan.ready and {w["hit"] for w in stuck} == escalated
    assert all(w["needed"] == 1 and w["escalated"] == 1 and w["team"] == 3 for w in stuck)
    assert all(
        f"1 place on HIT {w['hit']} needs a fourth team member (1 added by escalation, which asks an answer from "
        "someone who has not answered the HIT; each of the team's 3 active members has)" in w["reason"]
        for w in stuck
    )
    shown, refusal = _route_refused(batch, "--yes")
    positions = ", ".join(str(p) for p in sorted(escalated))
    who = f"{len(escalated)} place{'s' if len(escalated) > 1 else ''} on HIT{'s' if len(escalated) > 1 else ''} {positions}"
    assert f"The team cannot finish the sample: {who} need" in shown and "a fourth team member" in shown
    assert "a fourth team member" in refusal and _nothing_routed(batch)
    client.force_login(researcher)
    preview = client.get(f"/api/annotation/batches/{batch.name}/routing/", {"target_accuracy": 0.9}).json()
    assert {w["hit"] for w in preview["waiting"] if w["needed"]} == escalated
    page = client.get(f"/annotation/batches/{batch.name}/routing/", {"target_accuracy": 0.9}).content.decode()
    assert "a fourth team member" in page
    sample_page = client.get(reverse("annotation:batch-detail", args=[sample.name])).content.decode()
    assert 'id="unfillable-who"' in sample_page and f"{who} need" in sample_page

    # A new member takes the escalated places; the sample is in (a query still split stays undecided: the
    # team is at its size), and nothing was escalated past what the team could take.
    sample.team.add(create_annotator("member-5", reuse=True))
    _answer("member-5", sample, None)
    sync_batch(sample)
    assert plan_routing(batch, 0.9, risk=None).ready
    kept = Judgment.objects.filter(
        assignment__hit__batch=sample,
        assignment__status__in=[Assignment.Status.SUBMITTED, Assignment.Status.APPROVED],
    )
    per_query = Counter(kept.values_list("batch_query__qid", "assignment__hit__position"))
    members = Counter(kept.values_list("batch_query_id", "assignment__worker_id"))
    assert {q: n for (q, hit), n in per_query.items() if hit in escalated} and all(
        n == (4 if hit in escalated else 3) for (q, hit), n in per_query.items()
    )
    assert set(members.values()) == {1}  # never two answers from one member
    assert not kept.filter(assignment__worker__identity__user__username="member-4").exists()
    assert set(Hit.objects.filter(batch=sample, max_assignments__gt=3).values_list("position", flat=True)) == escalated
