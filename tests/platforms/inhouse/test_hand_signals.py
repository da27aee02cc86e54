"""Hand signals posted with a HIT: read on the server within bounds, unknown when absent or unreadable,
stored per judgment, on every page that renders the HIT (in-house, Prolific's, MTurk's) and in review."""

from django.urls import reverse

from annotation.crowd.services.answers import HAND_SIGNALS
from annotation.crowd.services.publishing import render_hit_html
from annotation.models import Judgment
from platforms.inhouse.services.handout import next_assignment
from tests.annotation.conftest import answers_for


def _stored(assignment):
    return {
        position: (pastes, leaves, ms)
        for position, pastes, leaves, ms in Judgment.objects.filter(assignment=assignment)
        .order_by("batch_query__hit_queries__position")
        .values_list("batch_query__hit_queries__position", "pastes", "tab_leaves", "item_ms")
    }


def test_signals_are_read_within_bounds_and_absent_or_unreadable_ones_are_unknown(local_batch, annotators, client):
    client.force_login(annotators[0])
    assignment = next_assignment(annotators[0])
    most = {name: bound for name, _, bound in HAND_SIGNALS}
    data = answers_for(assignment) | {
        # query 1: every signal, at its bounds
        "pastes-1": "0",
        "leaves-1": str(most["leaves"]),
        "ms-1": str(most["ms"]),
        # query 2: out of range, not ASCII digits, negative
        "pastes-2": str(most["pastes"] + 1),
        "leaves-2": "١",
        "ms-2": "-5",
        # query 3: nothing posted (a page without the script)
    }
    response = client.post(reverse("annotation:assignment", args=[assignment.pk]), data)
    assert response.status_code == 302  # a bad signal never costs the worker their answers
    assert _stored(assignment) == {1: (0, most["leaves"], most["ms"]), 2: (None, None, None), 3: (None, None, None)}
    assert Judgment.objects.filter(assignment=assignment, label__isnull=False).count() == 3


def test_every_hit_page_carries_the_script_inline(local_batch):
    html = render_hit_html(local_batch.hits.first(), mode="mturk", action="https://example.org/submit")
    assert "pastes-" in html and "visibilitychange" in html
    assert "<script src" not in html  # self-contained: MTurk shows it from its own servers


def test_the_query_review_page_shows_each_votes_signals(local_batch, annotators, client, researcher):
    client.force_login(annotators[0])
    assignment = next_assignment(annotators[0])
    data = answers_for(assignment) | {"pastes-1": "2", "leaves-1": "3", "ms-1": "4500"}
    client.post(reverse("annotation:assignment", args=[assignment.pk]), data)
    qid = assignment.hit.hit_queries.get(position=1).batch_query.qid
    client.force_login(researcher)
    page = client.get(reverse("annotation:batch-query", args=[local_batch.name, qid]))
    assert page.status_code == 200
    html = page.content.decode()
    assert '<td class="hand-pastes flagged">2</td>' in html
    assert '<td class="hand-leaves flagged">3</td>' in html
    assert '<td class="hand-seconds">4</td>' in html
