"""A researcher settles a disputed query: service, selector, page, API, command, exports and card."""

import csv
import json

import pytest
from django.core.management import CommandError, call_command

from annotation import services
from annotation.aggregation import dawid_skene
from annotation.models import Adjudication
from annotation.selectors import adjudicated_labels
from core.errors import ServiceError

from .conftest import TRUTH, answers_for


@pytest.fixture
def disputed(local_batch, annotators):
    """Two votes per query; ann-b says Female on 104 where ann-a says Other: 104 is disputed (1-1)."""
    for user, override in zip(annotators[:2], [{}, {"104": "f"}], strict=True):
        while (assignment := services.next_assignment(user, local_batch)) is not None:
            services.submit_local_assignment(assignment, answers_for(assignment, override=override))
    return local_batch


def test_adjudication_is_recorded_once_with_who_and_when_and_overrides_the_crowd(disputed, researcher):
    assert adjudicated_labels(disputed) == {}
    services.adjudicate(disputed, "104", "f", "asks about girls first", researcher)
    services.adjudicate(disputed, "104", "other", "compares both genders", researcher)  # a retry / change
    assert Adjudication.objects.count() == 1
    ruling = Adjudication.objects.get()
    assert (ruling.label, ruling.reason, ruling.decided_by) == ("o", "compares both genders", researcher)
    assert ruling.decided_at is not None
    assert adjudicated_labels(disputed) == {"104": "o"}
    result = next(r for r in services.query_results(disputed) if r["qid"] == "104")
    assert result["label"] == "o" and result["crowd_label"] is None and result["adjudicated"]


@pytest.mark.parametrize(
    ("qid", "label", "reason", "field"),
    [("104", "x", "why", "label"), ("104", "f", "  ", "reason"), ("999", "f", "why", "qid")],
)
def test_bad_adjudication_names_the_field_and_writes_nothing(disputed, researcher, qid, label, reason, field):
    with pytest.raises(ServiceError, match=f"^{field}:"):
        services.adjudicate(disputed, qid, label, reason, researcher)
    assert not Adjudication.objects.exists()


def test_annotators_cannot_adjudicate(disputed, annotators):
    with pytest.raises(ServiceError, match="researchers"):
        services.adjudicate(disputed, "104", "f", "why", annotators[0])


def test_export_marks_adjudicated_labels_carries_posteriors_and_counts_them_on_the_card(disputed, researcher, tmp_path):
    services.adjudicate(disputed, "104", "o", "compares both genders", researcher)
    export = services.export_queries(disputed, "all", tmp_path / "all.csv", "csv")
    with open(tmp_path / "all.csv", newline="") as handle:
        rows = {r["qid"]: r for r in csv.DictReader(handle)}
    assert {qid: r["label"] for qid, r in rows.items()} == TRUTH  # 104 is no longer set aside
    assert {qid for qid, r in rows.items() if r["adjudicated"] == "true"} == {"104"}
    assert all(r["adjudicated"] == "false" for qid, r in rows.items() if qid != "104")
    # Each label's posterior is Dawid-Skene's probability of that label for that query.
    posteriors = dawid_skene(services.judgments_frame(disputed)).posteriors
    for qid, row in rows.items():
        assert float(row["ds_posterior"]) == pytest.approx(posteriors.loc[qid, row["label"]], abs=1e-6)
    assert "1 of 6 labelled queries were settled by a researcher" in export.card
    assert "adjudication replaces the majority vote" in export.card

    services.export_queries(disputed, "other", tmp_path / "o.jsonl", "jsonl")
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
