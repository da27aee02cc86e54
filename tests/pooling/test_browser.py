"""The pool page in a real browser: log in, open a pool, sort by a run's RaB (on the server), download."""

import pytest
from django.core.management import call_command


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_pool_page_sorts_by_rank_bias(world, page, login, django_user_model):
    call_command("pool", name="p", queries="q", runs="a,b", rank_cutoff=2, depth=5, verbosity=0)
    django_user_model.objects.create_user("researcher", password="pw-secret-123", is_staff=True)
    login("researcher")
    page.goto("/")
    with page.expect_navigation():
        page.get_by_role("link", name="p", exact=True).click()
    assert page.locator("#pool-size").inner_text() == "3"

    def first_qid() -> str:
        return page.locator("#queries tbody tr").first.locator("td").first.inner_text()

    # Run a's RaB@2: q1 = -ln4/2 (female-leaning), q2 = 0, q3 = 0. The server sorts the whole pool.
    with page.expect_navigation():
        page.locator("#queries thead").get_by_role("link", name="a", exact=True).click()
    assert "sort=run-0" in page.url
    assert first_qid() == "1"
    with page.expect_navigation():
        page.locator("#queries thead").get_by_role("link", name="a", exact=True).click()
    assert "sort=-run-0" in page.url
    assert first_qid() != "1"
    assert page.locator("th[aria-sort=descending]").count() == 1

    with page.expect_download() as download:
        page.get_by_role("link", name="Download TSV (qid, query)").click()
    assert download.value.suggested_filename == "p.tsv"
