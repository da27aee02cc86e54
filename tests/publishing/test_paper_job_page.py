"""The paper bundle's job page downloads the zip once, by the researcher's click, never by itself.

The page polls its live fragment (htmx ``hx-trigger="every 2s"``). htmx's rules, as its
documentation states them and ``static/vendor/htmx.min.js`` applies them: a response with
``HX-Redirect`` sets ``location.href`` and is NOT swapped in (the polling element stays and polls
again); any other 200 response replaces the element (``hx-swap="outerHTML"``), so a fragment
without ``hx-get`` stops the polling. A redirect to an attachment leaves the browser on the page:
the test plays those rules over the real views and counts the zips served.
"""

from __future__ import annotations

import io
import re

import pytest
from django.core.management import call_command

from core.models import Job

QRELS = "1 0 d1 2\n1 0 d3 0\n2 0 d4 1\n3 0 d2 1\n"
POLLS = 6


@pytest.fixture
def report(world, db):
    path = world / "qrels.txt"
    path.write_text(QRELS)
    call_command("import_qrels", str(path), name="judged", queries="q", collection="tiny", verbosity=0)
    call_command(
        "bias_report", queries="q", runs="a,c", cutoffs="1,2", qrels="judged", measures="MRR@2,nDCG@2",
        bootstrap=20, name="paperish", verbosity=0, stdout=io.StringIO(),
    )  # fmt: skip


def _polling(html: str) -> str | None:
    """The URL the fragment polls (its ``hx-get`` with an ``every`` trigger), None if it polls no more."""
    match = re.search(r'<div id="job-progress" hx-get="([^"]+)" hx-trigger="every [^"]+"', html)
    return match.group(1) if match else None


def _browse(client, html: str) -> tuple[str, int]:
    """htmx's polling as the browser runs it, ``POLLS`` times at most: (the page's fragment, zips served)."""
    zips = 0
    for _ in range(POLLS):
        url = _polling(html)
        if url is None:
            break
        response = client.get(url, HTTP_HX_REQUEST="true")
        assert response.status_code == 200
        if response.has_header("HX-Redirect"):  # location.href = ...; no swap
            target = client.get(response["HX-Redirect"])
            if "attachment" in target.get("Content-Disposition", ""):
                zips += 1  # a download: the browser stays on the page, which polls on
                continue
            return target.content.decode(), zips  # a page: the browser left
        html = response.content.decode()  # swapped in (outerHTML)
    return html, zips


def test_the_poller_reads_what_the_template_writes():
    """The helper can fail: a polling fragment is seen as one, a finished one is not."""
    assert _polling('<div id="job-progress" hx-get="/jobs/3/progress/" hx-trigger="every 2s" hx-swap="outerHTML">')
    assert _polling('<div id="job-progress">') is None


@pytest.mark.slow
@pytest.mark.django_db
def test_the_job_page_links_the_zip_once_and_never_downloads_it_again(
    report, client, django_user_model, django_capture_on_commit_callbacks
):
    client.force_login(django_user_model.objects.create_user("res", password="pw-secret-123", is_staff=True))
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        started = client.get("/metrics/paperish/paper.zip")  # no bundle yet: its job starts
    job = Job.objects.get(kind="metrics.paper")
    assert started.status_code == 302 and started["Location"] == f"/jobs/{job.pk}/"
    page = client.get(started["Location"]).content.decode()
    assert _polling(page)  # pending: the page polls
    assert "paper.zip" not in page

    for callback in callbacks:  # the worker builds the bundle
        callback()
    job.refresh_from_db()
    assert job.status == Job.Status.DONE, job.message

    fragment, zips = _browse(client, page)
    assert zips == 0  # the page never downloaded the zip by itself (it did every 2 s: issue 54)
    assert _polling(fragment) is None  # and it polls no more
    links = re.findall(r'<a [^>]*href="(/metrics/paperish/paper\.zip)"[^>]*>', fragment)
    assert links == ["/metrics/paperish/paper.zip"]  # one link
    assert 'download="paperish-paper.zip"' in fragment
    download = client.get(links[0])  # the researcher's click: the kept zip
    assert download.status_code == 200 and "attachment" in download["Content-Disposition"]
    assert b"".join(download.streaming_content)[:2] == b"PK"

    # Opened again later, the finished job's page is the same link, with nothing polling.
    again = client.get(started["Location"]).content.decode()
    assert _polling(again) is None and again.count('href="/metrics/paperish/paper.zip"') == 1


@pytest.mark.django_db
def test_a_job_whose_result_is_a_page_still_leads_on_to_it(client, django_user_model):
    """Only a download is a link: a result page is still opened by the page itself (``HX-Redirect``)."""
    from core.jobs import create_job

    client.force_login(django_user_model.objects.create_user("res", password="pw-secret-123", is_staff=True))
    job = create_job("import", "Import collection big from big.tsv")
    page = client.get(f"/jobs/{job.pk}/").content.decode()
    Job.objects.filter(pk=job.pk).update(status=Job.Status.DONE, result={"url": "/annotation/"})
    response = client.get(_polling(page), HTTP_HX_REQUEST="true")
    assert response["HX-Redirect"] == "/annotation/"
