"""The review queue: a researcher walks a batch's disputed queries one by one and rules on each.

Filters (disputed, settled, escalated, gold-failed), rulings through the adjudication service
(with htmx: the panel and the counts at once), researchers only, and a real browser walking
three disputed queries from the keyboard.
"""

from decimal import Decimal

import pytest

from annotation.models import Adjudication, Escalation
from annotation.quality.services.adjudication import adjudicate
from annotation.results.review import next_query, review_rows, status_counts
from annotation.results.selectors.labels import query_results
from platforms.inhouse.services.handout import next_assignment
from platforms.inhouse.services.hit_page import submit_local_assignment
from tests.annotation.conftest import answers_for

URL = "/annotation/batches/b1/review/"


@pytest.fixture
def disputed3(local_batch, annotators):
    """Two votes per query; ann-b disagrees with ann-a on 101, 103 and 104: those three are disputed."""
    for user, override in zip(annotators[:2], [{}, {"101": "f", "103": "n", "104": "f"}], strict=True):
        while (assignment := next_assignment(user, local_batch)) is not None:
            submit_local_assignment(assignment, answers_for(assignment, override=override))
    return local_batch


def _shown(response):
    context = response.context
    return {
        "qid": context["current"]["qid"] if context["current"] else None,
        "in_filter": context["in_filter"],
        "counts": {f["status"]: f["count"] for f in context["filters"]},
    }


# --- the pure walk ---


def _row(qid, adjudicated=False, crowd_label=None, votes=1):
    return {"qid": qid, "adjudicated": adjudicated, "crowd_label": crowd_label, "votes": [{}] * votes}


def test_statuses_and_the_walk_wrap_round_and_never_return_the_current_query():
    rows = review_rows(
        [_row("a"), _row("b", crowd_label="f"), _row("c", adjudicated=True), _row("d"), _row("e", votes=0)],
        escalated={"b", "d"},
        gold_failed={"a"},
    )
    assert [r["statuses"] for r in rows] == [
        ["disputed", "gold-failed"],
        ["escalated"],
        ["settled"],
        ["disputed", "escalated"],
        [],  # no votes yet: nothing to rule on
    ]
    assert status_counts(rows) == {"disputed": 2, "settled": 1, "escalated": 2, "gold-failed": 1}
    assert next_query(rows, "disputed")["qid"] == "a"
    assert next_query(rows, "disputed", after="a")["qid"] == "d"
    assert next_query(rows, "disputed", after="d")["qid"] == "a"  # wraps
    assert next_query(rows, "disputed", after="c")["qid"] == "d"  # from a query outside the filter
    assert next_query(rows, "settled", after="c") is None  # the only one is the current one
    with pytest.raises(ValueError, match="unknown status"):
        next_query(rows, "bogus")


# --- the page: one test per filter ---


def test_disputed_filter_starts_at_the_first_disputed_query(disputed3, researcher, client):
    client.force_login(researcher)
    response = client.get(URL)
    assert response.status_code == 200
    assert _shown(response) == {
        "qid": "101",
        "in_filter": 3,
        "counts": {"disputed": 3, "settled": 0, "escalated": 0, "gold-failed": 0},
    }
    html = response.content.decode()
    assert "what is a synapse" in html and 'aria-keyshortcuts="2"' in html
    assert 'data-status="disputed" aria-current="page"' in html


def test_settled_filter_lists_rulings_and_disputed_no_longer_does(disputed3, researcher, client):
    adjudicate(disputed3, "103", "m", "about men", researcher)
    client.force_login(researcher)
    shown = _shown(client.get(URL, {"status": "settled"}))
    assert shown == {
        "qid": "103",
        "in_filter": 1,
        "counts": {"disputed": 2, "settled": 1, "escalated": 0, "gold-failed": 0},
    }
    assert [_shown(client.get(URL, {"status": "disputed", "qid": q}))["qid"] for q in ("101", "104")] == ["101", "104"]
    response = client.get(URL, {"status": "settled", "qid": "103"})
    assert "Settled as <strong>Male</strong> by researcher" in response.content.decode()


def test_escalated_filter_lists_the_queries_escalations_were_for(disputed3, researcher, client):
    hit = disputed3.hits.get(position=2)
    Escalation.objects.create(
        batch=disputed3, hit=hit, added=1, assignments_before=2, disputed=["104"], cost=Decimal("0.06")
    )
    client.force_login(researcher)
    shown = _shown(client.get(URL, {"status": "escalated"}))
    assert shown["qid"] == "104" and shown["in_filter"] == 1 and shown["counts"]["escalated"] == 1


def test_gold_failed_filter_lists_queries_with_answers_that_do_not_count(gold_batch, annotators, researcher, client):
    assignment = next_assignment(annotators[0], gold_batch)
    submit_local_assignment(assignment, answers_for(assignment, override={"g1": "n"}))  # fails gold
    failed = {hq.batch_query.qid for hq in assignment.hit.hit_queries.select_related("batch_query")} - {"g1", "g2"}
    client.force_login(researcher)
    url = "/annotation/batches/gold/review/"
    shown = _shown(client.get(url, {"status": "gold-failed"}))
    assert shown["in_filter"] == len(failed) == 3
    assert shown["qid"] == min(failed, key=lambda q: int(q))
    assert shown["counts"]["disputed"] == 0  # their answers are not counted: no votes, nothing to rule on
    seen = [shown["qid"]]
    while len(seen) < 3:
        response = client.get(url, {"status": "gold-failed", "after": seen[-1]})
        seen.append(_shown(client.get(response["Location"]))["qid"])
    assert set(seen) == failed


def test_unknown_filter_or_query_is_404(disputed3, researcher, client):
    client.force_login(researcher)
    assert client.get(URL, {"status": "bogus"}).status_code == 404
    assert client.get(URL, {"qid": "nope"}).status_code == 404


def test_after_a_ruling_next_goes_to_the_next_disputed_query_and_wraps(disputed3, researcher, client):
    client.force_login(researcher)
    response = client.post(URL, {"qid": "101", "status": "disputed", "label": "n", "reason": "no person"})
    assert response.status_code == 302 and response["Location"] == f"{URL}?status=disputed&qid=101"
    assert Adjudication.objects.get().reason == "no person"
    assert client.get(URL, {"status": "disputed", "after": "101"})["Location"].endswith("qid=103")
    assert client.get(URL, {"status": "disputed", "after": "104"})["Location"].endswith("qid=103")  # wraps past 101
    for qid in ("103", "104"):
        client.post(URL, {"qid": qid, "status": "disputed", "label": "o", "reason": "r"})
    response = client.get(client.get(URL, {"status": "disputed", "after": "104"})["Location"])
    assert _shown(response)["qid"] is None and "No disputed query left" in response.content.decode()


def test_an_htmx_ruling_answers_with_the_panel_and_the_counts_out_of_band(disputed3, researcher, client):
    client.force_login(researcher)
    response = client.post(
        URL, {"qid": "101", "status": "disputed", "label": "2", "reason": "x"}, headers={"HX-Request": "true"}
    )
    assert response.status_code == 400  # "2" is a key, not a label
    assert 'id="review-errors"' in response.content.decode() and not Adjudication.objects.exists()
    response = client.post(
        URL, {"qid": "101", "status": "disputed", "label": "f", "reason": "  "}, headers={"HX-Request": "true"}
    )
    assert response.status_code == 400 and not Adjudication.objects.exists()

    response = client.post(
        URL, {"qid": "101", "status": "disputed", "label": "f", "reason": "girls"}, headers={"HX-Request": "true"}
    )
    html = response.content.decode()
    assert response.status_code == 200
    assert 'id="review-ruled"' in html and "Ruled <strong>Female</strong>: girls" in html
    assert 'id="review-counts" class="review-filters" aria-label="Filter by status" hx-swap-oob="true"' in html
    assert _shown(response)["counts"] == {"disputed": 2, "settled": 1, "escalated": 0, "gold-failed": 0}
    assert f'href="{URL}?status=disputed&amp;after=101"' in html
    ruling = Adjudication.objects.get()
    assert (ruling.batch_query.qid, ruling.label, ruling.reason, ruling.decided_by) == ("101", "f", "girls", researcher)


def test_annotators_get_403_and_rule_on_nothing(disputed3, annotators, client):
    client.force_login(annotators[0])
    assert client.get(URL).status_code == 403
    assert client.get(URL, {"status": "settled"}).status_code == 403
    response = client.post(URL, {"qid": "101", "status": "disputed", "label": "f", "reason": "x"})
    assert response.status_code == 403 and not Adjudication.objects.exists()


def test_visitors_are_sent_to_log_in(disputed3, client):
    response = client.get(URL)
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


def test_batch_and_agreement_pages_link_to_the_review(disputed3, researcher, client):
    client.force_login(researcher)
    for page in ("/annotation/batches/b1/", "/annotation/batches/b1/agreement/"):
        assert f'href="{URL}"' in client.get(page).content.decode()


# --- a real browser, keyboard only ---


def _count(page, status):
    return int(page.locator(f'#review-counts [data-status="{status}"] .count').inner_text())


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
def test_keyboard_walk_rules_skips_and_rules_with_live_counts(disputed3, researcher, page, login):
    page.set_viewport_size({"width": 1280, "height": 900})
    login(researcher.username)
    page.goto(URL)
    assert page.locator("#review-qid").inner_text() == "101"
    assert (_count(page, "disputed"), _count(page, "settled")) == (3, 0)

    # Rule 101: key 1 chooses Non-gendered and moves to the reason; Enter rules (htmx, no reload).
    page.keyboard.press("1")
    assert page.locator("#review-reason").evaluate("el => el === document.activeElement")
    page.keyboard.type("no person in it")
    page.keyboard.press("Enter")
    page.locator("#review-ruled").wait_for()
    assert "Non-gendered" in page.locator("#review-ruled").inner_text()
    assert (_count(page, "disputed"), _count(page, "settled")) == (2, 1)
    assert page.locator("#review-next").evaluate("el => el === document.activeElement")
    page.screenshot(path="/tmp/ux/review-1280-ruled.png", full_page=True)

    # n: the next disputed query; s: skip it.
    page.keyboard.press("n")
    page.wait_for_url("**qid=103")
    assert page.locator("#review-qid").inner_text() == "103"
    page.keyboard.press("s")
    page.wait_for_url("**qid=104")
    assert page.locator("#review-qid").inner_text() == "104"
    page.screenshot(path="/tmp/ux/review-1280.png", full_page=True)

    # Rule 104 (Other), then n wraps round to the skipped 103, still disputed.
    page.keyboard.press("4")
    page.keyboard.type("compares boys and girls")
    page.keyboard.press("Enter")
    page.locator("#review-ruled").wait_for()
    assert (_count(page, "disputed"), _count(page, "settled")) == (1, 2)
    page.keyboard.press("n")
    page.wait_for_url("**qid=103")
    assert page.locator("#review-position").inner_text().startswith("Disputed query 1 of 1")

    rulings = {a.batch_query.qid: (a.label, a.reason) for a in Adjudication.objects.select_related("batch_query")}
    assert rulings == {"101": ("n", "no person in it"), "104": ("o", "compares boys and girls")}

    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        page.set_viewport_size({"width": 390, "height": 844})
        page.screenshot(path=f"/tmp/ux/review-390-{scheme}.png", full_page=True)
        assert page.evaluate("document.documentElement.scrollWidth") <= 390  # nothing wider than a phone
    page.set_viewport_size({"width": 1280, "height": 900})
    page.screenshot(path="/tmp/ux/review-1280-dark.png", full_page=True)


def test_the_panel_names_labels_in_full(disputed3, researcher, client):
    """The crowd's majority and Dawid-Skene's label by name (Female), never the stored code (f)."""
    from genderbias.labels import LABEL_NAMES

    client.force_login(researcher)
    settled = query_results(disputed3)
    labelled = next(r for r in settled if r["crowd_label"])
    html = client.get(URL, {"status": "disputed", "qid": labelled["qid"]}).content.decode()
    caption = html.split("<caption")[1].split("</caption>")[0]
    assert f"majority {LABEL_NAMES[labelled['crowd_label']]}" in caption
    assert f"Dawid–Skene {LABEL_NAMES[labelled['dawid_skene']]}" in caption
    disputed = client.get(URL).content.decode().split("<caption")[1].split("</caption>")[0]
    current = next(r for r in settled if r["qid"] == "101")
    assert f"Dawid–Skene {LABEL_NAMES[current['dawid_skene']]}" in disputed
    assert not any(f"Dawid–Skene {code} " in disputed or f"majority {code} " in disputed for code in "nfmo")
