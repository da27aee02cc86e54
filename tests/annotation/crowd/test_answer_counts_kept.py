"""A batch's counts are kept per change of what they count, on SQLite (issue 31).

``answer_counts`` (the judgments, assignments, HITs and queries a batch's progress and its
answers' version count) is kept in the shared results cache under ``changes_stamp``: a counter
that triggers move on every INSERT, UPDATE and DELETE of those tables, whatever the code that
writes. After every kind of write the
counts read must be those counted afresh, and with no write in between they must be read from
the cache, not counted again.
"""

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from annotation import services
from annotation.crowd import selectors
from annotation.crowd.services.batches import cancel_batch
from annotation.crowd.services.change_log import install_change_log
from annotation.models import Assignment, Hit, Judgment
from annotation.quality.services.adjudication import adjudicate
from annotation.results.selectors import labels as results
from platforms.inhouse.services.handout import next_assignment, release_held_hits
from platforms.inhouse.services.hit_page import submit_local_assignment
from tests.annotation.conftest import answers_for, make_batch

#: A query that counts judgments (the stamp names the table only as a string).
COUNTED = 'FROM "annotation_judgment"'

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "sqlite", reason="the counts are kept on SQLite only"),
]


def kept_and_right(batches):
    """Each batch's counts (and both together, as a machine batch's version reads them) are those
    counted afresh; asked again with no write between, they are read without counting."""
    for ids in [[b.pk] for b in batches] + [[b.pk for b in batches]]:
        fresh = selectors._count(ids)
        assert selectors.answer_counts(ids) == fresh, ids
        with CaptureQueriesContext(connection) as queries:
            assert selectors.answer_counts(ids) == fresh
        assert not any(COUNTED in q["sql"] for q in queries.captured_queries), ids
    for batch in batches:
        assert results.answers_version(batch) == results.answers_version(
            batch, own_judgments=selectors._count([batch.pk])["judged"]
        )


def test_the_counts_follow_every_kind_of_write(query_set, annotators, researcher):
    assert selectors.changes_stamp() is not None  # the triggers are there (made after migrate)
    first = make_batch(query_set, "first", assignments_per_query=3)
    second = make_batch(query_set, "second", assignments_per_query=3)
    kept_and_right([first, second])  # drafts: no HIT yet
    for batch in (first, second):
        services.publish_batch(batch)
    kept_and_right([first, second])

    held = next_assignment(annotators[0], first)  # a hand-out
    kept_and_right([first, second])
    submit_local_assignment(held, answers_for(held, override={"102": ""}))  # answers, one invalid
    kept_and_right([first, second])
    while (assignment := next_assignment(annotators[0], first)) is not None:
        submit_local_assignment(assignment, answers_for(assignment))
    kept_and_right([first, second])

    next_assignment(annotators[1], first)
    kept_and_right([first, second])
    release_held_hits(annotators[1].pk)  # given back (abandoned)
    kept_and_right([first, second])
    adjudicate(first, "101", "n", "clearly not about a gender", researcher)  # a ruling: not a count
    kept_and_right([first, second])

    # Writes that no service makes, straight to the rows: an approval, a judgment made invalid,
    # one deleted, an assignment deleted with its judgments, a HIT's assignments changed in bulk.
    done = Assignment.objects.filter(hit__batch=first, status=Assignment.Status.SUBMITTED).order_by("pk")
    Assignment.objects.filter(pk=done.first().pk).update(status=Assignment.Status.APPROVED)
    kept_and_right([first, second])
    judgment = Judgment.objects.filter(assignment__hit__batch=first, label__isnull=False).order_by("pk").first()
    Judgment.objects.filter(pk=judgment.pk).update(label=None, invalid_reason="made invalid by hand")
    kept_and_right([first, second])
    Judgment.objects.filter(pk=judgment.pk).delete()
    kept_and_right([first, second])
    done.last().delete()
    kept_and_right([first, second])
    Hit.objects.filter(batch=first).update(max_assignments=4)
    kept_and_right([first, second])

    cancel_batch(second)  # its HITs withdrawn
    kept_and_right([first, second])

    # A row put back with an id of its own, below the largest (a restore, loaddata): no sequence
    # moves, the counter does.
    gone = Judgment.objects.filter(assignment__hit__batch=first).order_by("pk").first()
    Judgment.objects.filter(pk=gone.pk).delete()
    kept_and_right([first, second])
    gone.save(force_insert=True)
    kept_and_right([first, second])

    with connection.cursor() as cursor:  # however many writes, the counter is one row
        cursor.execute(f'SELECT COUNT(*), MAX("changes") FROM "{selectors.CHANGES}"')
        assert cursor.fetchone()[0] == 1


def test_nothing_is_kept_from_inside_a_transaction_nor_without_the_triggers(local_batch, annotators):
    assignment = next_assignment(annotators[0], local_batch)
    with transaction.atomic():
        submit_local_assignment(assignment, answers_for(assignment))
        inside = selectors.answer_counts([local_batch.pk])  # sees its own answers, which may yet roll back
        assert inside["judged"]["n"] == 3
        with CaptureQueriesContext(connection) as queries:
            selectors.answer_counts([local_batch.pk])
        assert any(COUNTED in q["sql"] for q in queries.captured_queries)  # not kept
        transaction.set_rollback(True)
    assert selectors.answer_counts([local_batch.pk])["judged"]["n"] == 0

    with connection.cursor() as cursor:
        cursor.execute('DROP TRIGGER "answers_change_judgment_delete"')  # as a later rebuild of the table would
    try:
        assert selectors.changes_stamp() is None
        selectors.answer_counts([local_batch.pk])
        with CaptureQueriesContext(connection) as queries:
            assert selectors.answer_counts([local_batch.pk]) == selectors._count([local_batch.pk])
        assert any(COUNTED in q["sql"] for q in queries.captured_queries)  # counted each time
    finally:
        assert install_change_log()  # as the next migrate does
    assert selectors.changes_stamp() is not None


def test_writes_while_a_migration_had_dropped_the_triggers_are_never_hidden(local_batch, annotators):
    """A migration that rebuilds a counted table drops its triggers; writes until the end of that
    ``migrate`` move no counter. The ``migrate`` draws a new token at its end, so the counts kept
    before are never served for the state after."""
    assignment = next_assignment(annotators[0], local_batch)
    submit_local_assignment(assignment, answers_for(assignment))
    before = selectors.answer_counts([local_batch.pk])  # kept
    with connection.cursor() as cursor:
        cursor.execute('DROP TRIGGER "answers_change_judgment_update"')  # a table rebuild, mid-migrate
    Judgment.objects.filter(assignment=assignment).update(label=None, invalid_reason="by a migration")
    assert install_change_log()  # the end of that migrate
    after = selectors.answer_counts([local_batch.pk])
    assert after == selectors._count([local_batch.pk])
    assert after["judged"]["labelled"] == before["judged"]["labelled"] - 3


def test_counting_takes_no_lock_that_would_hold_annotators_back(local_batch, annotators):
    """SQLite has one writer at a time: a transaction around the count (``BEGIN IMMEDIATE`` in this
    project's settings) would make every hand-out and answer wait while a 50,000-query batch is
    counted. The count runs in autocommit and is kept only if the stamp held still."""
    assignment = next_assignment(annotators[0], local_batch)
    submit_local_assignment(assignment, answers_for(assignment))
    with CaptureQueriesContext(connection) as queries:
        counted = selectors.answer_counts([local_batch.pk])
    sql = [q["sql"] for q in queries.captured_queries]
    counting = max(i for i, statement in enumerate(sql) if COUNTED in statement)  # counted, not read
    # (Keeping the result in the database cache afterwards is the cache's own short transaction.)
    assert not any(statement.upper().startswith(("BEGIN", "SAVEPOINT")) for statement in sql[:counting])
    with CaptureQueriesContext(connection) as queries:
        assert selectors.answer_counts([local_batch.pk]) == counted
    assert not any(COUNTED in q["sql"] for q in queries.captured_queries)  # kept
