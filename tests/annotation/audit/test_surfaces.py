"""The audit sample's pages, API and command (issue 81, item 1): the labelling page is blind (byte for byte the
same before and after the crowd answers), roles are enforced on every page and endpoint with JSON 4xx in the API,
and the command draws, imports and shows."""

from __future__ import annotations

import json
import re
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse

from annotation import services
from annotation.audit.selectors import audit_items, audit_labels
from annotation.audit.services.samples import draw_audit_sample
from core.models import Membership
from core.services import groups as group_services
from platforms.inhouse.services.handout import next_assignment
from platforms.inhouse.services.hit_page import submit_local_assignment
from tests.annotation.audit.conftest import member

pytestmark = pytest.mark.django_db


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _without_token(html: str) -> str:
    html = re.sub(r'name="csrfmiddlewaretoken" value="[^"]*"', "", html)
    return re.sub(r'"X-CSRFToken": "[^"]*"', "", html)


def test_the_labelling_page_shows_nothing_of_the_crowd(big_batch, people):
    """The page of an audited query is the same before and after two annotators answered it (their
    answers disagree, so any count, majority or vote would show)."""
    services.publish_batch(big_batch)
    draw_audit_sample(big_batch, by=people["rita"], size=50, seed=5)
    client = _client(people["rita"])
    url = reverse("annotation:batch-audit-label", args=[big_batch.name]) + "?i=0"
    before = client.get(url)
    assert before.status_code == 200
    qid = audit_items(big_batch)[0]["qid"]
    other = member("ann-2", Membership.Role.ANNOTATOR, big_batch.group)
    for user, label in ((people["ann"], "f"), (other, "m")):
        assignment = next_assignment(user, big_batch)
        while assignment is not None and qid not in assignment.hit.hit_queries.values_list(
            "batch_query__qid", flat=True
        ):
            submit_local_assignment(assignment, _answers(assignment, "o"))
            assignment = next_assignment(user, big_batch)
        submit_local_assignment(assignment, _answers(assignment, label))
    assert big_batch.queries.get(qid=qid).judgments.count() == 2
    after = client.get(url)
    assert _without_token(after.content.decode()) == _without_token(before.content.decode())


def _answers(assignment, label: str) -> dict[str, str]:
    return {
        hq.field_name: hq.batch_query.gold_label or label
        for hq in assignment.hit.hit_queries.select_related("batch_query")
    }


def test_a_researcher_labels_one_query_after_another_on_the_page(big_batch, people):
    draw_audit_sample(big_batch, by=people["rita"], size=50, seed=5)
    client = _client(people["rita"])
    url = reverse("annotation:batch-audit-label", args=[big_batch.name])
    page = client.get(url)
    assert "0 of 50 labelled" in page.content.decode()
    posted = client.post(url, {"index": 0, "label": "n"})
    assert posted.status_code == 302 and posted["Location"].endswith("?i=1")
    assert audit_labels(big_batch) == {audit_items(big_batch)[0]["qid"]: "n"}
    bad = client.post(url, {"index": 1, "label": "maybe"})
    assert bad.status_code == 400 and "unknown label" in bad.content.decode()
    batch_page = client.get(reverse("annotation:batch-detail", args=[big_batch.name])).content.decode()
    assert "1 of 50 labelled" in batch_page


def test_roles_on_the_pages(big_batch, people):
    draw_audit_sample(big_batch, by=people["rita"], size=50, seed=5)
    audit = reverse("annotation:batch-audit", args=[big_batch.name])
    label = reverse("annotation:batch-audit-label", args=[big_batch.name])
    viewer = _client(people["vic"])
    shown = viewer.get(audit)
    assert shown.status_code == 200 and "<form" not in shown.content.decode().split("<main", 1)[1]
    assert viewer.get(label).status_code == 403
    assert viewer.post(label, {"index": 0, "label": "n"}).status_code in (403, 404)
    assert _client(people["ann"]).get(audit).status_code == 403  # an annotator not trusted
    anonymous = Client().get(label)
    assert anonymous.status_code == 302 and "/login" in anonymous["Location"]
    group = group_services.create_group("Other lab")
    stranger = member("ann-other", Membership.Role.ANNOTATOR, group)
    assert _client(stranger).get(label).status_code in (403, 404)
    assert audit_labels(big_batch) == {}


def test_the_api_draws_labels_and_refuses_in_json(big_batch, people, tmp_path):
    base = f"/api/annotation/batches/{big_batch.name}/audit/"
    rita = _client(people["rita"])
    drawn = rita.post(base, {"size": 50, "seed": 11}, content_type="application/json")
    assert drawn.status_code == 201, drawn.content
    assert drawn.json()["size"] == 50 and len(drawn.json()["items"]) == 50
    assert rita.post(base, {"size": 60}, content_type="application/json").status_code == 200
    conflict = rita.post(base, {"size": 70, "seed": 12}, content_type="application/json")
    assert (conflict.status_code, conflict["Content-Type"]) == (409, "application/json")
    qid = audit_items(big_batch)[0]["qid"]
    labelled = rita.post(base + "labels/", {"qid": qid, "label": "m"}, content_type="application/json")
    assert labelled.status_code == 200 and labelled.json()["label"] == "m"
    for body, field in (({"qid": qid, "label": "x"}, "label"), ({"qid": "g1", "label": "f"}, "qid")):
        refused = rita.post(base + "labels/", body, content_type="application/json")
        assert (refused.status_code, refused["Content-Type"]) == (400, "application/json")
        assert field in refused.json(), refused.json()
    labels = tmp_path / "experts.tsv"
    labels.write_text(f"{qid}\tm\nnot-a-qid\tf\n")
    with labels.open("rb") as upload:
        bad = rita.post(base + "import/", {"file": upload})
    assert bad.status_code == 400 and "experts.tsv:2" in json.dumps(bad.json())

    viewer = _client(people["vic"])
    assert viewer.get(base).status_code == 200
    for path, body in (("", {"size": 80}), ("labels/", {"qid": qid, "label": "f"})):
        refused = viewer.post(base + path, body, content_type="application/json")
        assert refused.status_code in (403, 404) and refused["Content-Type"] == "application/json"
    untrusted = _client(people["ann"]).post(
        base + "labels/", {"qid": qid, "label": "f"}, content_type="application/json"
    )
    assert untrusted.status_code == 403 and untrusted["Content-Type"] == "application/json"
    anonymous = Client().get(base)
    assert anonymous.status_code in (401, 403) and anonymous["Content-Type"] == "application/json"
    assert audit_labels(big_batch) == {qid: "m"}


def test_the_command_draws_imports_and_shows(big_batch, tmp_path):
    out = StringIO()
    call_command("audit_sample", big_batch.name, "--draw", "--size", "50", "--seed", "4", stdout=out)
    assert "50 of 120 queries, seed 4" in out.getvalue()
    first = audit_items(big_batch)[0]["qid"]
    bad = tmp_path / "l.tsv"
    bad.write_text(f"{first}\tn\n\nq-missing\tn\n")
    with pytest.raises(CommandError, match=r"l.tsv:3: qid 'q-missing' is not in"):
        call_command("audit_sample", big_batch.name, "--label-file", str(bad))
    good = tmp_path / "good.tsv"
    good.write_text(f"{first}\tn\tDr Expert\n")
    out = StringIO()
    call_command("audit_sample", big_batch.name, "--label-file", str(good), stdout=out)
    assert "1 expert label imported" in out.getvalue() and "1 of 50 labelled" in out.getvalue()
    out = StringIO()
    call_command("audit_sample", big_batch.name, "--show", "--json", stdout=out)
    shown = json.loads(out.getvalue())
    assert (shown["seed"], shown["labelled"], shown["labellers"]) == (4, 1, ["Dr Expert"])
    assert shown["items"][0]["qid"] == first
