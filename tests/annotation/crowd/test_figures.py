"""Figures that never shift (issue 45): a batch's answered assignments, what it spent, each HIT's
answered places and its gold failures each come from one function
(:func:`annotation.results.selectors.state.batch_state` over :func:`annotation.crowd.selectors.batch_progress`,
:func:`annotation.crowd.selectors.answered_per_hit`, :data:`annotation.crowd.selectors.ANSWERED_WORK`),
and are read here from every place a person or a script reads them -- the dashboard, the batch list,
the batch page and its live part, its HITs table, the API and the dataset card -- before a sync
against Prolific's test server and after it, with no new work in between.

Before, work that failed its gold questions counted as answered and spent until the sync rejected
it (81/81 and $6.48, then 68/81 and $5.44); the HITs table counted rejected and returned sessions
("Assignments 3, Answered 6"); a machine-labelled batch said nobody had taken a HIT while its crowd
batches had answers, and its review queue showed none of their gold failures.
"""

from __future__ import annotations

import re
from decimal import Decimal

import pytest
from django.urls import reverse

from annotation import services
from annotation.crowd.services.sync import sync_batch
from annotation.exports.services import export_queries
from annotation.models import Assignment, Batch, Judgment
from annotation.quality.selectors import review_queue
from platforms.inhouse.services.handout import next_assignment
from platforms.inhouse.services.hit_page import submit_local_assignment
from tests.annotation.conftest import answers_for, make_batch
from tests.platforms.prolific import test_prolific as base
from tests.platforms.prolific.fake_server import hexid
from tests.platforms.prolific.test_prolific import Participant, _publish

server, provider, sleeps, client_class = base.server, base.provider, base.sleeps, base.client_class


def _one(pattern: str, text: str, where: str) -> re.Match:
    match = re.search(pattern, text, re.S)
    assert match, f"{where}: {pattern!r} not found"
    return match


def shown(client, batch: Batch, tmp_path) -> dict[str, dict[str, str]]:
    """Each figure of ``batch`` from every place it appears, as text: ``answered`` ("A / E"),
    ``spent`` ("1.23"), ``gold failures`` ("N"; "0" where a page shows none)."""
    name = batch.name
    dashboard = client.get("/").content.decode()
    listing = client.get(reverse("annotation:batch-list")).content.decode()
    page = client.get(reverse("annotation:batch-detail", args=[name])).content.decode()
    live = client.get(reverse("annotation:batch-live", args=[name])).content.decode()
    api = client.get(f"/api/annotation/batches/{name}/progress/").json()["batch"]
    export_queries(batch, "all", tmp_path / f"{name}.tsv")
    card = (tmp_path / f"{name}.tsv.md").read_text()

    def card_answered() -> str:
        found = _one(r"answered assignments[^|]*\| (\d+) of (\d+) \|", card, "dataset card")
        return f"{found.group(1)} / {found.group(2)}"

    def gold_failures(html: str) -> str:
        found = re.search(r'id="gold-failures">(\d+) failed', html)
        return found.group(1) if found else "0"

    answered_pattern = r'id="answered">(\d+ / \d+)</div>'
    return {
        "answered": {
            "dashboard": _one(
                rf">{name}</a></td>.*?<td class=\"num answered\">(\d+ / \d+)</td>", dashboard, "dashboard"
            ).group(1),
            "batch list": _one(rf'id="answered-{name}">(\d+ / \d+)<', listing, "batch list").group(1),
            "batch page": _one(answered_pattern, page, "batch page").group(1),
            "live part": _one(answered_pattern, live, "live part").group(1),
            "API": f"{api['answered']} / {api['expected']}",
            "dataset card": card_answered(),
        },
        "spent": {
            "dashboard": _one(
                rf">{name}</a></td>.*?<td class=\"num spent\">\$([0-9.]+)</td>", dashboard, "dashboard"
            ).group(1),
            "batch list": _one(rf'id="spent-{name}">\(\$([0-9.]+) spent\)', listing, "batch list").group(1),
            "batch page": _one(r'<div class="value" id="spent">\$([0-9.]+)</div>', page, "batch page").group(1),
            "live part": _one(r'<div class="value" id="spent">\$([0-9.]+)</div>', live, "live part").group(1),
            "API": api["spent"],
            "dataset card": _one(r"\| spent \(fees and bonuses included\) \| ([0-9.]+) \|", card, "card").group(1),
        },
        "gold failures": {
            "batch page": gold_failures(page),
            "live part": gold_failures(live),
            "failed-gold table": str(failed_rows(page)),
            "API": str(api["gold_failures"]),
        },
    }


def failed_rows(page: str) -> int:
    """Rows of the batch page's failed-gold table (none without the table)."""
    table = re.search(r'<table id="failed-gold-table">.*?<tbody>(.*?)</tbody>', page, re.S)
    return table.group(1).count("<tr>") if table else 0


def hits_table(client, batch: Batch) -> list[tuple[int, int]]:
    """The batch page's HITs table: (Assignments, Answered) per HIT."""
    page = client.get(reverse("annotation:batch-detail", args=[batch.name])).content.decode()
    table = _one(r'<table id="hits">(.*?)</table>', page, "HITs table").group(1)
    rows = re.findall(r'<td class="num">(\d+)</td>\s*<td class="num">(\d+)</td>', table)
    return [(int(places), int(answered)) for places, answered in rows]


def agreeing(figures: dict[str, dict[str, str]]) -> dict[str, str]:
    """Each figure's one value; fails naming the places that disagree."""
    values = {}
    for figure, places in figures.items():
        assert len(set(places.values())) == 1, f"{figure} differs between places: {places}"
        values[figure] = next(iter(places.values()))
    return values


@pytest.mark.django_db
def test_a_prolific_batch_shows_the_same_figures_everywhere_before_and_after_a_sync(
    query_set, server, provider, client_class, researcher, client, tmp_path
):
    """4 places (2 HITs × 2): P1 and P4 answer, P2 fails the check question, P3 returns the study.
    No bonus, so the sync adds no charge: every figure must read the same before and after it."""
    client.force_login(researcher)
    batch = _publish(base.make_prolific_batch(query_set, "figs", bonus="0"), provider)
    people = [Participant(server, batch.hit_type_id, hexid(f"FG{i}"), client_class) for i in range(1, 5)]
    p1, p2, p3, p4 = people
    p1.answer()
    p1.complete()
    p2.answer(override={"g1": "f"})  # the check question wrong: fails gold
    p2.complete()
    server.set_status(p3.session, "RETURNED")
    p4.answer()
    p4.complete()
    assert p2.assignment.status == Assignment.Status.SUBMITTED and p2.assignment.gold_passed is False

    before = agreeing(shown(client, batch, tmp_path))
    table_before = hits_table(client, batch)
    # Two answered of four; P2's work counts nowhere; 2 × $0.90 with Prolific's 33.3% ($0.5994 -> $0.60).
    assert before == {"answered": "2 / 4", "spent": "2.40", "gold failures": "1"}
    assert table_before == [(2, 1), (2, 1)]  # never more answered than places, rejected/returned not counted

    result = sync_batch(batch, provider).platform
    assert (result.approved, result.rejected) == (2, 1)
    assert p2.assignment.status == Assignment.Status.REJECTED
    assert p3.assignment.status == Assignment.Status.ABANDONED
    assert server.charged(batch.hit_type_id) == Decimal("2.40")  # what Prolific charged: the same

    after = agreeing(shown(client, batch, tmp_path))
    assert after == before
    assert hits_table(client, batch) == table_before


@pytest.mark.django_db
def test_invalid_and_returned_work_counts_nowhere_and_the_sync_agrees(
    query_set, server, provider, client_class, researcher, client, tmp_path
):
    """4 places: P1 answers; P2's answer document holds a query without a category (as one read from
    MTurk or Task Builder can), which the sync rejects; P3 answers, then returns the study on Prolific.
    P2's work counts as answered and charged nowhere from the moment it is submitted (not until a sync
    rejects it); P3's counts until the sync that reads the return and nowhere after it (it used to stay
    answered and charged for good). After the sync the site's spending is what Prolific charged."""
    client.force_login(researcher)
    batch = _publish(base.make_prolific_batch(query_set, "inv", bonus="0"), provider)
    p1, p2, p3, _ = [Participant(server, batch.hit_type_id, hexid(f"IV{i}"), client_class) for i in range(1, 5)]
    for person in (p1, p2, p3):
        person.answer()
        person.complete()
    invalid = p2.assignment.judgments.filter(batch_query__is_gold=False).first()
    Judgment.objects.filter(pk=invalid.pk).update(label=None, invalid_reason="not a category: 'x'")
    Assignment.objects.filter(pk=p2.assignment.pk).update(valid=False)
    server.set_status(p3.session, "RETURNED")  # after completing: Prolific gives the place to someone else

    # P1 and P3 answered (nothing says yet that P3 returned); 2 × $0.90 with Prolific's 33.3%.
    assert agreeing(shown(client, batch, tmp_path)) == {"answered": "2 / 4", "spent": "2.40", "gold failures": "0"}
    assert sum(answered for _, answered in hits_table(client, batch)) == 2

    result = sync_batch(batch, provider).platform
    assert (result.approved, result.rejected) == (1, 1)
    assert p2.assignment.status == Assignment.Status.REJECTED
    assert p3.assignment.status == Assignment.Status.ABANDONED
    after = agreeing(shown(client, batch, tmp_path))
    assert after == {"answered": "1 / 4", "spent": "1.20", "gold failures": "0"}
    assert server.charged(batch.hit_type_id) == Decimal(after["spent"])
    assert sum(answered for _, answered in hits_table(client, batch)) == 1


@pytest.fixture
def parent_with_parts(query_set, annotators, tmp_path):
    """A machine-labelled batch (never published itself) whose crowd work is in a derived batch:
    the part, 6 queries in 2 HITs with 2 gold questions each, answered by three annotators,
    ann-c failing the gold questions on every HIT it takes."""
    from annotation.crowd.services.batches import read_gold_file

    parent = make_batch(query_set, "parent")
    gold_file = tmp_path / "gold.tsv"
    gold_file.write_text("g1\twhat is a mother\tf\ng2\twhat is a father\tm\n")
    part = services.create_batch(
        "part",
        services.BatchSettings(queries_per_hit=3, assignments_per_query=3, gold_per_hit=2, gold_pass_fraction=1.0),
        query_set=query_set,
        gold=read_gold_file(gold_file),
    )
    Batch.objects.filter(pk=part.pk).update(parent=parent, purpose=Batch.Purpose.CALIBRATION)
    part.refresh_from_db()
    services.publish_batch(part)
    for user in annotators:
        wrong = {"g1": "m", "g2": "f"} if user.username == "ann-c" else None
        while (assignment := next_assignment(user, part)) is not None:
            submit_local_assignment(assignment, answers_for(assignment, override=wrong))
    return parent, part


@pytest.mark.django_db
def test_a_machine_labelled_batch_counts_its_crowd_parts_figures(parent_with_parts, researcher, client):
    parent, part = parent_with_parts
    client.force_login(researcher)
    failed = Assignment.objects.filter(hit__batch=part, gold_passed=False).count()
    answered = Assignment.objects.filter(
        hit__batch=part, status__in=["submitted", "approved"], gold_passed=True
    ).count()
    assert failed == 2 and answered == 4  # ann-c failed both HITs it took

    page = client.get(reverse("annotation:batch-detail", args=[parent.name])).content.decode()
    part_page = client.get(reverse("annotation:batch-detail", args=[part.name])).content.decode()
    api = client.get(f"/api/annotation/batches/{parent.name}/progress/").json()["batch"]
    # The parent's summary and its parts' table say what the part's own page says.
    assert f"{answered} / 6 assignments answered in its crowd batches" in page
    assert f'id="answered">{answered} / 6</div>' in part_page
    assert f'id="gold-failures">{failed} failed' in page and f'id="gold-failures">{failed} failed' in part_page
    assert (api["answered"], api["expected"], api["gold_failures"]) == (answered, 6, failed)
    # Its failed-gold table lists the parts' failed work, naming the part.
    table = _one(r'<table id="failed-gold-table">(.*?)</table>', page, "failed-gold table").group(1)
    assert table.count(">part</a> · ") == failed

    # Its review queue shows the queries its parts' gold failures touched, as the part's does.
    statuses = {row["qid"] for row in review_queue(parent).rows if "gold-failed" in row["statuses"]}
    part_statuses = {row["qid"] for row in review_queue(part).rows if "gold-failed" in row["statuses"]}
    assert statuses == part_statuses and statuses

    # Its team progress counts the annotators' HITs in its parts: nobody is said to have taken none.
    progress = client.get(reverse("annotation:batch-team-progress", args=[parent.name])).content.decode()
    assert "Nobody has taken a HIT of this batch yet" not in progress
    for user in ("ann-a", "ann-b", "ann-c"):
        assert re.search(rf"{user}</.*?<td class=\"num answered\">2 / 2</td>", progress, re.S), user
