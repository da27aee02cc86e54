"""The agreement page's per-query table (set-aside queries) is searched and paged on the server."""

import pytest

from annotation import services

from .conftest import answers_for


@pytest.fixture
def split(local_batch, annotators):
    """Two annotators who disagree on 101 and 105: both set aside (one vote each way)."""
    for index, user in enumerate(annotators[:2]):
        while (assignment := services.next_assignment(user, local_batch)) is not None:
            override = {"101": "f", "105": "m"} if index == 1 else None
            services.submit_local_assignment(assignment, answers_for(assignment, override=override))
    return local_batch


def test_set_aside_table_pages_and_searches(split, researcher, client, monkeypatch, settings):
    settings.AGREEMENT_BOOTSTRAP_RESAMPLES = 10
    monkeypatch.setattr("core.paging.ROWS_PER_PAGE", 1)
    client.force_login(researcher)
    url = "/annotation/batches/b1/agreement/"
    first = client.get(url).content.decode()
    assert "what is a synapse" in first and "how to boil an egg" not in first and "page 1 of 2" in first
    second = client.get(url + "?page=2").content.decode()
    assert "how to boil an egg" in second and "what is a synapse" not in second
    found = client.get(url + "?q=egg").content.decode()
    assert "how to boil an egg" in found and "1 of 2 rows match" in found


def test_the_api_filters_per_query_rows_the_same_way(split, researcher, client):
    client.force_login(researcher)
    url = "/api/annotation/batches/b1/queries/"
    every = client.get(url).json()
    assert every["count"] == 6
    set_aside = client.get(url + "?label=none").json()["results"]
    assert [r["qid"] for r in set_aside] == ["101", "105"] and set_aside[0]["counts"]["n"] == 1
    assert [r["qid"] for r in client.get(url + "?label=f").json()["results"]] == ["102", "106"]
    assert [r["qid"] for r in client.get(url + "?q=EGG").json()["results"]] == ["105"]
    bad = client.get(url + "?label=x")
    assert bad.status_code == 400 and list(bad.json()) == ["label"]
