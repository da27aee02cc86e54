"""The agreement page's set-aside table reads the one page it shows (issue 31): its default view
(no search, no order) reads the set-aside queries kept in pages, not the whole list; every page,
search and order shows what the page without any cache shows, and a ruling is on the next view."""

import pytest

from annotation.quality.services.adjudication import adjudicate
from annotation.results.selectors import agreement as results
from annotation.results.selectors.labels import BatchAnswers
from tests.annotation.conftest import disputed_batch
from tests.annotation.results.test_agreement_page_cache import page, uncached


@pytest.fixture
def batch(query_set, annotators, monkeypatch, settings):
    """Two rows a page; ann-b disagrees with ann-a on 101, 102, 104, 105 and 106: five set aside
    (three pages)."""
    settings.AGREEMENT_BOOTSTRAP_RESAMPLES = 10
    monkeypatch.setattr("core.web.paging.ROWS_PER_PAGE", 2)
    return disputed_batch(query_set, annotators, "pages")


def table(html: str) -> str:
    return html.split('<table id="set-aside">')[1].split("</table>")[0]


def test_kept_pages_slice_as_the_list_does(batch):
    every = results.set_aside_rows(batch)
    assert [r["qid"] for r in every] == ["101", "102", "104", "105", "106"]
    pages = results.SetAsidePages(batch, BatchAnswers(batch), 2)
    assert len(pages) == 5
    for start in range(-1, 7):
        for stop in range(start, 8):
            assert pages[start:stop] == every[start:stop], (start, stop)
    assert pages[3] == every[3] and pages[-1] == every[-1]


@pytest.mark.slow
def test_every_page_search_and_order_shows_what_the_page_without_a_cache_shows(batch, researcher, client, settings):
    client.force_login(researcher)
    url = f"/annotation/batches/{batch.name}/agreement/"
    queries = ["", "?page=2", "?page=3", "?page=9", "?page=x", "?q=age", "?q=age&page=2", "?sort=-qid", "?sort=bogus"]
    for query in queries:
        assert page(client, url + query) == uncached(client, url + query, settings), query
    first, third = page(client, url), page(client, url + "?page=3")
    assert ">101</a>" in table(first) and ">102</a>" in table(first) and ">104</a>" not in table(first)
    assert "page 1 of 3" in first and ">106</a>" in table(third) and "page 3 of 3" in third
    assert ">106</a>" in table(page(client, url + "?sort=-qid"))  # ordered over all rows, not one page

    adjudicate(batch, "102", "m", "the query names boys", researcher)
    ruled = page(client, url)
    assert ">102</a>" not in table(ruled) and ">104</a>" in table(ruled) and "page 1 of 2" in ruled
    for query in queries:
        assert page(client, url + query) == uncached(client, url + query, settings), query
