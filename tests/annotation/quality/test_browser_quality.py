"""The quality loop in a real browser: a researcher settles a disputed query; an annotator learns a wrong gold answer."""

import json

import pytest

from annotation import services
from annotation.crowd.services.batches import read_gold_file
from annotation.exports.services import export_queries
from annotation.models import Adjudication
from platforms.inhouse.services.annotators import create_annotator
from platforms.inhouse.services.handout import next_assignment
from platforms.inhouse.services.hit_page import submit_local_assignment
from tests.annotation.conftest import TRUTH, answers_for

KEYS = {"n": "1", "f": "2", "m": "3", "o": "4"}


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_researcher_adjudicates_a_disputed_query_and_the_export_marks_it(
    local_batch, annotators, researcher, page, login, tmp_path
):
    # 104 gets Other from one annotator and Female from the other: disputed, set aside.
    for user, override in zip(annotators[:2], [{}, {"104": "f"}], strict=True):
        while (assignment := next_assignment(user, local_batch)) is not None:
            submit_local_assignment(assignment, answers_for(assignment, override=override))

    login(researcher.username)
    page.goto(f"/annotation/batches/{local_batch.name}/queries/104/")
    assert page.locator("#majority").inner_text() == "disputed"
    assert "set aside in exports" in page.locator("#adjudication").inner_text()
    page.get_by_role("radio", name="Other or multiple genders", exact=True).check()
    page.get_by_label("Reason").fill("compares boys and girls")
    with page.expect_navigation():
        page.get_by_role("button", name="Adjudicate").click()

    assert "Query 104 adjudicated as Other or multiple genders." in page.locator(".messages").inner_text()
    ruling = page.locator("#adjudication").inner_text()
    assert (
        "Adjudicated as Other or multiple genders (o) by researcher" in ruling and "compares boys and girls" in ruling
    )
    assert Adjudication.objects.get().decided_by == researcher

    export_queries(local_batch, "all", tmp_path / "all.jsonl", "jsonl")
    rows = {r["qid"]: r for r in map(json.loads, (tmp_path / "all.jsonl").read_text().splitlines())}
    assert {qid: r["label"] for qid, r in rows.items()} == TRUTH
    assert [qid for qid, r in rows.items() if r["adjudicated"]] == ["104"]
    assert "1 of 6 labelled queries were settled by a researcher" in (tmp_path / "all.jsonl.md").read_text()


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_in_house_annotator_sees_which_gold_answer_was_wrong(query_set, page, login, tmp_path):
    gold_file = tmp_path / "gold.tsv"
    gold_file.write_text("g1\twhat is a mother\tf\n")
    batch = services.create_batch(
        "gold",
        services.BatchSettings(queries_per_hit=3, assignments_per_query=1, gold_per_hit=1),
        query_set=query_set,
        gold=read_gold_file(gold_file),
    )
    services.publish_batch(batch)
    create_annotator("ann", password="pw-secret-123")
    login("ann")

    page.goto("/annotation/next/")
    hit = batch.hits.get(position=1)
    for hq in hit.hit_queries.select_related("batch_query").order_by("position"):
        bq = hq.batch_query
        page.keyboard.press(KEYS["m"] if bq.is_gold else KEYS[TRUTH[bq.qid]])  # gold answered wrongly
    with page.expect_navigation():
        page.get_by_role("button", name="Submit").click()

    message = page.locator(".messages").inner_text()
    assert "This HIT will not count" in message
    assert '"what is a mother" is Female, you answered Male' in message
    # The annotator carries on from there.
    with page.expect_navigation():
        page.get_by_role("link", name="Start annotating").click()
    assert "/annotation/assignments/" in page.url
