"""Batches from the site and the API: the form, its live cost estimate, gold files, exports over HTTP."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from annotation.models import Batch, Export
from platforms.inhouse.services.handout import next_assignment
from platforms.inhouse.services.hit_page import submit_local_assignment
from pooling.models import QuerySet
from tests.annotation.conftest import QUERIES, answers_for, make_batch

FORM = {"provider": "local", "assignments_per_query": 3, "queries_per_hit": 4, "reward": "0.10", "gold_per_hit": 0}


def test_the_estimate_is_what_create_batch_records(query_set, researcher, client):
    client.force_login(researcher)
    # 6 queries, 4 per HIT: 2 HITs x 3 assignments = 6 x $0.10 (in-house: no provider fee) = $0.60
    html = client.get(reverse("annotation:batch-estimate"), {**FORM, "queries": "gq"}).content.decode()
    assert "<strong>$0.60</strong> for 2 HITs" in html
    response = client.post(reverse("annotation:batch-create"), {**FORM, "name": "web", "queries": "gq"})
    assert response.status_code == 302 and response.url == reverse("annotation:batch-detail", args=["web"])
    batch = Batch.objects.get(name="web")
    assert batch.cost["total"] == "0.60" and batch.hits.count() == 2 and batch.status == Batch.Status.DRAFT


def test_a_comparison_price_is_shown_only_where_the_platform_declares_one(query_set, researcher, client, toy_platform):
    """In-house: no fee ($0.00) and no comparison. The toy platform declares one (the reward again, as
    its rival's fee): the same figures in its estimate and on its page."""
    client.force_login(researcher)
    html = client.get(reverse("annotation:batch-estimate"), {**FORM, "queries": "gq"}).content.decode()
    assert "+ $0.00 fee" in html and "For comparison" not in html
    client.post(reverse("annotation:batch-create"), {**FORM, "name": "web", "queries": "gq"})
    page = client.get(reverse("annotation:batch-detail", args=["web"])).content.decode()
    assert '<th>Fee per assignment (in-house: no provider fee)</th><td class="num">$0.00</td>' in page
    assert "For comparison" not in page
    batch = make_batch(query_set, name="toy1", provider="toy", assignments_per_query=3, queries_per_hit=4)
    reward, places = batch.reward, 3 * 2  # 6 queries, 4 per HIT: 2 HITs of 3 assignments
    comparison = f"For comparison, on a rival platform: ${2 * reward * places} (${reward} fee per assignment)."
    assert comparison in client.get(reverse("annotation:batch-detail", args=["toy1"])).content.decode()


def test_the_estimate_explains_what_is_missing(query_set, researcher, client):
    client.force_login(researcher)
    html = client.get(reverse("annotation:batch-estimate"), FORM).content.decode()
    assert "No estimate yet" in html and "choose the pool (or the query set) to annotate" in html
    html = client.get(
        reverse("annotation:batch-estimate"), {**FORM, "queries": "gq", "reward": "0.001"}
    ).content.decode()
    assert "No estimate yet" in html


def test_the_form_refuses_what_the_services_refuse_and_creates_nothing(query_set, researcher, client):
    client.force_login(researcher)
    response = client.post(
        reverse("annotation:batch-create"), {**FORM, "name": "web", "queries": "gq", "gold_per_hit": 1}
    )
    assert response.context["form"].errors["gold"] == ["gold questions per HIT need a gold file"]
    response = client.post(reverse("annotation:batch-create"), {**FORM, "name": "not a slug", "queries": "gq"})
    assert "name" in response.context["form"].errors
    assert not Batch.objects.exists()


def test_a_gold_file_is_read_and_its_errors_name_the_uploaded_file_and_line(query_set, researcher, client):
    client.force_login(researcher)
    bad = SimpleUploadedFile("gold.tsv", b"g1\twho is she\tf\ng2\tno label\n")
    response = client.post(
        reverse("annotation:batch-create"), {**FORM, "name": "web", "queries": "gq", "gold": bad, "gold_per_hit": 1}
    )
    assert "gold: gold.tsv:2: expected qid&lt;TAB&gt;query&lt;TAB&gt;label" in response.content.decode()
    good = SimpleUploadedFile("gold.tsv", b"g1\twho is she\tf\ng2\thow to fix a tyre\tn\n")
    client.post(
        reverse("annotation:batch-create"), {**FORM, "name": "web", "queries": "gq", "gold": good, "gold_per_hit": 1}
    )
    batch = Batch.objects.get(name="web")
    assert batch.queries.filter(is_gold=True).count() == 2
    assert all(hit.hit_queries.filter(batch_query__is_gold=True).count() == 1 for hit in batch.hits.all())


def test_the_studys_own_file_as_gold_leaves_its_gold_queries_out_and_the_page_says_how_many(
    query_set, researcher, client
):
    """Issue 57: the study's labelled file is the gold of a batch drawn from it. Its gold queries are
    asked as gold only, not also as queries to label; the batch page says how many were left out."""
    client.force_login(researcher)
    study_file = "".join(f"{qid}\t{text}\t{label}\n" for qid, text, label in QUERIES[:2]) + "g9\tqueen of spain\tf\n"
    gold = SimpleUploadedFile("study.tsv", study_file.encode())
    response = client.post(
        reverse("annotation:batch-create"), {**FORM, "name": "own", "queries": "gq", "gold": gold, "gold_per_hit": 1}
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    batch = Batch.objects.get(name="own")
    asked = set(batch.queries.filter(is_gold=False).values_list("qid", flat=True))
    assert asked == {qid for qid, _, _ in QUERIES[2:]}  # the two gold queries of the set left out
    assert set(batch.queries.filter(is_gold=True).values_list("qid", flat=True)) == {"101", "102", "g9"}
    assert batch.hits.count() == 1 and batch.cost["hits"] == 1  # four queries to label, one HIT of four
    page = client.get(reverse("annotation:batch-detail", args=["own"])).content.decode()
    assert '<span id="gold-left-out">2 of them queries of the query set' in page
    every = SimpleUploadedFile("all.tsv", "".join(f"{q}\t{t}\t{lb}\n" for q, t, lb in QUERIES).encode())
    refused = client.post(
        reverse("annotation:batch-create"), {**FORM, "name": "all", "queries": "gq", "gold": every, "gold_per_hit": 1}
    )
    assert refused.status_code == 400 and "none is left to annotate" in refused.content.decode()
    assert not Batch.objects.filter(name="all").exists()


def test_the_pool_page_and_query_sets_lead_to_the_form(query_set, researcher, client):
    client.force_login(researcher)
    response = client.get(reverse("annotation:batch-create") + "?queries=gq")
    assert response.context["form"]["queries"].value() == "gq"
    assert 'hx-trigger="load, input delay:300ms from:#batch-form' in response.content.decode()


def test_batch_pages_are_for_researchers_only(query_set, annotators, client):
    client.force_login(annotators[0])
    assert client.get(reverse("annotation:batch-create")).status_code == 403
    assert client.post(reverse("annotation:batch-create"), {**FORM, "name": "x", "queries": "gq"}).status_code == 403
    assert client.get(reverse("annotation:batch-estimate"), FORM).status_code == 403
    assert client.post("/api/annotation/batches/", {**FORM, "name": "x", "queries": "gq"}).status_code == 403
    assert not Batch.objects.exists()


def test_api_creates_a_batch_and_estimates_its_cost(query_set, researcher, client):
    client.force_login(researcher)
    estimate = client.post(
        "/api/annotation/batches/estimate/", {**FORM, "queries": "gq"}, content_type="application/json"
    )
    assert estimate.status_code == 200 and estimate.json()["total"] == "0.60" and estimate.json()["hits"] == 2
    response = client.post(
        "/api/annotation/batches/", {**FORM, "name": "api", "queries": "gq"}, content_type="application/json"
    )
    assert response.status_code == 201 and response.json()["cost"]["total"] == "0.60"
    again = client.post(
        "/api/annotation/batches/", {**FORM, "name": "api", "queries": "gq"}, content_type="application/json"
    )
    assert again.status_code == 400 and again.json()["name"] == ["a batch named 'api' already exists"]
    assert Batch.objects.count() == 1
    missing = client.post("/api/annotation/batches/", {**FORM, "name": "b"}, content_type="application/json")
    assert missing.status_code == 400 and "pool" in missing.json()


@pytest.fixture
def answered(local_batch, annotators):
    for user in annotators[:2]:
        while (assignment := next_assignment(user, local_batch)) is not None:
            submit_local_assignment(assignment, answers_for(assignment))
    return local_batch


@pytest.mark.parametrize(
    ("fmt", "first_line"),
    [("tsv", "101\twhat is a synapse"), ("csv", "qid,query,label"), ("jsonl", '{"qid": "101"')],
)
def test_export_from_the_batch_page_downloads_the_file_and_its_card(answered, researcher, client, fmt, first_line):
    client.force_login(researcher)
    response = client.post(
        reverse("annotation:batch-export", args=["b1"]), {"category": "non-gendered", "format": fmt, "as_query_set": ""}
    )
    export = Export.objects.get()
    assert response.url == reverse("annotation:export-download", args=[export.pk, "file"])
    download = client.get(response.url)
    assert download["Content-Disposition"] == f'attachment; filename="b1-non-gendered.{fmt}"'
    assert b"".join(download.streaming_content).decode().startswith(first_line)
    card = client.get(reverse("annotation:export-download", args=[export.pk, "card"]))
    assert card["Content-Disposition"] == f'attachment; filename="b1-non-gendered.{fmt}.md"'
    page = client.get(reverse("annotation:batch-detail", args=["b1"])).content.decode()
    assert reverse("annotation:export-download", args=[export.pk, "card"]) in page
    assert export.path not in page  # no server paths on the page


def test_export_as_a_query_set_from_the_page(answered, researcher, client):
    client.force_login(researcher)
    client.post(
        reverse("annotation:batch-export", args=["b1"]),
        {"category": "non-gendered", "format": "tsv", "as_query_set": "ng"},
    )
    assert sorted(QuerySet.objects.get(name="ng").queries.values_list("qid", flat=True)) == ["101", "105"]
    response = client.post(
        reverse("annotation:batch-export", args=["b1"]),
        {"category": "non-gendered", "format": "tsv", "as_query_set": "ng"},
        follow=True,
    )
    assert "a query set named &#x27;ng&#x27; already exists" in response.content.decode()


def test_the_admin_shows_batches_but_cannot_add_change_or_delete_them(local_batch, admin_client):
    assert admin_client.get("/admin/annotation/batch/").status_code == 200
    assert admin_client.get("/admin/annotation/batch/add/").status_code == 403
    response = admin_client.post(f"/admin/annotation/batch/{local_batch.pk}/change/", {"name": "renamed"})
    assert response.status_code == 403
    assert admin_client.post(f"/admin/annotation/batch/{local_batch.pk}/delete/", {"post": "yes"}).status_code == 403
    for model in ("hit", "batchquery", "assignment", "escalation", "export"):
        assert admin_client.get(f"/admin/annotation/{model}/add/").status_code == 403
    local_batch.refresh_from_db()
    assert local_batch.name == "b1"


def test_a_gold_file_over_the_upload_limit_is_refused_on_its_field(query_set, researcher, client, settings):
    settings.IMPORT_UPLOAD_MAX_BYTES = 5
    client.force_login(researcher)
    gold = {"gold": SimpleUploadedFile("gold.tsv", b"g1\twho is she\tf\n"), "gold_per_hit": 1}
    response = client.post(reverse("annotation:batch-create"), {**FORM, "name": "web", "queries": "gq", **gold})
    assert response.status_code == 400
    assert "larger than the upload limit (5 bytes" in response.context["form"].errors["gold"][0]
    gold = {"gold": SimpleUploadedFile("gold.tsv", b"g1\twho is she\tf\n"), "gold_per_hit": 1}
    response = client.post("/api/annotation/batches/", {**FORM, "name": "web", "queries": "gq", **gold})
    assert response.status_code == 400 and "larger than the upload limit" in response.json()["gold"][0]
    assert not Batch.objects.exists()
