"""core.web.paging: long tables searched and paged on the server, old or bad page numbers forgiven."""

from django.test import RequestFactory

from core.web.paging import ROWS_PER_PAGE, table_page

ROWS = [{"qid": str(i), "query": f"query number {i}"} for i in range(1, 121)]


def page(**params):
    return table_page(RequestFactory().get("/pool/", params), ROWS, lambda row: f"{row['qid']} {row['query']}")


def test_first_page_by_default_with_links_onwards():
    table = page()
    assert table.total == 120 and table.query == ""
    assert [row["qid"] for row in table.rows] == [str(i) for i in range(1, ROWS_PER_PAGE + 1)]
    assert table.previous_link is None and table.next_link == "?page=2"


def test_out_of_range_and_malformed_pages_show_the_nearest_page():
    last = page(page="99")
    assert last.page.number == 3 and last.rows[-1]["qid"] == "120" and last.next_link is None
    assert page(page="two").page.number == 1


def test_search_is_case_insensitive_and_keeps_the_query_in_links():
    table = table_page(
        RequestFactory().get("/pool/", {"q": "  NUMBER 1  "}),
        ROWS,
        lambda row: f"{row['qid']} {row['query']}",
        per_page=5,
    )
    assert table.query == "NUMBER 1" and table.total == 120  # total: before the search
    assert table.page.paginator.count == 1 + 10 + 21  # 1, 10-19, 100-120
    assert table.next_link == "?page=2&q=NUMBER+1"


def test_a_search_finding_nothing_is_one_empty_page():
    table = page(q="absent")
    assert table.rows == [] and table.page.number == 1 and table.next_link is None


def test_sort_orders_the_whole_list_before_paging_and_links_keep_it():
    keys = {"qid": lambda row: int(row["qid"])}
    table = table_page(RequestFactory().get("/pool/", {"sort": "-qid"}), ROWS, str, per_page=5, sort_keys=keys)
    # The first page of a descending sort holds the largest of all 120 rows, not of the first page.
    assert [row["qid"] for row in table.rows] == ["120", "119", "118", "117", "116"]
    assert table.next_link == "?page=2&sort=-qid"
    assert table.sort_links["qid"] == {"url": "?sort=qid", "aria": "descending"}
    second = table_page(
        RequestFactory().get("/pool/", {"sort": "-qid", "page": "2"}), ROWS, str, per_page=5, sort_keys=keys
    )
    assert [row["qid"] for row in second.rows] == ["115", "114", "113", "112", "111"]
    ascending = table_page(RequestFactory().get("/pool/", {"sort": "qid"}), ROWS, str, per_page=5, sort_keys=keys)
    assert ascending.sort_links["qid"] == {"url": "?sort=-qid", "aria": "ascending"}


def test_an_unknown_sort_keeps_the_rows_own_order():
    table = table_page(RequestFactory().get("/pool/", {"sort": "rab"}), ROWS, str, per_page=5, sort_keys={})
    assert table.rows == ROWS[:5] and table.sort == "" and table.next_link == "?page=2"
