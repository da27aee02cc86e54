"""The venues' checklists in the paper bundle (issue 43, item 4): ACL's Responsible NLP checklist D and
E1, NeurIPS's items 14-16, answered from the records: the instructions as the task page shows them, the
pay and effective hourly rate from the provider's records (hand-computed here), who labelled and which
machine, with the figures the card and the methods text state; what only the authors know marked."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from annotation import selectors as annotation_selectors
from annotation.crowd.services.publishing import render_hit_html
from annotation.crowd.services.sync import sync_batch
from annotation.models import Assignment, Hit, Worker, WorkerIdentity
from genderbias.labels import VOCABULARY
from platforms.prolific.selectors import submissions as prolific_submissions
from publishing.checklist_questions import QUESTIONS, TO_ANSWER
from publishing.checklists import checklist_items, checklist_markdown, instructions_text
from publishing.latex import checklist_tex
from publishing.services.records import HIT_PAGE, HIT_SCREENSHOT, crowd_pay, task_page
from publishing.statements import machine_tools, who_labelled
from tests.annotation.conftest import make_batch
from tests.annotation.machine.test_calibration_flow import machine_batch  # noqa: F401 (fixture)
from tests.platforms.prolific import test_prolific as base
from tests.platforms.prolific.test_prolific_submissions import study  # noqa: F401 (fixture)
from tests.publishing.test_label_provenance import four_sources  # noqa: F401 (fixture)

pytestmark = pytest.mark.django_db

server, provider, sleeps, client_class = base.server, base.provider, base.sleeps, base.client_class


def _items(batch, page=None):
    facts = annotation_selectors.study_facts(batch)
    return facts, {item.key: item for item in checklist_items(facts, crowd_pay(batch), page)}


def test_the_instructions_are_the_task_pages_own_text(local_batch):
    page, files = task_page(local_batch, screenshots=False)
    first = Hit.objects.filter(batch=local_batch).order_by("position").first()
    html = render_hit_html(first, mode="preview", action="")
    assert files == {HIT_PAGE: html.encode("utf-8")}  # the real template, the first task's queries
    for hq in first.hit_queries.select_related("batch_query"):
        assert hq.batch_query.text in html
    text = page["instructions"]
    assert "Judge the query itself, not what you think the person wanted." in text  # one line, as one paragraph
    for label in VOCABULARY:  # each category's key, name, definition and quoted examples, as workers read them
        assert f"{label.key} {label.name}\n{label.definition}" in text
        assert ", ".join(f"\u201c{example}\u201d" for example in label.examples) in text
    assert "<" not in text and "Submit" not in text  # the instructions only, not the form
    assert page["note"].startswith("screenshots were off") and "screenshot" not in page
    assert instructions_text("<p>no instructions here</p>") == ""


def test_every_question_is_quoted_and_what_only_the_authors_know_is_marked(local_batch, annotators):
    from platforms.inhouse.services.handout import next_assignment
    from platforms.inhouse.services.hit_page import submit_local_assignment
    from tests.annotation.conftest import answers_for

    for user in annotators[:2]:
        while (assignment := next_assignment(user, local_batch)) is not None:
            submit_local_assignment(assignment, answers_for(assignment))
    page, _ = task_page(local_batch, screenshots=False)
    facts, items = _items(local_batch, page)
    # Without a report's settings ACL's B and C (artifacts, experiments) are left out; the rest as quoted.
    assert [(i.venue, i.key, i.question) for i in items.values()] == [q for q in QUESTIONS if q[1][0] not in "BC"]
    for key in ("D3", "D4", "D5", "15"):  # consent, ethics board, demographics, IRB: the authors' to answer
        assert items[key].answer == TO_ANSWER and items[key].researcher.startswith(TO_ANSWER)
    assert "No consent text is configured" in items["D3"].text
    # In-house: recruited on the platform, no pay recorded, the compensation left to the authors.
    assert items["D2"].text == (
        "In Section \u201cMethod\u201d: "
        f"Batch {local_batch.name}: in-house annotators with accounts on the platform (the research team's own), "
        f"with a nominal reward of ${local_batch.reward} per task, which the platform does not pay; "
        "the platform records no payment to them (4 tasks submitted)."
    )
    assert "in-house annotators were compensated" in items["D2"].researcher
    # Who labelled: the card's own sentence, and the agreement's annotator count.
    assert who_labelled(facts) in items["D"].text and f"{facts['agreement']['workers']} annotators" in items["D"].text
    assert items["16"].answer == "N/A" and "every label comes from people" in items["16"].text
    # The instructions beside the questions, in both forms; every marked place findable.
    markdown = checklist_markdown(list(items.values()), page)
    tex = checklist_tex(list(items.values()), page)
    marked = sum(item.answer == TO_ANSWER for item in items.values()) + sum(bool(i.researcher) for i in items.values())
    assert marked > 8  # and each of them in bold in the LaTeX, and in the Markdown (with its opening line's)
    assert tex.count(r"\textbf{{[}to be answered by the authors{]}}") == marked == markdown.count(TO_ANSWER) - 1
    assert "> Judge the query itself" not in markdown and "wanted." in markdown
    assert (
        "Screenshots were off for this build (PAPER_SCREENSHOTS), so the page was not photographed" in items["D1"].text
        and HIT_PAGE in items["D1"].text
    )


def test_mturk_pay_is_the_reward_over_each_tasks_time(query_set):
    """$0.50 a task taken in 300, 600 and 1,200 s is $6.00, $3.00 and $1.50 an hour: median $3.00, 10.0 minutes;
    an assignment still open is no task done."""
    batch = make_batch(query_set, name="turk", provider="mturk", reward=Decimal("0.50"))
    hit = Hit.objects.filter(batch=batch).first()
    start = dt.datetime(2026, 11, 24, 10, 0, tzinfo=dt.UTC)
    for n, seconds in enumerate((300, 600, 1200, None)):
        identity = WorkerIdentity.objects.create(provider="mturk", external_id=f"W{n}")
        worker = Worker.objects.create(pseudonym=f"w{n}", provider="mturk", identity=identity)
        Assignment.objects.create(
            hit=hit,
            worker=worker,
            provider_assignment_id=f"A{n}",
            status=Assignment.Status.ASSIGNED if seconds is None else Assignment.Status.SUBMITTED,
            accepted_at=start,
            submitted_at=None if seconds is None else start + dt.timedelta(seconds=seconds),
        )
    [row] = crowd_pay(batch)
    assert (row["tasks"], row["median_seconds"], row["median_hourly_rate"]) == (3, 600, 3.0)
    _, items = _items(batch)
    assert items["D2"].text.startswith(
        "In Section \u201cMethod\u201d: Batch turk: crowd workers recruited through Amazon Mechanical Turk, paid $0.50 per task of 3 queries; "
        "median effective hourly rate $3.00 (the reward over each task's time taken; median time 10.0 minutes, "
        "from the accept-to-submit times of 3 assignments)."
    )
    assert "whether this pay is adequate" in items["D2"].researcher


def test_prolific_pay_is_the_batch_pages_figure(server, provider, study):  # noqa: F811
    """The batch page's median (issue 45): $0.90 over 360 s and 1,080 s is $9.00 and $3.00 an hour, median $6.00."""
    batch, *_ = study
    sync_batch(batch, provider)
    [row] = crowd_pay(batch)
    listed = prolific_submissions(batch)
    assert (row["median_hourly_rate"], row["median_seconds"]) == (listed.median_hourly_rate, listed.median_seconds)
    assert (row["median_hourly_rate"], row["median_seconds"]) == (6.0, 720.0)
    _, items = _items(batch)
    assert (
        "participants recruited through Prolific, paid $0.90 per task" in items["D2"].text
        and "median effective hourly rate $6.00" in items["D2"].text
        and "median time 12.0 minutes, from Prolific's records of 4 submissions" in items["D2"].text
    )
    assert "Compensation: " + items["D2"].text.split(" Spent")[0].split(": ", 1)[1] in items["14"].text


@pytest.mark.slow
def test_a_machine_first_batch_names_its_machine_and_its_crowd_batches(four_sources):  # noqa: F811
    batch, routing, sample, routed = four_sources
    page, files = task_page(batch, screenshots=False)
    assert page["title"] == sample.title and HIT_PAGE in files  # the first crowd batch's task (the sample)
    facts, items = _items(batch, page)
    machine = machine_tools(facts)
    assert routing.model in machine and routing.prompt_version in machine and facts["machine"]["guarantee"] in machine
    # Its machine is no language model (NoisyMachine declares none): the LLM questions are not "Yes".
    for key in ("E", "E1", "16"):
        assert items[key].answer != "Yes" and machine in items[key].text
        assert "No language model's label is in the data" in items[key].text
    d2 = items["D2"].text
    assert f"Batch {sample.name}: in-house annotators" in d2
    assert f"Batch {routed.name}: crowd workers recruited through Amazon Mechanical Turk" in d2
    assert f"Spent on annotation in all: ${annotation_selectors.batch_state(batch)['spent']:.2f}" in d2
    assert who_labelled(facts) in items["D"].text and "Researchers ruled on 1 query." in items["D"].text


def test_without_chromium_the_bundle_keeps_the_page_and_says_why(local_batch, monkeypatch):
    monkeypatch.setenv("CHROMIUM_PATH", "/nonexistent/chromium")
    page, files = task_page(local_batch, screenshots=True)
    assert set(files) == {HIT_PAGE} and "screenshot" not in page
    assert "Chromium was not found at /nonexistent/chromium" in page["note"] and "CHROMIUM_PATH" in page["note"]
    _, items = _items(local_batch, page)
    assert "Chromium was not found" in items["D1"].text and f"{HIT_PAGE} is the page itself" in items["D1"].text
    assert HIT_SCREENSHOT not in checklist_tex(list(items.values()), page)


@pytest.mark.browser
def test_the_screenshot_is_the_task_page_drawn_by_chromium(local_batch):
    import os

    from publishing.screenshot import PNG_SIGNATURE, SCALE, WINDOW, chromium_path

    if not os.access(chromium_path(), os.X_OK):
        pytest.skip("chromium is not installed (apt-get install chromium)")
    page, files = task_page(local_batch, screenshots=True)
    png = files[HIT_SCREENSHOT]
    assert png.startswith(PNG_SIGNATURE) and page["screenshot"] == HIT_SCREENSHOT
    width, height = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
    assert (width, height) == (WINDOW[0] * SCALE, WINDOW[1] * SCALE)  # drawn at twice the window, for print
    _, items = _items(local_batch, page)
    assert f"is {HIT_SCREENSHOT}" in items["D1"].text
    # Printed so that the page's 16 px body type is 7 pt: 760 px at 7/16 pt each, 332 pt (across two columns).
    assert rf"\includegraphics[width=332pt]{{{HIT_SCREENSHOT}}}" in checklist_tex(list(items.values()), page)
