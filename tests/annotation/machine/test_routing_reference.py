"""Issue 39 on a batch: the sample's undecided queries escalated before routing certifies (the reference
label), a sample drawn whole, cascades recorded and exported, forecasts that simulate the crowd, and the
plan's words when a target is out of reach."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from annotation import services
from annotation.crowd.services.sync import sync_batch
from annotation.machine.prelabellers import get_prelabeller
from annotation.machine.selectors import read_sample
from annotation.machine.services.calibration import create_calibration_sample
from annotation.machine.services.prelabels import prelabel_batch
from annotation.machine.services.routing import parse_cascade, plan_routing, plan_summary, route_batch
from annotation.models import Escalation
from annotation.quality.services.budget import extra_assignment_price
from annotation.results.selectors.labels import machine_accepted
from core.errors import ServiceError, StateError
from platforms.inhouse.services.simulation import oracle_label, simulate_local_annotations
from tests.annotation.machine.test_routing_service import _kept_routed_batch, routed_batch  # noqa: F401  (the fixture)


def _labels_file(tmp_path, batch):
    path = tmp_path / "truth.tsv"
    path.write_text("".join(f"{q.qid}\t{q.text}\t{oracle_label(q.text)}\n" for q in batch.queries.all()))
    return path


@pytest.mark.slow
def test_undecided_sample_queries_get_more_votes_before_routing_certifies(routed_batch):  # noqa: F811
    """Seven annotators right 0.8 of the time answer a 150-query sample (three votes per HIT of ten): many
    queries split. Routing certifies nothing while their HITs can still be escalated (the plan says so and
    prices the next round); every sync escalates them, up to seven assignments; then it certifies against
    the final labels, and the saving counts what the escalations cost."""
    batch = routed_batch
    sample = create_calibration_sample(batch, 150, seed=0)
    assert sample.derivation["reference"] == {"votes": 3, "cap": 7, "until": "majority", "posterior": None}
    assert sample.escalate_until == "majority" and sample.escalation_cap == 7
    # Its escalation may add at most every HIT to the cap: 15 HITs x 4 more assignments at the batch's price.
    assert sample.extra_budget == 15 * 4 * extra_assignment_price(sample)
    services.publish_batch(sample)
    simulate_local_annotations(sample, annotators=7, accuracy=0.8, seed=1)
    first = plan_routing(batch, 0.9)
    before = read_sample(batch)
    assert before.undecided and first.awaiting_votes >= len(before.undecided)
    assert not first.certified and first.escalation_next > 0 and first.escalation_spent == 0
    assert "get more votes at the next sync" in " ".join(plan_summary(first))
    for round_ in range(8):
        sync_batch(sample)
        simulate_local_annotations(sample, annotators=7, accuracy=0.8, seed=2 + round_)
        if not plan_routing(batch, 0.9).awaiting_votes:
            break
    plan = plan_routing(batch, 0.9)
    after = read_sample(batch)
    assert plan.awaiting_votes == 0 and Escalation.objects.filter(batch=sample).exists()
    assert len(after.undecided) < len(before.undecided)  # left only where a HIT reached the cap
    # what the sample's extra votes cost: its escalations, and the places of failed or held-out answers
    # offered again (annotation.quality.services.budget.extra_spent), summed here from the records
    extras = [*Escalation.objects.filter(batch=sample), *sample.reoffers.all()]
    assert plan.escalation_spent == sum(e.cost for e in extras)
    assert plan.certified and plan.threshold == 0.97
    assert plan.saving == plan.cost_all - plan.cost - plan.calibration_cost - plan.escalation_spent
    summary = " ".join(plan_summary(plan))
    assert "Right means agreeing with the sample's final crowd label" in summary
    routing = route_batch(batch, 0.9, plan=plan)
    assert routing.reference["cap"] == 7 and "final crowd label" in routing.reference["text"]
    assert routing.routed_batch.escalate_until == "majority"  # the routed queries get the same crowd process


def test_a_sample_drawn_whole_cannot_be_extended(routed_batch):  # noqa: F811
    first = create_calibration_sample(routed_batch, 60, seed=0)
    assert first.derivation["extendable"] is False
    with pytest.raises(StateError, match="drawn whole"):
        create_calibration_sample(routed_batch, 40, extend=True)
    with pytest.raises(ServiceError, match="escalation cap"):
        create_calibration_sample(routed_batch, 40, escalation_cap=2, name="other")


@pytest.mark.slow
def test_a_cascade_is_planned_recorded_exported_and_refused_when_malformed(routed_batch, tmp_path):  # noqa: F811
    """The study's word rules (0.9 on queries with a gendered word: the 160 g-queries) then the sure machine:
    the rules keep the g-queries it certifies with their own labels, the sure machine its 0.97 set."""
    batch = routed_batch
    prelabel_batch(batch, get_prelabeller("rules"))
    sample = create_calibration_sample(batch, 150, seed=0, labeller="sure", escalation_cap=3)
    services.publish_batch(sample)
    simulate_local_annotations(sample, annotators=3, accuracy=0.97, seed=1)
    plan = plan_routing(batch, 0.9, cascade=["rules:0.9", "sure"])
    rules, sure = plan.stages
    assert (rules["labeller"], rules["floor"], sure["labeller"]) == ("rules", 0.9, "sure")
    assert rules["risk"] == sure["risk"] == 0.025
    assert rules["threshold"] == 0.9 and rules["kept"] > 0 and sure["threshold"] == 0.97 and sure["kept"] > 0
    assert set(plan.accepted) == set(rules["accepted"]) | set(sure["accepted"])
    assert not set(rules["accepted"]) & set(sure["accepted"])
    assert rules["machine_cost"] == "0.0000"  # the rules cost nothing to run
    assert "Cascade of 2 labellers" in " ".join(plan_summary(plan))
    routing = route_batch(batch, 0.9, plan=plan)
    assert [stage["labeller"] for stage in routing.stages] == ["rules", "sure"]
    accepted = machine_accepted(batch)
    assert set(accepted) == set(plan.accepted)
    rule_labels = {q: accepted[q].label for q in rules["accepted"]}
    texts = dict(batch.queries.values_list("qid", "text"))
    assert all(label == oracle_label(texts[q]) for q, label in rule_labels.items())  # the rules' own labels
    from annotation.exports.services import export_queries

    card = export_queries(batch, "all", tmp_path / "c.tsv", "tsv").card
    assert "the labels each of the 2 labellers of the cascade kept" in card and "rules (" in card
    with pytest.raises(ServiceError, match="floor"):
        parse_cascade(["rules:2"])
    with pytest.raises(ServiceError, match="twice"):
        parse_cascade(["rules", "rules:0.8"])
    with pytest.raises(ServiceError, match="needs the guarantee"):
        plan_routing(batch, 0.9, risk=None, cascade=["rules"])


@pytest.mark.slow
def test_route_audit_simulates_the_crowd_given_or_fitted(routed_batch, tmp_path):  # noqa: F811
    batch = routed_batch
    truth = _labels_file(tmp_path, batch)
    crowd = tmp_path / "crowd.json"
    crowd.write_text(json.dumps({"workers": [{"accuracy": 0.9}] * 6 + [{"spam": True}, {"always": "n", "share": 2}]}))
    out = StringIO()
    call_command(
        "route_audit", "rb", "--labels", str(truth), "--target-accuracy", "0.9", "--sample", "150",
        "--redraws", "40", "--crowd", str(crowd), "--json", stdout=out, verbosity=0,
    )  # fmt: skip
    result = json.loads(out.getvalue())
    assert result["crowd"] == "the crowd model in crowd.json" and result["extendable"] is False
    assert 0 < result["first_round_split"] < 0.3 and result["undecided_share"] < result["first_round_split"]
    assert result["sample_escalations"] > 0 and result["crowd_only_assignments"] > result["assignments"] > 0
    assert 0 < result["machine_labelled_share"] < result["kept_share"] <= 1
    assert result["violation_rate"] <= 0.2 and 0.8 < result["export_accuracy"] <= 1
    bad = tmp_path / "bad.json"
    bad.write_text('{"workers": [{"accuracy": 3}]}')
    with pytest.raises(CommandError, match=r"bad\.json: not a crowd model: workers\[0\]\.accuracy"):
        call_command("route_audit", "rb", "--labels", str(truth), "--target-accuracy", "0.9", "--crowd", str(bad))
    # Fitted: the crowd model of the batch's own sample, the default once the sample has votes.
    sample = create_calibration_sample(batch, 150, seed=0, escalation_cap=3)
    services.publish_batch(sample)
    simulate_local_annotations(sample, annotators=3, accuracy=0.9, seed=1)
    text = StringIO()
    call_command(
        "route_audit", "rb", "--labels", str(truth), "--target-accuracy", "0.9", "--redraws", "20",
        stdout=text, verbosity=0,
    )  # fmt: skip
    printed = text.getvalue()
    assert "fitted to the calibration sample's votes" in printed and "export accuracy" in printed


@pytest.mark.slow
def test_the_plan_says_when_a_target_is_out_of_reach_with_this_crowd(routed_batch):  # noqa: F811
    """Three annotators right 0.5 of the time, no escalation: a three-vote crowd that splits often and errs
    often. No machine can agree with it 0.95 of the time; the plan says so, with the ceiling routing counts,
    and sizes a first draw at the observed profile; a sample drawn whole cannot be extended."""
    batch = routed_batch
    sample = create_calibration_sample(batch, 150, seed=0, escalation_cap=3)
    services.publish_batch(sample)
    simulate_local_annotations(sample, annotators=3, accuracy=0.5, seed=1)
    plan = plan_routing(batch, 0.95)
    assert not plan.certified and plan.ceiling is not None and plan.ceiling < 0.95
    summary = " ".join(plan_summary(plan))
    assert "OUT OF REACH with this crowd" in summary and f"{plan.ceiling:.3f}" in summary
    assert "Extending this sample cannot help" in summary
    assert plan.sizing and all(row["cost"] for row in plan.sizing)


def test_calibrate_sizes_the_first_draw_before_drawing(routed_batch):  # noqa: F811
    out = StringIO()
    call_command("calibrate", "rb", "--size-for", "0.9", stdout=out, verbosity=0)
    text = out.getvalue()
    assert "First draws of 'rb' drawn whole, target 0.9" in text and "Keeps the most: --sample" in text
    assert not routed_batch.derived.exists()  # nothing drawn


def test_a_cascade_on_a_sample_awaiting_votes_keeps_nothing_yet(routed_batch):  # noqa: F811
    """Found by the API fuzz test: a cascade planned before the sample is answered was a 500."""
    sample = create_calibration_sample(routed_batch, 60, seed=0)
    services.publish_batch(sample)
    simulate_local_annotations(sample, annotators=3, accuracy=0.6, seed=1)  # splits the next sync escalates
    plan = plan_routing(routed_batch, 0.9, cascade=["sure"])
    assert plan.awaiting_votes > 0 and plan.accepted == [] and not plan.certified
    assert "get more votes at the next sync" in " ".join(plan_summary(plan))
