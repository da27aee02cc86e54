"""Aggregation over stored judgments, agreement, and exported files (tsv, csv, jsonl, card, --as)."""

import csv
import json

import pytest

from annotation import services
from annotation.exports.services import export_queries
from annotation.models import Assignment, Export
from annotation.quality.services.escalation import escalate_batch, plan_escalation
from annotation.results.selectors.agreement import agreement
from annotation.results.selectors.labels import judgments_frame, query_results
from core.errors import ServiceError
from platforms.inhouse.services.handout import next_assignment
from platforms.inhouse.services.hit_page import submit_local_assignment
from pooling.models import QuerySet
from tests.annotation.conftest import TRUTH, answers_for


def _annotate(batch, users, overrides=None):
    """Every user answers every HIT they get; ``overrides[username]`` replaces some answers."""
    overrides = overrides or {}
    for user in users:
        while (assignment := next_assignment(user, batch)) is not None:
            submit_local_assignment(assignment, answers_for(assignment, override=overrides.get(user.username)))


@pytest.fixture
def annotated(local_batch, annotators):
    """Two votes per query; ann-b disagrees on 104 (o vs f), so 104 is disputed (1-1)."""
    _annotate(local_batch, annotators[:2], {"ann-b": {"104": "f"}})
    return local_batch


def test_query_results_use_pseudonyms_and_set_disputed_aside(annotated, annotators):
    results = {r["qid"]: r for r in query_results(annotated)}
    assert results["101"]["label"] == "n" and not results["101"]["disputed"]
    assert results["104"]["label"] is None and results["104"]["disputed"]
    workers = {v["worker"] for r in results.values() for v in r["votes"]}
    assert len(workers) == 2 and all(w.startswith("w-") for w in workers)
    assert not workers & {u.username for u in annotators}


def test_rejected_and_gold_failed_work_does_not_count(annotated):
    assignment = Assignment.objects.filter(hit__batch=annotated).first()
    Assignment.objects.filter(pk=assignment.pk).update(status=Assignment.Status.REJECTED)
    frame = judgments_frame(annotated)
    assert len(frame) == 12 - assignment.judgments.count()


def test_agreement_report(annotated):
    report = agreement(annotated, bootstrap=50)
    assert report["queries"] == 6 and report["judgments"] == 12 and report["workers"] == 2
    assert report["disputed"] == ["104"] and report["set_aside"] == ["104"]
    assert report["labels"] == {"n": 2, "f": 2, "m": 1, "o": 0}
    # Nominal alpha by hand: 12 pairable values, 5 agreeing pairs (Σ o_cc = 10), label totals
    # n 4, f 5, m 2, o 1 (Σ n_c² = 46): alpha = 1 - (12 - 1)(12 - 10) / (12² - 46) = 76/98.
    assert report["krippendorff_alpha"] == pytest.approx(76 / 98, abs=1e-9)
    json.dumps(report, allow_nan=False)  # JSON-safe


def test_export_tsv_csv_jsonl_and_card(annotated, tmp_path):
    tsv = export_queries(annotated, "non-gendered", tmp_path / "ng.tsv", "tsv")
    assert (tmp_path / "ng.tsv").read_text() == "101\twhat is a synapse\n105\thow to boil an egg\n"
    card = (tmp_path / "ng.tsv.md").read_text()
    assert card == tsv.card and "Krippendorff" in card and "majority vote" in card
    assert tsv.queries == 2 and tsv.counts["set_aside"] == 1

    export_queries(annotated, "all", tmp_path / "all.csv", "csv")
    with open(tmp_path / "all.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert {r["qid"]: r["label"] for r in rows} == {q: label for q, label in TRUTH.items() if q != "104"}

    export_queries(annotated, "female", tmp_path / "f.jsonl", "jsonl")
    lines = [json.loads(line) for line in (tmp_path / "f.jsonl").read_text().splitlines()]
    assert [line["qid"] for line in lines] == ["102", "106"]  # 104 is disputed, never labelled
    assert lines[0]["method"] == "majority" and lines[0]["agreement"] == 1.0
    assert len(lines[0]["votes"]) == 2 and all(v["worker"].startswith("w-") for v in lines[0]["votes"])
    assert Export.objects.filter(batch=annotated).count() == 3


def test_export_as_query_set(annotated, tmp_path):
    export = export_queries(annotated, "non-gendered", tmp_path / "ng.tsv", as_query_set="ng")
    query_set = QuerySet.objects.get(name="ng")
    assert export.query_set == query_set and query_set.origin == QuerySet.Origin.ANNOTATION
    assert list(query_set.queries.values_list("qid", "text")) == [
        ("101", "what is a synapse"),
        ("105", "how to boil an egg"),
    ]
    with pytest.raises(ServiceError, match="already exists"):
        export_queries(annotated, "male", tmp_path / "m.tsv", as_query_set="ng")
    assert not (tmp_path / "m.tsv").exists()


def test_formula_like_queries_neutralised_in_csv_verbatim_in_tsv(query_set, tmp_path, annotators):
    query_set.queries.filter(qid="101").update(text="=HYPERLINK(1)")
    from tests.annotation.conftest import make_batch

    batch = make_batch(query_set, name="f")
    services.publish_batch(batch)
    _annotate(batch, annotators[:2])
    export_queries(batch, "non-gendered", tmp_path / "ng.tsv")
    assert (tmp_path / "ng.tsv").read_text().splitlines()[0] == "101\t=HYPERLINK(1)"
    export_queries(batch, "non-gendered", tmp_path / "ng.csv", fmt="csv")
    assert (tmp_path / "ng.csv").read_text().splitlines()[1].startswith("101,'=HYPERLINK(1),n,false,")


def test_unknown_category_or_format(annotated, tmp_path):
    with pytest.raises(ServiceError, match="unknown category"):
        export_queries(annotated, "neutral", tmp_path / "x.tsv")
    with pytest.raises(ServiceError, match="unknown format"):
        export_queries(annotated, "male", tmp_path / "x.xlsx", "xlsx")


def test_escalation_adds_an_assignment_to_hits_with_disputed_queries(annotated, annotators):
    plan = plan_escalation(annotated, max_assignments=3)
    hit_104 = annotated.hits.get(hit_queries__batch_query__qid="104")
    assert [(hit, qids) for hit, qids in plan.hits] == [(hit_104, ["104"])]
    assert plan.cost.assignments_total == 1
    assert plan.cost.total == annotated.reward  # in-house: the reward only, no crowd fee
    escalations = escalate_batch(annotated, max_assignments=3)
    assert [e.hit for e in escalations] == [hit_104]
    hit_104.refresh_from_db()
    assert hit_104.max_assignments == 3
    # Only the escalated HIT is handed out to the third annotator; their vote settles 104.
    extra = next_assignment(annotators[2])
    assert extra.hit == hit_104
    submit_local_assignment(extra, answers_for(extra))
    assert next_assignment(annotators[2]) is None
    results = {r["qid"]: r for r in query_results(annotated)}
    assert results["104"]["label"] == "o"
    # Nothing is disputed any more; at the cap nothing more would be added anyway.
    assert plan_escalation(annotated, max_assignments=3).hits == []


def test_an_export_reads_the_judgments_once_and_fits_dawid_skene_once(annotated, tmp_path, monkeypatch):
    """Labels, agreement and the card come from one read of the judgments and one Dawid-Skene fit."""
    from annotation.results.selectors import labels as results
    from genderbias.crowd import aggregation

    calls = {"frame": 0, "dawid_skene": 0}
    real_frame, real_ds = results.judgments_frame, aggregation.dawid_skene

    def counting_frame(batch):
        calls["frame"] += 1
        return real_frame(batch)

    def counting_ds(frame, **kwargs):
        calls["dawid_skene"] += 1
        return real_ds(frame, **kwargs)

    monkeypatch.setattr(results, "judgments_frame", counting_frame)
    monkeypatch.setattr(aggregation, "dawid_skene", counting_ds)
    export_queries(annotated, "all", tmp_path / "all.jsonl", "jsonl")
    assert calls == {"frame": 1, "dawid_skene": 1}
    rows = [json.loads(line) for line in (tmp_path / "all.jsonl").read_text().splitlines()]
    assert rows and all(0 < row["ds_posterior"] <= 1 for row in rows)
