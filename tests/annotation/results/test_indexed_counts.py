"""A batch's judgments are counted along its assignments from indexes alone (issue 31).

The answers' version (read by every results page and by the live fragment polled every 2 s)
and the batch's progress count its judgments through the HITs' assignments: the judgments'
index by assignment and the partial index of the invalid ones, never a judgment row. The
counts must be those of the judgments reached through the batch's queries, as they were
counted before, whatever happened to the answers; the version they make must stay the same
string, so that a report built before keeps being recognised as current.
"""

import hashlib

import pytest
from django.db import connection
from django.db.models import Count, Max

from annotation import services
from annotation.crowd.selectors import batch_progress, judgment_counts
from annotation.crowd.services.batches import cancel_batch
from annotation.models import Assignment, Judgment
from annotation.quality.services.adjudication import adjudicate
from annotation.results.selectors import labels as results
from platforms.inhouse.services.handout import next_assignment
from platforms.inhouse.services.hit_page import submit_local_assignment
from tests.annotation.conftest import answers_for, make_batch


def through_queries(ids):
    """The aggregate as ``answers_version`` read it before: every judgment row of the batches' queries."""
    return Judgment.objects.filter(batch_query__batch__in=ids).aggregate(
        n=Count("id"), last=Max("id"), labelled=Count("label")
    )


def old_version(batch):
    """``answers_version`` as it was computed before issue 31, the judgments read through the queries."""
    from django.db.models import Q

    ids = results.crowd_batch_ids(batch)
    # Usable: ANSWERED_WORK's rule (issue 45: neither failed gold work nor invalid work counts as answered).
    answered = Q(status__in=[Assignment.Status.SUBMITTED, Assignment.Status.APPROVED])
    usable = answered & ~Q(gold_passed=False) & ~Q(valid=False)
    work = Assignment.objects.filter(hit__batch__in=ids).aggregate(
        n=Count("id"),
        last=Max("id"),
        usable=Count("id", filter=usable),
        approved=Count("id", filter=Q(status=Assignment.Status.APPROVED)),
        submitted=Max("submitted_at"),
        reviewed=Max("reviewed_at"),
    )
    rulings = results.Adjudication.objects.filter(batch_query__batch__in=ids).aggregate(
        n=Count("id"), last=Max("id"), decided=Max("decided_at")
    )
    state = (
        batch.pk,
        batch.created.isoformat() if batch.created else None,
        batch.assignments_per_query,
        ids,
        sorted(work.items()),
        sorted(through_queries(ids).items()),
        sorted(rulings.items()),
        None,
        [],
    )
    return hashlib.sha256(repr(state).encode()).hexdigest()[:32]


def check(batches):
    ids = [b.pk for b in batches]
    assert judgment_counts(ids) == through_queries(ids)
    for batch in batches:
        counted = through_queries([batch.pk])
        progress = batch_progress(batch)
        assert progress["judgments"] == counted["n"]
        assert progress["invalid_judgments"] == counted["n"] - counted["labelled"]
        assert results.answers_version(batch) == old_version(batch)


def test_the_indexed_counts_equal_the_judgments_of_the_queries_whatever_happens(query_set, annotators, researcher):
    first = make_batch(query_set, "first", assignments_per_query=3)
    second = make_batch(query_set, "second", assignments_per_query=3)
    for batch in (first, second):
        services.publish_batch(batch)
    check([first, second])  # no judgment at all: n 0, last None
    # One annotator answers first with an invalid answer to 102, and second validly.
    for batch, override in ((first, {"102": ""}), (second, None)):
        while (assignment := next_assignment(annotators[0], batch)) is not None:
            submit_local_assignment(assignment, answers_for(assignment, override=override))
    assert through_queries([first.pk])["labelled"] < through_queries([first.pk])["n"]  # the invalid one is there
    check([first, second])
    # A handed-out assignment not yet answered, a ruling, another answer, a cancellation.
    held = next_assignment(annotators[1], first)
    check([first, second])
    adjudicate(first, "101", "n", "clearly not about a gender", researcher)
    submit_local_assignment(held, answers_for(held))
    check([first, second])
    cancel_batch(second)
    check([first, second])


def test_a_new_answer_changes_the_version_and_the_version_keeps_its_form(local_batch, annotators):
    before = results.answers_version(local_batch)
    assert before == old_version(local_batch)
    assignment = next_assignment(annotators[0], local_batch)
    submit_local_assignment(assignment, answers_for(assignment, override={"101": ""}))
    after = results.answers_version(local_batch)
    assert after != before and after == old_version(local_batch)


@pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite's query plan")
def test_counting_reads_indexes_only(local_batch):
    """The plan of each count searches indexes only: no judgment row is read."""
    judgments = Judgment.objects.filter(assignment__hit__batch__in=[local_batch.pk])
    for queryset in (judgments.values("id"), judgments.filter(label=None).values("id")):
        sql, params = queryset.query.sql_with_params()
        with connection.cursor() as cursor:
            cursor.execute(f"EXPLAIN QUERY PLAN {sql}", params)
            plan = " ".join(row[-1] for row in cursor.fetchall())
        step = next(row for row in plan.split("SEARCH") if row.strip().startswith("annotation_judgment"))
        assert "COVERING INDEX" in step or "judgment_invalid" in step, plan


def test_counts_read_once_for_the_progress_make_the_same_version(local_batch, annotators):
    """The batch page and its live fragment count the judgments once for the progress and the version."""
    assignment = next_assignment(annotators[0], local_batch)
    submit_local_assignment(assignment, answers_for(assignment, override={"101": ""}))
    judged = judgment_counts([local_batch.pk])
    assert results.answers_version(local_batch, own_judgments=judged) == results.answers_version(local_batch)
    assert batch_progress(local_batch, judged) == batch_progress(local_batch)
