"""The agreement page keeps what it shows of the answers (issue 31): its figures and the
Dawid-Skene section are rendered once per answer version, the set-aside table is read from a
cached list of the set-aside queries alone. What it shows is what a page without any cache
shows, and a new answer or ruling is on the next view, never an old rendering."""

import re

import pytest

from annotation.batches import views
from annotation.models import WorkerFlag
from annotation.quality.selectors import worker_quality
from annotation.quality.services.adjudication import adjudicate
from annotation.results.selectors import agreement as agreement_selectors
from annotation.results.selectors import labels as results
from platforms.inhouse.services.handout import next_assignment
from platforms.inhouse.services.hit_page import submit_local_assignment
from tests.annotation.conftest import answers_for, make_batch

NO_CACHE = {"BACKEND": "django.core.cache.backends.dummy.DummyCache"}


def page(client, url):
    answer = client.get(url)
    assert answer.status_code == 200
    html = re.sub(r'name="csrfmiddlewaretoken" value="[^"]+"', "", answer.content.decode())
    return re.sub(r'"X-CSRFToken": "[^"]+"', "", html)


def uncached(client, url, settings):
    kept = settings.CACHES
    settings.CACHES = kept | {"results": NO_CACHE}
    try:
        return page(client, url)
    finally:
        settings.CACHES = kept


@pytest.fixture
def batch(query_set, annotators, settings):
    """Three answers wanted per query; two annotators disagree on 101 and 105 (both set aside)."""
    from annotation import services

    settings.AGREEMENT_BOOTSTRAP_RESAMPLES = 10
    batch = make_batch(query_set, "cached", assignments_per_query=3)
    services.publish_batch(batch)
    for index, user in enumerate(annotators[:2]):
        while (assignment := next_assignment(user, batch)) is not None:
            override = {"101": "f", "105": "m"} if index == 1 else None
            submit_local_assignment(assignment, answers_for(assignment, override=override))
    return batch


def test_the_page_equals_the_page_without_a_cache_and_follows_every_change(
    batch, annotators, researcher, client, settings
):
    client.force_login(researcher)
    url = f"/annotation/batches/{batch.name}/agreement/"
    first = page(client, url)
    assert page(client, url) == first == uncached(client, url, settings)  # kept, and the same
    assert 'id="set-aside-count">2<' in first and ">105</a>" in first

    # A ruling: 101 leaves the set-aside table and the count, at once.
    adjudicate(batch, "101", "n", "clearly not about a gender", researcher)
    ruled = page(client, url)
    assert ruled != first and ruled == uncached(client, url, settings)
    table = ruled.split('<table id="set-aside">')[1].split("</table>")[0]
    assert 'id="set-aside-count">1<' in ruled and ">101</a>" not in table and ">105</a>" in table

    # A third annotator's answers: 105 has a majority now; every figure moves with them.
    while (assignment := next_assignment(annotators[2], batch)) is not None:
        submit_local_assignment(assignment, answers_for(assignment))
    answered = page(client, url)
    assert answered == uncached(client, url, settings)
    assert "No judged query was set aside." in answered


def test_a_flag_is_shown_at_once_although_no_answer_changed(batch, researcher, client):
    """Who is blocked or flagged is read at each view: a block is not an answer, the version stays."""
    client.force_login(researcher)
    url = f"/annotation/batches/{batch.name}/agreement/"
    version = results.answers_version(batch)
    assert "Blocked:" not in page(client, url)
    worker = batch.hits.first().assignments.first().worker
    WorkerFlag.objects.create(batch=batch, worker=worker, level="block", reason="too fast")
    assert results.answers_version(batch) == version
    shown = page(client, url)
    assert "<strong>Blocked:</strong> too fast" in shown and "<td>yes</td>" not in shown
    worker.blocked = True
    worker.save(update_fields=["blocked"])
    assert results.answers_version(batch) == version
    assert "<td>yes</td>" in page(client, url)
    assert worker_quality(batch) == views._worker_quality(
        batch, results.BatchAnswers(batch), agreement_selectors.agreement(batch, bootstrap=0)
    )


def test_set_aside_rows_are_the_set_aside_queries_of_the_results(batch, researcher):
    expected = [
        {"qid": r["qid"], "query": r["query"], "counts": r["counts"], "dawid_skene": r["dawid_skene"]}
        for r in results.query_results(batch)
        if r["label"] is None and r["votes"]
    ]
    assert [r["qid"] for r in expected] == ["101", "105"]
    assert agreement_selectors.set_aside_rows(batch) == expected
    adjudicate(batch, "105", "m", "the query names a man", researcher)
    assert [r["qid"] for r in agreement_selectors.set_aside_rows(batch)] == ["101"]


def test_the_review_queue_reads_its_kept_rows_as_the_whole_list_would(batch, researcher, client, settings):
    """The queue keeps only the queries with a status; a walk from a query without one (103, between
    the disputed 101 and 105) still goes on in batch order, and such a query is still shown."""
    client.force_login(researcher)
    review = f"/annotation/batches/{batch.name}/review/"
    assert client.get(review + "?status=disputed&after=103")["Location"].endswith("qid=105")
    assert client.get(review + "?status=disputed&after=106")["Location"].endswith("qid=101")  # round again
    for query in ("?status=disputed", "?status=disputed&qid=103", "?status=settled"):
        shown = page(client, review + query)
        assert shown == uncached(client, review + query, settings)
    assert "103" in page(client, review + "?status=disputed&qid=103")
    adjudicate(batch, "105", "m", "the query names a man", researcher)
    assert client.get(review + "?status=disputed&after=103")["Location"].endswith("qid=101")
    assert client.get(review + "?status=settled&after=101")["Location"].endswith("qid=105")


def test_a_new_number_of_resamples_is_shown_at_once(batch, researcher, client, settings):
    """The kept figures name the interval's resamples: a deployment that changes the setting shows its interval."""
    client.force_login(researcher)
    url = f"/annotation/batches/{batch.name}/agreement/"
    assert "(10 bootstrap resamples)" in page(client, url)
    settings.AGREEMENT_BOOTSTRAP_RESAMPLES = 20
    shown = page(client, url)
    assert "(20 bootstrap resamples)" in shown and shown == uncached(client, url, settings)
