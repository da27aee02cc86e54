"""The agreement page's per-query table (set-aside queries) is searched and paged on the server."""

import pytest

from annotation import services
from annotation.results.selectors.agreement import agreement
from platforms.inhouse.services.handout import next_assignment
from platforms.inhouse.services.hit_page import submit_local_assignment
from tests.annotation.conftest import answers_for


@pytest.fixture
def split(local_batch, annotators):
    """Two annotators who disagree on 101 and 105: both set aside (one vote each way)."""
    for index, user in enumerate(annotators[:2]):
        while (assignment := next_assignment(user, local_batch)) is not None:
            override = {"101": "f", "105": "m"} if index == 1 else None
            submit_local_assignment(assignment, answers_for(assignment, override=override))
    return local_batch


def set_aside(html: str) -> str:
    """The set-aside table and its pager (the Dawid-Skene tables show query texts too: issue 45)."""
    return html.split('id="set-aside"')[1].split("</table>")[0]


def test_set_aside_table_pages_and_searches(split, researcher, client, monkeypatch, settings):
    settings.AGREEMENT_BOOTSTRAP_RESAMPLES = 10
    monkeypatch.setattr("core.web.paging.ROWS_PER_PAGE", 1)
    client.force_login(researcher)
    url = "/annotation/batches/b1/agreement/"
    page = client.get(url).content.decode()
    first = set_aside(page)
    assert "what is a synapse" in first and "how to boil an egg" not in first and "page 1 of 2" in page
    second = set_aside(client.get(url + "?page=2").content.decode())
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


def test_tables_name_labels_in_full_sort_qids_naturally_and_draw_each_bar_from_its_value(
    query_set, annotators, researcher, client, settings
):
    """qids 2 and 10 set aside: 2 comes first in every table (string order would put 10 first)."""
    from annotation.results.selectors.labels import BatchAnswers
    from genderbias.labels import LABEL_NAMES
    from pooling.models import QuerySet
    from pooling.services import create_query_set
    from tests.annotation.conftest import make_batch

    settings.AGREEMENT_BOOTSTRAP_RESAMPLES = 0
    numbered = create_query_set(
        "numbered", [("10", "how to boil an egg"), ("2", "what is a synapse"), ("3", "what is a queen")],
        origin=QuerySet.Origin.IMPORTED,
    )  # fmt: skip
    batch = make_batch(numbered, "nums", queries_per_hit=3)
    services.publish_batch(batch)
    truth = {"10": "n", "2": "n", "3": "f"}
    for index, user in enumerate(annotators[:2]):
        assignment = next_assignment(user, batch)
        override = {"10": "f", "2": "m"} if index == 1 else None
        submit_local_assignment(assignment, answers_for(assignment, truth=truth, override=override))
    client.force_login(researcher)
    html = client.get(f"/annotation/batches/{batch.name}/agreement/").content.decode()
    set_aside = html.split('id="set-aside"')[1].split("</table>")[0]
    assert set_aside.index(">2</a>") < set_aside.index(">10</a>")
    disagreements = html.split('id="method-disagreements"')[1].split("</table>")[0]
    if ">10</a>" in disagreements and ">2</a>" in disagreements:
        assert disagreements.index(">2</a>") < disagreements.index(">10</a>")
    # Full names, never the stored codes, in the Dawid-Skene tables and the set-aside table.
    confusion = html.split('id="worker-confusion"')[1]
    assert '<th class="num">Non-gendered</th>' in confusion and '<th class="num">n</th>' not in confusion
    assert "<td>n</td>" not in html and "<td>f</td>" not in html and "<td>m</td>" not in html
    ds = BatchAnswers(batch).dawid_skene.labels.to_dict()
    row_of_2 = set_aside.split(">2</a>")[1].split("</tr>")[0]
    assert row_of_2.endswith(f"<td>{LABEL_NAMES[ds['2']]}</td>")
    # Each bar's width is the value it stands beside (0..1 as 0..100%), with a legend.
    report = agreement(batch, bootstrap=0)
    table = html.split('id="category-alpha"')[1].split("</table>")[0]
    for code, alpha in report["per_category_alpha"].items():
        ac1 = report["per_category_ac1"][code]
        width = round(min(1.0, max(0.0, alpha or 0.0)) * 100)
        assert f'class="bar alpha-bar" style="width: {width}%"' in table
        width = round(min(1.0, max(0.0, ac1 or 0.0)) * 100)
        assert f'class="bar ac1-bar" style="width: {width}%"' in table
    assert 'id="category-alpha-legend"' in html


def test_sorting_the_set_aside_table_sorts_all_its_rows(split, researcher, client, monkeypatch, settings):
    settings.AGREEMENT_BOOTSTRAP_RESAMPLES = 0
    monkeypatch.setattr("core.web.paging.ROWS_PER_PAGE", 1)
    client.force_login(researcher)
    url = "/annotation/batches/b1/agreement/"
    # 101 (synapse) and 105 (egg) are set aside; by query text descending, the egg is not first.
    page = client.get(url + "?sort=-query").content.decode()
    first = set_aside(page)
    assert "what is a synapse" in first and "how to boil an egg" not in first
    assert "?page=2&amp;sort=-query" in page
    second = client.get(url + "?sort=-query&page=2").content.decode()
    assert "how to boil an egg" in second
    assert "what is a synapse" in client.get(url + "?sort=qid").content.decode()
    assert "how to boil an egg" in client.get(url + "?sort=-qid").content.decode()
