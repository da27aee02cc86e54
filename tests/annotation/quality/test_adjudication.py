"""A researcher settles a disputed query: service, selector, page, API, command, exports and card."""

import csv
import json
import re

import pytest
from django.core.management import CommandError, call_command

from annotation.exports.services import export_queries
from annotation.models import Adjudication
from annotation.quality.services.adjudication import adjudicate
from annotation.quality.services.escalation import plan_escalation
from annotation.results.selectors.agreement import agreement
from annotation.results.selectors.labels import judgments_frame, query_results
from annotation.selectors import adjudicated_labels
from core.errors import ServiceError
from genderbias.crowd.aggregation import dawid_skene
from platforms.inhouse.services.handout import next_assignment
from platforms.inhouse.services.hit_page import submit_local_assignment
from tests.annotation.conftest import TRUTH, answers_for


@pytest.fixture
def disputed(local_batch, annotators):
    """Two votes per query; ann-b says Female on 104 where ann-a says Other: 104 is disputed (1-1)."""
    for user, override in zip(annotators[:2], [{}, {"104": "f"}], strict=True):
        while (assignment := next_assignment(user, local_batch)) is not None:
            submit_local_assignment(assignment, answers_for(assignment, override=override))
    return local_batch


def test_adjudication_is_recorded_once_with_who_and_when_and_overrides_the_crowd(disputed, researcher):
    assert adjudicated_labels(disputed) == {}
    adjudicate(disputed, "104", "f", "asks about girls first", researcher)
    adjudicate(disputed, "104", "other", "compares both genders", researcher)  # a retry / change
    assert Adjudication.objects.count() == 1
    ruling = Adjudication.objects.get()
    assert (ruling.label, ruling.reason, ruling.decided_by) == ("o", "compares both genders", researcher)
    assert ruling.decided_at is not None
    assert adjudicated_labels(disputed) == {"104": "o"}
    result = next(r for r in query_results(disputed) if r["qid"] == "104")
    assert result["label"] == "o" and result["crowd_label"] is None and result["adjudicated"]


@pytest.mark.parametrize(
    ("qid", "label", "reason", "field"),
    [("104", "x", "why", "label"), ("104", "f", "  ", "reason"), ("999", "f", "why", "qid")],
)
def test_bad_adjudication_names_the_field_and_writes_nothing(disputed, researcher, qid, label, reason, field):
    with pytest.raises(ServiceError, match=f"^{field}:"):
        adjudicate(disputed, qid, label, reason, researcher)
    assert not Adjudication.objects.exists()


def test_annotators_cannot_adjudicate(disputed, annotators):
    with pytest.raises(ServiceError, match="researchers"):
        adjudicate(disputed, "104", "f", "why", annotators[0])


def test_export_marks_adjudicated_labels_carries_posteriors_and_counts_them_on_the_card(disputed, researcher, tmp_path):
    adjudicate(disputed, "104", "o", "compares both genders", researcher)
    export = export_queries(disputed, "all", tmp_path / "all.csv", "csv")
    with open(tmp_path / "all.csv", newline="") as handle:
        rows = {r["qid"]: r for r in csv.DictReader(handle)}
    assert {qid: r["label"] for qid, r in rows.items()} == TRUTH  # 104 is no longer set aside
    assert {qid for qid, r in rows.items() if r["adjudicated"] == "true"} == {"104"}
    assert all(r["adjudicated"] == "false" for qid, r in rows.items() if qid != "104")
    # Each label's posterior is Dawid-Skene's probability of that label for that query.
    posteriors = dawid_skene(judgments_frame(disputed)).posteriors
    for qid, row in rows.items():
        assert float(row["ds_posterior"]) == pytest.approx(posteriors.loc[qid, row["label"]], abs=1e-6)
    assert "1 of 6 labelled queries were settled by a researcher" in export.card
    assert "adjudication replaces the majority vote" in export.card

    export_queries(disputed, "other", tmp_path / "o.jsonl", "jsonl")
    (line,) = [json.loads(x) for x in (tmp_path / "o.jsonl").read_text().splitlines()]
    assert line["qid"] == "104" and line["adjudicated"] is True and line["method"] == "adjudication"


def test_query_page_adjudicates_and_shows_the_ruling(disputed, researcher, annotators, client):
    client.force_login(annotators[0])
    assert client.post("/annotation/batches/b1/queries/104/", {"label": "o", "reason": "x"}).status_code in (302, 403)
    assert not Adjudication.objects.exists()

    client.force_login(researcher)
    assert client.post("/annotation/batches/b1/queries/104/", {"label": "o", "reason": ""}).status_code == 400
    response = client.post("/annotation/batches/b1/queries/104/", {"label": "o", "reason": "both genders"})
    assert response.status_code == 302
    page = client.get("/annotation/batches/b1/queries/104/").content.decode()
    assert (
        "Adjudicated as <strong>Other or multiple genders</strong> (o) by researcher" in page and "both genders" in page
    )


def test_api_adjudicate_action(disputed, researcher, annotators, client):
    client.force_login(annotators[0])
    assert (
        client.post("/api/annotation/batches/b1/adjudicate/", {"qid": "104", "label": "o", "reason": "r"}).status_code
        == 403
    )
    client.force_login(researcher)
    bad = client.post("/api/annotation/batches/b1/adjudicate/", {"qid": "nope", "label": "o", "reason": "r"})
    assert bad.status_code == 400 and "qid" in bad.json()["detail"]
    ok = client.post("/api/annotation/batches/b1/adjudicate/", {"qid": "104", "label": "male", "reason": "r"})
    assert ok.status_code == 200
    assert ok.json()["label"] == "m" and ok.json()["decided_by"] == "researcher"
    assert adjudicated_labels(disputed) == {"104": "m"}


def test_adjudicate_command(disputed, researcher, annotators):
    call_command("adjudicate", "b1", "104", "female", "--reason", "girls first", "--by", "researcher")
    assert adjudicated_labels(disputed) == {"104": "f"}
    with pytest.raises(CommandError, match="--by"):
        call_command("adjudicate", "b1", "104", "f", "--reason", "r", "--by", annotators[0].username)
    with pytest.raises(CommandError, match="qid"):
        call_command("adjudicate", "b1", "999", "f", "--reason", "r", "--by", "researcher")


@pytest.fixture
def three_disputed(local_batch, annotators):
    """Two votes per query; ann-b differs on 103 (first HIT), 104 and 106 (second HIT): three 1-1 ties."""
    for user, override in zip(annotators[:2], [{}, {"103": "n", "104": "f", "106": "m"}], strict=True):
        while (assignment := next_assignment(user, local_batch)) is not None:
            submit_local_assignment(assignment, answers_for(assignment, override=override))
    return local_batch


def test_rulings_count_everywhere_set_aside_labels_escalation_and_exports(three_disputed, researcher, client, tmp_path):
    """Settle two of three disputed queries: every count, the escalation offer and the exports agree."""
    batch = three_disputed
    assert agreement(batch, bootstrap=0)["set_aside"] == ["103", "104", "106"]
    assert len(plan_escalation(batch, max_assignments=3).hits) == 2
    adjudicate(batch, "103", "m", "about men", researcher)
    adjudicate(batch, "104", "o", "both genders", researcher)

    report = agreement(batch, bootstrap=0)
    assert report["set_aside"] == ["106"]
    assert sum(report["labels"].values()) == 5 and report["adjudicated"] == 2
    assert report["labels"] == {"n": 2, "f": 1, "m": 1, "o": 1}

    client.force_login(researcher)
    api = client.get("/api/annotation/batches/b1/agreement/").json()
    assert api["set_aside"] == ["106"] and api["labels"] == report["labels"]
    live = client.get("/annotation/batches/b1/live/").content.decode()
    assert re.search(r'<div class="value">1</div>queries set aside', live)
    agreement_page = client.get("/annotation/batches/b1/agreement/").content.decode()
    assert re.search(r'id="set-aside-count">1<', agreement_page)
    assert "5 of 6 judged queries labelled" in agreement_page and "2 queries settled" in agreement_page
    assert re.findall(r'<a href="/annotation/batches/b1/queries/(\d+)/">', agreement_page.split('id="set-aside"')[1])[
        :1
    ] == ["106"]

    # Escalation offers the one HIT whose query is still disputed, and its cost alone.
    plan = plan_escalation(batch, max_assignments=3)
    assert [qids for _, qids in plan.hits] == [["106"]] and plan.disputed == 1
    assert plan.cost.assignments_total == 1
    escalate_page = client.get("/annotation/batches/b1/escalate/?max_assignments=3").content.decode()
    assert "1 query has no majority" in escalate_page
    assert re.search(r"Extra assignments</th><td[^>]*>1<", escalate_page)

    export = export_queries(batch, "all", tmp_path / "all.tsv")
    assert export.queries == 5 and export.counts["set_aside"] == 1
    assert {k: v for k, v in export.counts.items() if k != "set_aside"} == report["labels"]
