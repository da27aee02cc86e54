"""A team member whose work on a HIT failed its gold check takes the HIT again where no other member can
(issue 58: a team of three completes its blind sample). Members who have not done the HIT come first; the
failed work's answers never count beside the retake's (counted here from the judgments table); a batch that
keeps failed work's answers gives no retake; a retry never makes a second assignment or judgment."""

from collections import Counter

import pytest
from django.db import IntegrityError, transaction

from annotation.crowd.services.sync import sync_batch
from annotation.models import Assignment, Batch, Judgment
from platforms.inhouse.selectors import Unfillable, unfillable_places
from platforms.inhouse.services.handout import next_assignment
from platforms.inhouse.services.hit_page import submit_local_assignment
from platforms.inhouse.services.team import set_active, set_batch_team
from tests.annotation.conftest import answers_for


def _a_and_b_do_every_hit(batch, annotators):
    """ann-a and ann-b answer both HITs; ann-b gets the check question of HIT 1 wrong; the review rejects it."""
    for user in annotators[:2]:
        while (assignment := next_assignment(user, batch)) is not None:
            wrong = user.username == "ann-b" and assignment.hit.position == 1
            submit_local_assignment(assignment, answers_for(assignment, override={"g1": "m"} if wrong else None))
    sync_batch(batch)
    rejected = Assignment.objects.get(hit__batch=batch, status=Assignment.Status.REJECTED)
    assert (rejected.worker.identity.user.username, rejected.hit.position) == ("ann-b", 1)
    return rejected


def _kept_answers(batch):
    """(query, worker) -> kept answers, read from the judgments table: submitted or approved work that did
    not fail its gold check (the batch discards failed work's answers)."""
    kept = Judgment.objects.filter(
        assignment__hit__batch=batch,
        assignment__status__in=[Assignment.Status.SUBMITTED, Assignment.Status.APPROVED],
        batch_query__is_gold=False,
        label__isnull=False,
    ).exclude(assignment__gold_passed=False)
    return Counter(kept.values_list("batch_query__qid", "assignment__worker_id"))


def test_the_member_who_failed_takes_the_hit_again_when_no_other_member_can(gold_batch, annotators):
    set_batch_team(gold_batch, ["ann-a", "ann-b"])
    rejected = _a_and_b_do_every_hit(gold_batch, annotators)
    assert unfillable_places(gold_batch) is None  # ann-b can fill the place again
    ann_a, ann_b = annotators[:2]
    assert next_assignment(ann_a, gold_batch) is None  # ann-a has a kept answer to every query

    retake = next_assignment(ann_b, gold_batch)
    assert retake is not None and retake.hit_id == rejected.hit_id and retake.pk != rejected.pk
    assert next_assignment(ann_b, gold_batch).pk == retake.pk  # asked again: the same hand-out, not a second
    with pytest.raises(IntegrityError), transaction.atomic():  # never two live assignments of one worker on a HIT
        Assignment.objects.create(hit=retake.hit, worker=retake.worker, provider_assignment_id="local-twice")
    submit_local_assignment(retake, answers_for(retake))
    assert next_assignment(ann_b, gold_batch) is None  # done: no retake of a HIT they answered
    sync_batch(gold_batch)
    gold_batch.refresh_from_db()
    assert gold_batch.status == Batch.Status.COMPLETED

    kept = _kept_answers(gold_batch)
    assert set(kept.values()) == {1}  # never two kept answers of one worker to one query
    per_query = Counter(qid for qid, _ in kept)
    assert len(per_query) == 6 and set(per_query.values()) == {2}
    # ann-b's failed answers are still in the table (the crowd model reads their gold answers), uncounted.
    assert Judgment.objects.filter(assignment=rejected).count() == 5


def test_a_member_who_has_not_done_the_hit_comes_first(gold_batch, annotators):
    set_batch_team(gold_batch, ["ann-a", "ann-b", "ann-c"])
    rejected = _a_and_b_do_every_hit(gold_batch, annotators)
    ann_b, ann_c = annotators[1:]
    assert next_assignment(ann_b, gold_batch) is None  # ann-c can take the place: no retake for ann-b

    set_active(ann_c, False)  # ... until ann-c cannot
    retake = next_assignment(ann_b, gold_batch)
    assert retake is not None and retake.hit_id == rejected.hit_id
    Assignment.objects.filter(pk=retake.pk).update(status=Assignment.Status.ABANDONED)  # ann-b lets it go

    set_active(ann_c, True)
    taken = next_assignment(ann_c, gold_batch)
    assert taken is not None and taken.hit_id == rejected.hit_id
    submit_local_assignment(taken, answers_for(taken))
    assert next_assignment(ann_b, gold_batch) is None  # the place is filled
    assert set(_kept_answers(gold_batch).values()) == {1}


def test_a_batch_that_keeps_failed_work_gives_no_retake(gold_batch, annotators):
    Batch.objects.filter(pk=gold_batch.pk).update(failed_gold_answers="keep")
    gold_batch.refresh_from_db()
    set_batch_team(gold_batch, ["ann-a", "ann-b"])
    _a_and_b_do_every_hit(gold_batch, annotators)
    assert next_assignment(annotators[1], gold_batch) is None  # their failed answers count: a retake would repeat them
    assert unfillable_places(gold_batch) == Unfillable(1, 1, 1, positions=(1,), escalated=0, team=2, needed=1)


def test_a_batch_without_a_team_gives_no_retake(gold_batch, annotators):
    _a_and_b_do_every_hit(gold_batch, annotators)
    assert next_assignment(annotators[1], gold_batch) is None  # anyone may come: the place waits for them
