"""Query ids are whatever a query file allows (not only digits): the agreement page links every
set-aside query, the per-query page opens and settles it, and the API finds it, for ids such as
``a/b``, ``q?x``, ``q#1``, ``50%``, ``..`` and ``é q`` (no 500, no link to another query)."""

import html
import re
from decimal import Decimal
from urllib.parse import unquote, urlencode

import pytest
from django.urls import reverse

from annotation import services
from annotation.results.selectors.labels import query_results
from genderbias.files.queryfiles import read_queries
from platforms.inhouse.services.handout import next_assignment
from platforms.inhouse.services.hit_page import submit_local_assignment
from pooling.models import QuerySet
from pooling.services import create_query_set

#: Ids a query file can hold: anything but tabs and line breaks, without surrounding spaces.
ODD_IDS = ["a/b", "q?x", "q#1", "50%", "..", "é q", ".", "x~41", "a/../b", "%2F", "日本 1"]


@pytest.fixture
def odd_batch(tmp_path, annotators):
    """Every query read from a real query file, then split 1-1 by two annotators: all set aside."""
    path = tmp_path / "odd.tsv"
    path.write_text("".join(f"{qid}\ttext of query {qid}\n" for qid in ODD_IDS), encoding="utf-8")
    queries = read_queries(path)
    assert [qid for qid, _ in queries] == ODD_IDS
    query_set = create_query_set("odd", queries, origin=QuerySet.Origin.IMPORTED)
    batch = services.create_batch(
        "odd",
        services.BatchSettings(
            provider="local", assignments_per_query=2, queries_per_hit=len(ODD_IDS), reward=Decimal("0.05")
        ),
        query_set=query_set,
    )
    services.publish_batch(batch)
    for user, label in zip(annotators[:2], ["f", "m"], strict=True):
        assignment = next_assignment(user, batch)
        hit_queries = assignment.hit.hit_queries.select_related("batch_query")
        submit_local_assignment(assignment, {hq.field_name: label for hq in hit_queries})
    batch.refresh_from_db()
    return batch


def _query_links(page: str) -> dict[str, str]:
    """{qid shown: href} of every per-query link of the agreement page."""
    prefix = re.escape(reverse("annotation:batch-agreement", args=["odd"]).replace("agreement/", "queries/"))
    return {
        html.unescape(text): html.unescape(href) for href, text in re.findall(rf'href="({prefix}[^"]*)">([^<]*)<', page)
    }


def test_the_agreement_page_links_every_query_and_each_link_opens_that_query(odd_batch, researcher, client):
    client.force_login(researcher)
    response = client.get(reverse("annotation:batch-agreement", args=["odd"]))
    assert response.status_code == 200
    links = _query_links(response.content.decode())
    assert sorted(links) == sorted(ODD_IDS)
    for qid, href in links.items():
        # The link survives a browser: one path segment, nothing a browser or proxy rewrites.
        segment = href.rstrip("/").rsplit("/", 1)[1]
        assert re.fullmatch(r"[A-Za-z0-9_.~-]+", segment) and segment not in (".", "..") and unquote(segment) == segment
        page = client.get(href)
        assert page.status_code == 200, qid
        body = page.content.decode()
        assert f"<h1>Query {html.escape(qid)}</h1>" in body and f"text of query {html.escape(qid)}" in body


def test_a_query_with_a_slash_is_settled_on_its_page_and_sent_back_there(odd_batch, researcher, client):
    client.force_login(researcher)
    url = reverse("annotation:batch-query", args=["odd", "a/b"])
    response = client.post(url, {"label": "o", "reason": "both genders"})
    assert response.status_code == 302 and response.url == url
    assert query_results(odd_batch)[ODD_IDS.index("a/b")]["adjudication"]["label"] == "o"
    assert "Query a/b adjudicated" in client.get(url).content.decode()


def test_unknown_or_badly_escaped_ids_answer_404(odd_batch, researcher, client):
    client.force_login(researcher)
    for segment in ("nope", "a~2fb", "~41", "~", "~FF"):
        assert client.get(f"/annotation/batches/odd/queries/{segment}/").status_code == 404, segment


def test_the_api_finds_each_query_by_its_id(odd_batch, researcher, client):
    client.force_login(researcher)
    for qid in ODD_IDS:
        response = client.get("/api/annotation/batches/odd/queries/?" + urlencode({"q": qid}))
        assert response.status_code == 200, qid
        assert qid in [row["qid"] for row in response.json()["results"]]
