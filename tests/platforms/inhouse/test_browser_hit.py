"""The HIT page in a real browser: an annotator answers with the keys 1-4 and submits."""

import pytest
from django.core.management import call_command

from annotation import services
from annotation.models import Judgment
from platforms.inhouse.services.annotators import create_annotator
from pooling.models import QuerySet
from tests.annotation.conftest import TRUTH, make_batch

KEYS = {"n": "1", "f": "2", "m": "3", "o": "4"}
NAMES = {"n": "Non-gendered", "f": "Female", "m": "Male", "o": "Other or multiple genders"}


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_annotator_answers_a_hit_with_keyboard_shortcuts(query_set, page, login):
    batch = make_batch(query_set, queries_per_hit=3, assignments_per_query=1)
    services.publish_batch(batch)
    create_annotator("ann", password="pw-secret-123")
    login("ann")

    page.goto("/annotation/next/")
    hit = batch.hits.get(position=1)
    queries = [hq.batch_query for hq in hit.hit_queries.select_related("batch_query").order_by("position")]
    for label in ("Non-gendered", "Female", "Male", "Other or multiple genders"):
        assert page.get_by_role("radio", name=label, exact=True).count() == 3

    # Submitting with nothing answered is stopped by the browser (every query is required).
    page.get_by_role("button", name="Submit").click()
    assert "/annotation/assignments/" in page.url
    assert not Judgment.objects.exists()

    for bq in queries:
        page.keyboard.press(KEYS[TRUTH[bq.qid]])
    for bq in queries:
        group = page.get_by_role("group", name=bq.text)
        assert group.get_by_role("radio", name=NAMES[TRUTH[bq.qid]], exact=True).is_checked()
    assert page.locator("#answered").inner_text() == "3 of 3 answered."
    # After the last answer the focus is on Submit: Enter sends the HIT.
    first_url = page.url
    with page.expect_navigation():
        page.keyboard.press("Enter")
    # The next HIT follows at once.
    assert page.url != first_url and "/annotation/assignments/" in page.url
    next_query = batch.hits.get(position=2).hit_queries.order_by("position").first().batch_query.text
    assert page.get_by_role("group", name=next_query, exact=True).count() == 1

    stored = dict(Judgment.objects.values_list("batch_query__qid", "label"))
    assert stored == {bq.qid: TRUTH[bq.qid] for bq in queries}


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_query_text_is_escaped_on_the_hit_page(page, login, tmp_path):
    path = tmp_path / "q.tsv"
    path.write_text("1\t<img src=x onerror=\"document.title='pwned'\"> what is a synapse\n")
    call_command("import_queries", str(path), name="evil", verbosity=0)
    batch = make_batch(QuerySet.objects.get(name="evil"), name="evil", assignments_per_query=1)
    services.publish_batch(batch)
    create_annotator("ann2", password="pw-secret-123")
    login("ann2")
    page.goto("/annotation/next/")
    group = page.get_by_role("group", name="<img src=x onerror=\"document.title='pwned'\"> what is a synapse")
    assert group.count() == 1
    assert page.locator("img").count() == 0 and page.title() != "pwned"
