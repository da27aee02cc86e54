"""Batch and HIT statuses agree: a full HIT is not "open", a completed batch has no open HIT."""

from annotation.crowd.services.sync import sync_batch
from annotation.models import Batch, Hit
from annotation.quality.services.escalation import escalate_batch
from platforms.inhouse.services.handout import next_assignment
from platforms.inhouse.services.hit_page import submit_local_assignment
from tests.annotation.conftest import answers_for


def _answer_next(user, batch, override=None):
    assignment = next_assignment(user, batch)
    submit_local_assignment(assignment, answers_for(assignment, override=override))
    return assignment.hit


def test_a_local_hit_with_all_its_assignments_in_is_complete_not_open(local_batch, annotators):
    first, second = annotators[:2]
    hit = _answer_next(first, local_batch)
    hit.refresh_from_db()
    assert hit.status == Hit.Status.OPEN  # one of its two assignments is in
    assert _answer_next(second, local_batch) == hit
    hit.refresh_from_db()
    assert hit.status == Hit.Status.COMPLETE
    assert local_batch.hits.exclude(pk=hit.pk).get().status == Hit.Status.OPEN
    # A complete HIT is offered to nobody: the third annotator gets the other one.
    assert next_assignment(annotators[2], local_batch).hit != hit


def test_a_completed_batch_shows_every_hit_complete(local_batch, annotators):
    for user in annotators[:2]:
        for _ in range(2):
            _answer_next(user, local_batch)
    result = sync_batch(local_batch, approve_all=True)
    local_batch.refresh_from_db()
    assert result.completed and local_batch.status == Batch.Status.COMPLETED
    assert set(local_batch.hits.values_list("status", flat=True)) == {Hit.Status.COMPLETE}


def test_escalating_a_complete_hit_opens_it_again(local_batch, annotators):
    for user, override in zip(annotators[:2], [None, {"101": "f"}], strict=True):
        for _ in range(2):
            _answer_next(user, local_batch, override)
    sync_batch(local_batch, approve_all=True)
    assert set(local_batch.hits.values_list("status", flat=True)) == {Hit.Status.COMPLETE}
    applied = escalate_batch(local_batch, max_assignments=3)
    disputed = local_batch.hits.get(hit_queries__batch_query__qid="101")
    assert [e.hit_id for e in applied] == [disputed.pk]
    disputed.refresh_from_db()
    assert disputed.status == Hit.Status.OPEN
    assert local_batch.hits.exclude(pk=disputed.pk).get().status == Hit.Status.COMPLETE
    local_batch.refresh_from_db()
    assert local_batch.status == Batch.Status.PUBLISHED
