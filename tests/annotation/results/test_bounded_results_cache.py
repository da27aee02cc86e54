"""The results cache is bounded by the code on any backend (``core.db.bounded_cache``), and a
batch's figures of older answers are removed when figures of newer ones are stored (issue 44.2).

Tests run on the default database cache (the ``results_cache`` table): what the ledger says is
held is checked against the table itself.
"""

import pytest
from django.db import connection

from annotation import services
from annotation.quality.services.adjudication import adjudicate
from annotation.results.selectors import labels as results
from annotation.results.selectors.agreement import agreement
from annotation.results.selectors.labels import query_results
from core.db import bounded_cache
from core.models import CacheEntry
from platforms.inhouse.services.handout import next_assignment
from platforms.inhouse.services.hit_page import submit_local_assignment
from tests.annotation.conftest import answers_for, make_batch


@pytest.fixture(autouse=True)
def empty_table(db):
    """Start from an empty table: it is not a model, so the flush after an earlier test that committed
    (``transaction=True``, on the same xdist worker) leaves that test's rows here while their ledger
    rows go (CI on PostgreSQL saw them). What is checked here is what each test stores."""
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM results_cache")


def table_keys() -> set[str]:
    """The keys the results cache's table holds (without Django's ``results:1:`` prefix)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT cache_key FROM results_cache")
        return {row[0].split(":", 2)[2] for row in cursor.fetchall()}


def table_bytes() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT COALESCE(SUM(LENGTH(value)), 0) FROM results_cache")
        return cursor.fetchone()[0]


@pytest.mark.django_db
def test_the_cache_stays_under_its_bound_evicting_the_oldest_first():
    value = {"rows": "x" * 900}  # about 1,300 bytes as the table keeps it
    bound = 5 * 1300
    for i in range(40):
        assert bounded_cache.store("results", f"k{i}", value, max_bytes=bound, generation=f"g{i}", version="v")
        entries, held = bounded_cache.size("results")
        assert held <= bound and entries <= 5 and table_bytes() == held  # the ledger weighs what the table keeps
    assert table_keys() == {f"k{i}" for i in range(35, 40)}  # the table holds what the ledger says
    assert [bounded_cache.read("results", f"k{i}") is bounded_cache.MISSING for i in (0, 34, 35, 39)] == [
        True,
        True,
        False,
        False,
    ]
    assert bounded_cache.read("results", "k39") == value


@pytest.mark.django_db
def test_a_value_larger_than_the_whole_bound_is_not_stored():
    assert not bounded_cache.store("results", "big", "x" * 5000, max_bytes=1000)
    assert bounded_cache.read("results", "big") is bounded_cache.MISSING and not CacheEntry.objects.exists()


@pytest.mark.django_db
def test_a_new_version_of_a_generation_removes_the_older_ones():
    for kind in ("agreement", "rows"):
        bounded_cache.store("results", f"b1:v1:{kind}", kind, max_bytes=10**6, generation="b1", version="v1")
    bounded_cache.store("results", "b2:v1:rows", "other batch", max_bytes=10**6, generation="b2", version="v1")
    bounded_cache.store("results", "b1:v2:agreement", "new", max_bytes=10**6, generation="b1", version="v2")
    assert table_keys() == {"b1:v2:agreement", "b2:v1:rows"}
    assert set(CacheEntry.objects.values_list("key", flat=True)) == {"b1:v2:agreement", "b2:v1:rows"}


@pytest.mark.django_db
def test_expired_entries_leave_the_ledger_and_the_table(settings):
    from datetime import timedelta

    from django.utils import timezone

    bounded_cache.store("results", "old", 1, max_bytes=10**6)
    CacheEntry.objects.filter(key="old").update(stored=timezone.now() - timedelta(days=30))
    bounded_cache.store("results", "new", 2, max_bytes=10**6)
    assert table_keys() == {"new"} and list(CacheEntry.objects.values_list("key", flat=True)) == ["new"]


def _split(batch, annotators):
    for index, user in enumerate(annotators[:2]):
        while (assignment := next_assignment(user, batch)) is not None:
            override = {"101": "f", "105": "m"} if index == 1 else None
            submit_local_assignment(assignment, answers_for(assignment, override=override))


def test_a_batchs_figures_of_older_answers_are_removed_when_its_answers_change(query_set, researcher, annotators):
    batch = make_batch(query_set, "bounded", assignments_per_query=3)
    services.publish_batch(batch)
    _split(batch, annotators)
    other = make_batch(query_set, "other", assignments_per_query=2)
    services.publish_batch(other)
    _split(other, annotators)
    agreement(other, bootstrap=0)
    kept_other = {k for k in table_keys() if f":batch-{other.pk}:" in k}
    assert kept_other

    agreement(batch, bootstrap=0)
    query_results(batch)
    first = results.answers_version(batch)
    old = {k for k in table_keys() if f":batch-{batch.pk}:{first}:" in k}
    assert len(old) >= 2
    adjudicate(batch, "101", "n", "clearly not about a gender", researcher)
    second = results.answers_version(batch)
    assert second != first
    after = agreement(batch, bootstrap=0)
    assert after["adjudicated"] == 1
    keys = table_keys()
    assert not old & keys  # the figures of the older answers are gone from the table
    assert any(f":batch-{batch.pk}:{second}:" in k for k in keys)
    assert kept_other <= keys  # another batch's are not touched
    assert agreement(batch, bootstrap=0) == after  # and the new figures are served


@pytest.mark.django_db(transaction=True)  # counts are kept only outside a transaction of the caller
def test_the_answer_counts_keep_only_the_latest_stamp(query_set, annotators):
    from annotation.crowd.selectors import answer_counts

    if connection.vendor != "sqlite":
        pytest.skip("the answer counts are kept on SQLite only (elsewhere counted at each call)")
    batch = make_batch(query_set, "counted", assignments_per_query=2)
    services.publish_batch(batch)
    answer_counts([batch.pk])
    first = [k for k in table_keys() if f":answer-counts:{batch.pk}:" in k]
    assert len(first) == 1
    assignment = next_assignment(annotators[0], batch)
    submit_local_assignment(assignment, answers_for(assignment))
    answer_counts([batch.pk])
    second = [k for k in table_keys() if f":answer-counts:{batch.pk}:" in k]
    assert len(second) == 1 and second != first  # the new stamp's counts replaced the last ones
