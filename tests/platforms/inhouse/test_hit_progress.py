"""Annotators see where they stand: "HIT n of N in <batch> · k left after this one" (issue 22)."""

import re

from django.urls import reverse

from annotation.models import Assignment
from platforms.inhouse.services.hit_page import PROGRESS_COUNT_LIMIT, answered_and_progress
from tests.annotation.conftest import answers_for, make_batch


def hit_progress(assignment: Assignment):
    return answered_and_progress(assignment)[1]


def _progress(page: str) -> str:
    return re.search(r'id="hit-progress">([^<]*)<', page).group(1)


def test_the_hit_page_counts_this_annotators_hits_of_the_batch(local_batch, annotators, client):
    """A batch of 2 HITs: the first page says 1 of 2 (1 left), the second 2 of 2 (0 left)."""
    ann = annotators[0]
    client.force_login(ann)
    first = client.get(reverse("annotation:next"), follow=True)
    assert _progress(first.content.decode()) == "HIT 1 of 2 in b1 · 1 left after this one"
    assignment = Assignment.objects.get(worker__identity__user=ann)
    client.post(reverse("annotation:assignment", args=[assignment.pk]), answers_for(assignment))
    second = client.get(reverse("annotation:next"), follow=True)
    assert _progress(second.content.decode()) == "HIT 2 of 2 in b1 · 0 left after this one"


def test_hits_done_by_the_annotator_or_full_are_not_left_for_them(query_set, annotators):
    """Left counts open HITs this person has not done (a place held by someone else may still free up);
    a HIT whose places are all answered is complete and no longer left."""
    from annotation import services
    from platforms.inhouse.services.handout import next_assignment
    from platforms.inhouse.services.hit_page import submit_local_assignment

    batch = make_batch(query_set, "three", queries_per_hit=2, assignments_per_query=1)
    services.publish_batch(batch)
    a, b = (next_assignment(user) for user in annotators[:2])
    assert hit_progress(a) == hit_progress(b) == type(hit_progress(a))(number=1, left=2)  # 3 HITs
    submit_local_assignment(b, answers_for(b))  # b's HIT is now complete (one place)
    assert hit_progress(a).left == 1  # the third HIT only
    assert hit_progress(a).total == 2


def test_left_is_counted_up_to_a_bound(monkeypatch, local_batch, annotators):
    from platforms.inhouse.services import hit_page
    from platforms.inhouse.services.handout import next_assignment

    monkeypatch.setattr(hit_page, "PROGRESS_COUNT_LIMIT", 1)
    progress = hit_progress(next_assignment(annotators[0]))
    assert (progress.left, progress.left_is_lower_bound) == (1, True)
    assert PROGRESS_COUNT_LIMIT == 1000
