"""A batch's assignments are read once for its progress, the answers' version and the work that
failed its gold questions (issue 31: ``assignment_counts``, one grouped pass). Every figure must
be the one the separate aggregates gave, whatever state the assignments are in."""

import datetime as dt

from django.db.models import Count, Max, Q
from django.utils import timezone

from annotation import services
from annotation.crowd.selectors import CHARGED_WORK, WORK_KEYS, assignment_counts, batch_progress
from annotation.models import Assignment
from annotation.results.selectors import labels as results
from platforms.inhouse.services.handout import next_assignment
from platforms.inhouse.services.hit_page import submit_local_assignment
from tests.annotation.conftest import answers_for, make_batch


def separately(ids):
    """The figures as the answers' version, the progress and the batch page read them before."""
    usable = Q(status__in=[Assignment.Status.SUBMITTED, Assignment.Status.APPROVED]) & ~Q(gold_passed=False)
    rows = Assignment.objects.filter(hit__batch__in=ids)
    work = rows.aggregate(
        n=Count("id"),
        last=Max("id"),
        usable=Count("id", filter=usable),
        charged=Count("id", filter=CHARGED_WORK),
        approved=Count("id", filter=Q(status=Assignment.Status.APPROVED)),
        submitted=Max("submitted_at"),
        reviewed=Max("reviewed_at"),
    )
    by_status = dict(rows.values_list("status").annotate(n=Count("pk")).order_by())
    statuses = {f"status_{s}": by_status.get(s, 0) for s in Assignment.Status.values}
    return work | statuses | {"failed_gold": rows.filter(gold_passed=False).count()}


def test_one_pass_gives_every_figure_of_the_separate_aggregates(query_set, annotators):
    first = make_batch(query_set, "first", assignments_per_query=3)
    second = make_batch(query_set, "second", assignments_per_query=3)
    for batch in (first, second):
        services.publish_batch(batch)
    assert assignment_counts([first.pk]) == separately([first.pk])  # none: 0 and None
    for user in annotators[:2]:
        while (assignment := next_assignment(user, first)) is not None:
            submit_local_assignment(assignment, answers_for(assignment))
    held = next_assignment(annotators[2], first)  # handed out, not answered
    next_assignment(annotators[0], second)
    mine = list(Assignment.objects.filter(hit__batch=first).exclude(pk=held.pk).order_by("pk"))
    now = timezone.now()
    # Every status and gold outcome a batch's work can be in, reviewed at different times.
    Assignment.objects.filter(pk=mine[0].pk).update(status=Assignment.Status.APPROVED, reviewed_at=now)
    Assignment.objects.filter(pk=mine[1].pk).update(
        status=Assignment.Status.REJECTED, reviewed_at=now - dt.timedelta(1)
    )
    Assignment.objects.filter(pk=mine[2].pk).update(gold_passed=False)
    Assignment.objects.filter(pk=mine[3].pk).update(status=Assignment.Status.APPROVED, gold_passed=True)
    Assignment.objects.filter(pk=held.pk).update(status=Assignment.Status.ABANDONED)
    for ids in ([first.pk], [second.pk], [first.pk, second.pk]):
        counted = assignment_counts(ids)
        assert counted == separately(ids)
    counted = assignment_counts([first.pk])
    assert counted["failed_gold"] == 1 and counted["status_approved"] == 2 and counted["status_abandoned"] == 1
    assert counted["usable"] == 2  # the two approved; the one left submitted failed its gold questions
    assert counted["reviewed"] == now
    # The progress and the version made from it are those made from the separate aggregates.
    assert batch_progress(first, assignments=counted) == batch_progress(first)
    version = results.answers_version(first, own_assignments=counted)
    assert version == results.answers_version(first)
    assert {key: counted[key] for key in WORK_KEYS} == {key: separately([first.pk])[key] for key in WORK_KEYS}
