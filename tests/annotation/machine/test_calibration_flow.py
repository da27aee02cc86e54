"""The machine-first path end to end: pre-label a draft batch, draw a blind calibration sample,
let the (simulated) crowd answer it, report, route, and export with label sources."""

import hashlib
import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from annotation import services
from annotation.crowd.services.publishing import check_publishable, render_hit_html
from annotation.crowd.services.sync import sync_batch
from annotation.exports.services import export_queries
from annotation.machine.prelabellers.interface import Prediction, PreLabeller
from annotation.machine.report.selectors import calibration_report
from annotation.machine.selectors import machine_labels, read_sample
from annotation.machine.services.calibration import create_calibration_sample
from annotation.machine.services.prelabels import prelabel_batch
from annotation.machine.services.routing import plan_routing, route_batch
from annotation.models import Batch, Routing
from annotation.results.selectors.labels import MACHINE, BatchAnswers, labels_with_sources
from core.errors import ServiceError, StateError
from genderbias.labels import LABELS
from platforms.inhouse.services.simulation import oracle_label, simulate_local_annotations
from pooling.models import QuerySet
from pooling.services import create_query_set
from tests.annotation.conftest import make_batch

TOPICS = [
    "a synapse",
    "the flu",
    "an egg",
    "a mortgage",
    "rust",
    "a comet",
    "jazz",
    "a tax return",
    "yeast",
    "a bridge",
]
PEOPLE = ["woman", "girl", "mother", "queen", "man", "boy", "father", "king"]


def _texts() -> list[tuple[str, str]]:
    queries = []
    for i, topic in enumerate(TOPICS * 8):
        queries.append((f"n{i}", f"what is {topic} number {i}"))
    for i, person in enumerate(PEOPLE * 8):
        queries.append((f"g{i}", f"how old is the {person} in story {i}"))
    return queries  # 80 non-gendered, 64 gendered


class NoisyMachine(PreLabeller):
    """A calibrated machine: confident and right on most queries, unsure and often wrong on others."""

    name = "noisy"
    model = "test-noise"
    prompt_version = "v1"

    def label(self, queries):
        predictions = []
        for qid, text in queries:
            digest = int(hashlib.sha256(qid.encode()).hexdigest(), 16)
            confidence = (0.55, 0.7, 0.85, 0.97)[digest % 4]
            truth = oracle_label(text)
            right = (digest // 4) % 100 < confidence * 100
            label = truth if right else LABELS[(LABELS.index(truth) + 1) % len(LABELS)]
            predictions.append(Prediction(label, confidence, {"truth": truth}))
        return predictions


def _answer_until_in(batch, sample_batch=None, annotators=4, accuracy=0.95):
    """Sync and answer every link of the sample round by round until no sample query awaits votes (its
    escalations in, up to 7 votes: as many annotators answer): routing waits for that (issue 58)."""
    from annotation.machine.selectors import read_sample
    from annotation.machine.services.routing import reference_state

    links = list(Batch.objects.filter(parent=batch, purpose=Batch.Purpose.CALIBRATION).order_by("pk"))
    for round_ in range(10):
        if not reference_state(read_sample(batch))["pending"]:
            return
        for link in links:
            sync_batch(link)
            simulate_local_annotations(link, annotators=max(annotators, 7), accuracy=accuracy, seed=10 + round_)
    raise AssertionError("the sample never came in")


answer_sample_until_in = _answer_until_in


@pytest.fixture
def machine_batch(db):
    query_set = create_query_set("mq", _texts(), origin=QuerySet.Origin.IMPORTED)
    batch = make_batch(query_set, name="mach", assignments_per_query=3, queries_per_hit=5)
    prelabel_batch(batch, NoisyMachine())
    return batch


@pytest.mark.slow
def test_the_machine_first_path(machine_batch, tmp_path):
    batch = machine_batch
    sample_batch = create_calibration_sample(batch, 60, seed=1)
    assert (sample_batch.parent, sample_batch.purpose, sample_batch.status) == (batch, "calibration", "draft")
    strata = {s["label"]: s for s in sample_batch.derivation["strata"]}
    machine = machine_labels(batch, read_identity(batch))
    assert sum(s["sampled"] for s in strata.values()) == 60 == sample_batch.queries.filter(is_gold=False).count()
    for label, stratum in strata.items():  # recorded per machine label, for the post-stratified figures
        assert stratum["population"] == sum(m.label == label for m in machine.values())
        assert stratum["sampled"] == sum(machine[q].label == label for q in sample_batch.derivation["order"])
    # A simple random sample in draw order: the first 60 of seed 1's permutation of the sorted qids.
    import numpy as np

    pool = sorted(machine)
    assert sample_batch.derivation["order"] == [pool[i] for i in np.random.default_rng(1).permutation(len(pool))[:60]]
    sampled = set(sample_batch.queries.values_list("qid", flat=True))
    assert sampled <= set(batch.queries.values_list("qid", flat=True))

    # Blind: the HIT page of the sample shows the query, never the machine's label or confidence.
    hit = sample_batch.hits.first()
    html = render_hit_html(hit, mode="local", action="/submit/")
    assert "noisy" not in html and "test-noise" not in html and "0.97" not in html and "confidence" not in html

    services.publish_batch(sample_batch)
    with pytest.raises(ServiceError, match="labelled by a machine"):
        check_publishable(batch)  # the parent's crowd work goes through its derived batches
    simulate_local_annotations(sample_batch, annotators=4, accuracy=0.95, seed=2)

    report = calibration_report(batch, bootstrap=300)
    sample = read_sample(batch)
    crowd = BatchAnswers(sample_batch).labels
    labelled = [q for q in sample_batch.derivation["stratum_of"] if q in crowd]
    assert report["n"] == len(labelled) == len(sample.qids) >= 50
    # The stratum weights and the weighted accuracy and kappa, computed here from the records.
    per_stratum = {label: sum(sample_batch.derivation["stratum_of"][q] == label for q in labelled) for label in strata}
    weights = [
        strata[m][("population")] / per_stratum[m] for m in (sample_batch.derivation["stratum_of"][q] for q in labelled)
    ]
    right = [machine[q].label == crowd[q] for q in labelled]
    assert report["accuracy"] == pytest.approx(
        sum(w * r for w, r in zip(weights, right, strict=True)) / sum(weights), abs=1e-12
    )
    from sklearn.metrics import cohen_kappa_score  # the reference; one test reads it, so only it imports scikit-learn

    expected_kappa = cohen_kappa_score(
        [crowd[q] for q in labelled], [machine[q].label for q in labelled], labels=list(LABELS), sample_weight=weights
    )
    assert report["kappa"] == pytest.approx(expected_kappa, abs=1e-12)
    assert report["kappa_ci"][0] <= report["kappa"] <= report["kappa_ci"][1]
    assert set(report["per_category"]) == set(LABELS)
    assert 0 <= report["ece"] <= 1 and 0 <= report["brier"] <= 1
    assert set(report["alt_test"]) >= {"winning_rate", "passed"}
    for label in LABELS:
        p = report["proportions"][label]
        assert p["ci"][0] <= p["estimate"] <= p["ci"][1]

    # Routing on 60 sample queries: nothing can be certified at 0.9, and the plan says why.
    certified = plan_routing(batch, 0.9)
    assert certified.threshold is None and not certified.accepted and certified.more_reason
    # The point-estimate rule (no guarantee): a threshold that meets the target on the sample.
    plan = plan_routing(batch, 0.9, risk=None)
    assert plan.threshold is not None and plan.estimated_accuracy >= 0.9
    assert all(machine[q].confidence >= plan.threshold for q in plan.accepted)
    assert all(machine[q].confidence < plan.threshold for q in plan.to_humans)
    assert not sampled & (set(plan.accepted) | set(plan.to_humans))
    assert len(plan.accepted) + len(plan.to_humans) + 60 == batch.queries.count()
    assert plan.saving == plan.cost_all - plan.cost - plan.calibration_cost > 0
    assert plan.rule == "point estimate (no guarantee)"

    tight = plan_routing(batch, 0.9, budget="0.50", risk=None)
    assert tight.over_budget and len(tight.to_humans) + len(tight.over_budget) == len(plan.to_humans)
    assert tight.cost <= 0.5 < plan.cost
    # The saving counts only the queries that end up labelled: the over-budget ones are not among them.
    assert tight.labelled == batch.queries.count() - len(tight.over_budget)
    assert tight.cost_all < plan.cost_all

    with pytest.raises(StateError, match="publishes nothing while the blind sample waits"):
        route_batch(batch, 0.9, risk=None)  # its split queries still get votes (issue 58)
    _answer_until_in(batch, sample_batch)
    plan = plan_routing(batch, 0.9, risk=None)
    routing = route_batch(batch, 0.9, risk=None)
    routed = routing.routed_batch
    assert routed.purpose == Batch.Purpose.ROUTED and routed.parent == batch
    assert set(routed.queries.values_list("qid", flat=True)) == set(plan.to_humans)
    assert routing.sample_batch == sample_batch and routing.risk is None
    with pytest.raises(StateError, match="routed already"):
        route_batch(batch, 0.9, risk=None)

    sources = labels_with_sources(batch)
    assert {q for q, s in sources.items() if s.source == MACHINE} == set(plan.accepted)
    assert not set(plan.to_humans) & set(sources)  # not answered yet: no label at all
    services.publish_batch(routed)
    simulate_local_annotations(routed, annotators=4, accuracy=0.95, seed=3)
    sources = labels_with_sources(batch)
    assert {s.source for q, s in sources.items() if q in plan.to_humans} <= {"crowd majority"}

    export = export_queries(batch, "all", tmp_path / "all.csv", "csv")
    lines = (tmp_path / "all.csv").read_text().splitlines()
    assert lines[0] == "qid,query,label,adjudicated,ds_posterior,label_source,machine_confidence"
    by_qid = {line.split(",")[0]: line for line in lines[1:]}
    for qid in plan.accepted:
        if qid in by_qid:
            assert f",machine-accepted,{machine[qid].confidence}" in by_qid[qid]
    assert "## Machine labels" in export.card and f"| confidence threshold | {plan.threshold}" in export.card
    assert "## Label sources" in export.card


def read_identity(batch):
    from annotation.machine.selectors import identity_for

    return identity_for(batch)


@pytest.mark.slow
def test_calibration_command_prints_the_report_as_json(machine_batch):
    sample_batch = create_calibration_sample(machine_batch, 40, seed=4)
    services.publish_batch(sample_batch)
    simulate_local_annotations(sample_batch, annotators=3, accuracy=0.9, seed=5)
    out = StringIO()
    call_command("calibration", "mach", "--json", "--bootstrap", "200", stdout=out)
    report = json.loads(out.getvalue())
    assert report["labeller"] == "noisy" and report["n"] > 30
    assert len(report["kappa_ci"]) == 2
    assert all(set(report["per_category"][label]) >= {"precision", "recall"} for label in LABELS)
    assert {"ece", "brier", "accuracy", "kappa"} <= set(report)
    assert set(report["alt_test"]) >= {"winning_rate", "passed"}
    assert all(set(report["proportions"][label]) >= {"estimate", "ci"} for label in LABELS)
    text = StringIO()
    call_command("calibration", "mach", "--bootstrap", "200", stdout=text)
    assert "Cohen's kappa" in text.getvalue() and "PPI++" in text.getvalue()


@pytest.mark.slow
def test_route_command_shows_the_plan_and_creates_the_routed_batch(machine_batch, monkeypatch):
    sample_batch = create_calibration_sample(machine_batch, 60, seed=1)
    services.publish_batch(sample_batch)
    simulate_local_annotations(sample_batch, annotators=4, accuracy=0.95, seed=2)
    # Issue 58: the sample's split queries await their escalation: no flag routes (nor publishes) blind.
    waiting = plan_routing(machine_batch, 0.9)
    assert waiting.awaiting_votes and not waiting.ready
    for flags in (["--yes"], ["--no-guarantee", "--yes"]):
        out = StringIO()
        with pytest.raises(CommandError, match="Routing publishes nothing while the blind sample waits"):
            call_command("route", "mach", "--target-accuracy", "0.9", *flags, stdout=out)
        assert "more assignment at the next sync of mach-part-1" in out.getvalue()
    assert not Routing.objects.exists() and not machine_batch.derived.filter(purpose="routed").exists()
    _answer_until_in(machine_batch, sample_batch)
    monkeypatch.setattr("builtins.input", lambda prompt: "n")
    out = StringIO()
    call_command("route", "mach", "--target-accuracy", "0.9", stdout=out)
    assert "No threshold could be certified" in out.getvalue() and "Nothing done." in out.getvalue()
    assert "waits" not in out.getvalue()
    out = StringIO()
    call_command("route", "mach", "--target-accuracy", "0.9", "--no-guarantee", stdout=out)
    assert "NO GUARANTEE" in out.getvalue() and "saving $" in out.getvalue() and "Nothing done." in out.getvalue()
    assert not Routing.objects.exists()
    out = StringIO()
    call_command("route", "mach", "--target-accuracy", "0.9", "--no-guarantee", "--yes", stdout=out)
    routing = Routing.objects.get()
    assert routing.routed_batch.status == Batch.Status.PUBLISHED
    assert "Published" in out.getvalue()


def test_calibration_needs_a_draft_with_machine_labels(db):
    query_set = create_query_set("mq2", _texts()[:20], origin=QuerySet.Origin.IMPORTED)
    plain = make_batch(query_set, name="plain")
    with pytest.raises(StateError, match="no labels from a machine"):
        create_calibration_sample(plain, 10)
    prelabel_batch(plain, NoisyMachine())
    with pytest.raises(ServiceError, match="at least one"):
        create_calibration_sample(plain, 0)
    services.publish_batch(plain)
    plain.refresh_from_db()
    with pytest.raises(StateError, match="published"):
        create_calibration_sample(plain, 10)
    with pytest.raises(StateError, match="no calibration sample"):
        calibration_report(plain)


@pytest.mark.parametrize(
    ("command", "args", "message"),
    [
        ("prelabel", ["--labeller", "openai", "--samples", "0"], "samples"),
        ("prelabel", ["--labeller", "trained", "--train", "/no/such/file.tsv"], "file.tsv"),
        ("calibrate", ["--sample", "0"], "at least one"),
        ("calibrate", ["--seed", "-1"], "seed"),
        ("calibrate", ["--labeller", "oracle"], "oracle"),
        ("calibration", ["--bootstrap", "-1"], "bootstrap"),
        ("route", ["--target-accuracy", "1.5", "--yes"], "target accuracy"),
        ("route", ["--target-accuracy", "0.9", "--budget", "-1", "--yes"], "budget"),
        ("route", ["--target-accuracy", "0.9", "--risk", "0", "--yes"], "--risk"),
        ("route", ["--target-accuracy", "0.9", "--risk", "1.5", "--yes"], "--risk"),
    ],
)
def test_bad_options_are_refused_by_name_and_create_nothing(machine_batch, command, args, message):
    from django.core.management import CommandError

    if command in ("calibration", "route"):
        sample_batch = create_calibration_sample(machine_batch, 40, seed=4)
        services.publish_batch(sample_batch)
        simulate_local_annotations(sample_batch, annotators=3, accuracy=0.9, seed=5)
    batches = Batch.objects.count()
    with pytest.raises(CommandError, match=message):
        call_command(command, "mach", *args, stdout=StringIO())
    assert Batch.objects.count() == batches and not Routing.objects.exists()
