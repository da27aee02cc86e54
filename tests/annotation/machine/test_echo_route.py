"""The echo check on a real sample: an annotator who copies the machine's labels into the sample is held
out of the reference; the report, the plan and the routing say so; a researcher restores them (API and
page) and holds them out again."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from annotation import services
from annotation.exports.services import export_queries
from annotation.machine.report.selectors import calibration_report
from annotation.machine.selectors import read_sample
from annotation.machine.services.calibration import create_calibration_sample
from annotation.machine.services.routing import plan_routing, plan_summary, route_batch
from annotation.models import EchoRestore, PreLabel
from platforms.inhouse.services.annotators import create_annotator, local_worker
from platforms.inhouse.services.handout import next_assignment
from platforms.inhouse.services.hit_page import submit_local_assignment
from platforms.inhouse.services.simulation import simulate_local_annotations
from tests.annotation.machine.test_routing_service import _kept_routed_batch, routed_batch  # noqa: F401  (the fixture)


@pytest.fixture
def echoed(routed_batch):  # noqa: F811
    """A 100-query sample: one annotator copies the machine on every HIT, three readers (right 0.9) fill the rest."""
    batch = routed_batch
    sample = create_calibration_sample(batch, 100, seed=0, escalation_cap=3)
    services.publish_batch(sample)
    machine = dict(PreLabel.objects.filter(batch_query__batch=batch).values_list("batch_query__qid", "label"))
    copier = create_annotator("copier")
    while (assignment := next_assignment(copier, sample)) is not None:
        answers = {
            hq.field_name: machine[hq.batch_query.qid]
            for hq in assignment.hit.hit_queries.select_related("batch_query")
        }
        submit_local_assignment(assignment, answers)
    simulate_local_annotations(sample, annotators=3, accuracy=0.9, seed=1, prefix="reader")
    return batch, local_worker(copier).pseudonym


@pytest.fixture
def staff(django_user_model):
    return django_user_model.objects.create_user("res", password="pw-secret-123", is_staff=True)


@pytest.mark.slow
def test_a_copier_is_held_out_and_the_route_says_why(echoed):
    batch, copier = echoed
    sample = read_sample(batch)
    flagged = {w.worker: w for w in sample.echo.workers if w.flagged}
    assert list(flagged) == [copier] and sample.echo.held_out == [copier]
    assert flagged[copier].with_machine == 1.0 and flagged[copier].answers == 100
    assert sample.echo.held_out_answers == 100
    # The reference now rests on the readers alone: the sample's votes hold no answer of the copier.
    assert copier not in set(sample.votes["worker"])
    report = calibration_report(batch, bootstrap=20)
    assert (
        report["echo"]["held_out"] == [copier] and "held out of the reference (100 answers)" in report["echo"]["text"]
    )
    plan = plan_routing(batch, 0.9)
    assert plan.echo["held_out"] == [copier]
    assert any(line.startswith("Echo check: 1 of the sample's 4 workers") for line in plan_summary(plan))
    routing = route_batch(batch, 0.9, plan=plan)
    assert routing.reference["echo"]["held_out"] == [copier]
    assert routing.reference["echo"]["flagged"][0]["worker"] == copier


def test_a_researcher_restores_a_flagged_worker_and_holds_them_out_again(echoed, staff, client):
    batch, copier = echoed
    client.force_login(staff)
    url = f"/api/annotation/batches/{batch.name}/calibration/echo/"
    answer = client.post(
        url, {"worker": copier, "restore": True, "reason": "a specialist"}, content_type="application/json"
    )
    assert answer.status_code == 200, answer.content
    assert answer.json()["restored"] == [copier] and answer.json()["held_out"] == []
    assert EchoRestore.objects.get(batch=batch).restored_by == staff
    assert copier in set(read_sample(batch).votes["worker"])
    # A worker the check does not flag cannot be restored; holding out one not restored is a conflict.
    reader = next(w.worker for w in read_sample(batch).echo.workers if not w.flagged)
    refused = client.post(url, {"worker": reader, "restore": True}, content_type="application/json")
    assert refused.status_code == 400 and "worker" in refused.json()
    # The page's control holds them out again.
    page = client.post(
        reverse("annotation:batch-calibration-echo", args=[batch.name]), {"worker": copier, "restore": "0"}
    )
    assert page.status_code == 302 and page.url.endswith("#echo")
    assert read_sample(batch).echo.held_out == [copier] and not EchoRestore.objects.exists()
    again = client.post(url, {"worker": copier, "restore": False}, content_type="application/json")
    assert again.status_code == 409


@pytest.mark.slow
def test_the_api_and_the_export_give_each_query_the_machine_beside_the_people(echoed, staff, client, tmp_path):
    batch, copier = echoed
    machine = {
        qid: (label, confidence)
        for qid, label, confidence in PreLabel.objects.filter(batch_query__batch=batch).values_list(
            "batch_query__qid", "label", "confidence"
        )
    }
    client.force_login(staff)
    rows, url = [], f"/api/annotation/batches/{batch.name}/queries/"
    while url:
        page = client.get(url).json()
        rows += page["results"]
        url = page["next"]
    answered = [row for row in rows if row["votes"]]
    assert len(answered) == 100  # the sample's queries, each with every human answer
    for row in answered:
        assert (row["machine"]["label"], row["machine"]["confidence"]) == machine[row["qid"]]
        labels = [vote["label"] for vote in row["votes"]]
        assert {"worker", "label", "pastes", "tab_leaves", "item_ms"} <= set(row["votes"][0])
        expected = round(labels.count(row["label"]) / len(labels), 4) if row["label"] else None
        assert row["agreement"] == expected
    assert any(vote["worker"] == copier for row in answered for vote in row["votes"])
    path = tmp_path / "all.jsonl"
    export_queries(batch, "all", path, fmt="jsonl")
    exported = [json.loads(line) for line in path.read_text().splitlines()]
    assert exported and all(line["machine"]["label"] == machine[line["qid"]][0] for line in exported)
    assert all("pastes" in vote for line in exported for vote in line["votes"])


def test_the_places_of_held_out_answers_are_offered_again(echoed):
    """The copier's answers are held out of the reference, so each of their places is offered again at the next
    sync (one more answer wanted on each HIT, a re-offer recorded per answer); once a reader has taken them,
    every sampled query has the votes the rule asked for without the copier's, and no more is offered."""
    from annotation.crowd.services.sync import sync_batch
    from annotation.machine.selectors import calibration_batch
    from annotation.models import Reoffer

    batch, copier = echoed
    sample = calibration_batch(batch)
    hits = {hit.pk: hit.max_assignments for hit in sample.hits.all()}
    before = read_sample(batch)
    assert before.echo.held_out == [copier]

    first = sync_batch(sample)
    assert first.reoffered == len(hits)  # the copier answered every HIT once
    reoffers = Reoffer.objects.filter(batch=sample)
    assert sorted(reoffers.values_list("hit_id", flat=True)) == sorted(hits)
    assert set(reoffers.values_list("assignment__worker__pseudonym", flat=True)) == {copier}
    assert {hit.pk: hit.max_assignments for hit in sample.hits.all()} == {pk: n + 1 for pk, n in hits.items()}
    assert sync_batch(sample).reoffered == 0  # offered once: the places wait for their answers

    sample.refresh_from_db()
    simulate_local_annotations(sample, annotators=4, accuracy=0.9, seed=2, prefix="reader")  # reader-4 takes them
    assert sync_batch(sample).reoffered == 0
    after = read_sample(batch)
    votes = after.votes.groupby("item")["label"].apply(list)
    assert set(votes.map(len)) == {sample.assignments_per_query}  # without the copier's: as many as asked for
    majority = {
        qid: max(set(labels), key=labels.count)
        for qid, labels in votes.items()
        if max(labels.count(label) for label in labels) * 2 > len(labels)
    }
    assert after.crowd == {qid: label for qid, label in majority.items() if qid in after.crowd} and set(
        after.crowd
    ) == set(majority) & set(after.drawn)
    assert len(after.crowd) > len(before.crowd)  # queries the hold-out had left without a label now have one
