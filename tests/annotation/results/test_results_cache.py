"""What a batch's answers add up to is computed once per change of the answers and shared.

The ``results`` cache (``settings.CACHES``) is the database's ``results_cache`` table by
default, so every gunicorn worker reads what one of them computed; the key is the batch's
answer version, so a new answer or ruling is seen at once and nothing stale is shown. It is
not the ``shared_cache`` table of the Prolific arrivals' state, which its culling and
clearing must never touch.
"""

import pytest
from django.db import connection

from annotation import services
from annotation.quality.services.adjudication import adjudicate
from annotation.results.selectors import labels as results
from annotation.results.selectors.agreement import agreement
from annotation.results.selectors.labels import query_results
from genderbias.crowd import aggregation
from genderbias.crowd import agreement as agreement_module
from platforms.inhouse.services.handout import next_assignment
from platforms.inhouse.services.hit_page import submit_local_assignment
from tests.annotation.conftest import answers_for, make_batch


def split(batch, annotators):
    """Two annotators answer every HIT; they disagree on 101 and 105 (both set aside)."""
    for index, user in enumerate(annotators[:2]):
        while (assignment := next_assignment(user, batch)) is not None:
            override = {"101": "f", "105": "m"} if index == 1 else None
            submit_local_assignment(assignment, answers_for(assignment, override=override))
    return batch


@pytest.fixture
def answered(local_batch, annotators):
    return split(local_batch, annotators)


@pytest.fixture
def counted(monkeypatch):
    """How often the agreement report and Dawid-Skene's fit are computed."""
    calls = {"agreement": 0, "dawid_skene": 0}

    def counting(name, function):
        def wrapper(*args, **kwargs):
            calls[name] += 1
            return function(*args, **kwargs)

        return wrapper

    monkeypatch.setattr(agreement_module, "agreement_report", counting("agreement", agreement_module.agreement_report))
    monkeypatch.setattr(aggregation, "dawid_skene", counting("dawid_skene", aggregation.dawid_skene))
    return calls


def test_results_are_computed_once_per_answer_version_and_equal_a_fresh_computation(answered, counted, settings):
    first = agreement(answered, bootstrap=20)
    rows = query_results(answered)
    assert counted == {"agreement": 1, "dawid_skene": 1}
    again = agreement(answered, bootstrap=20)
    assert query_results(answered) == rows
    assert again == first and counted == {"agreement": 1, "dawid_skene": 1}
    # The same figures as computed without any cache.
    settings.CACHES = settings.CACHES | {"results": {"BACKEND": "django.core.cache.backends.dummy.DummyCache"}}
    assert agreement(answered, bootstrap=20) == first
    assert query_results(answered) == rows
    assert counted == {"agreement": 2, "dawid_skene": 3}


def test_the_cache_is_shared_through_the_database_not_the_process(answered, settings):
    assert settings.CACHES["results"]["BACKEND"] == "django.core.cache.backends.db.DatabaseCache"
    agreement(answered, bootstrap=0)
    with connection.cursor() as cursor:
        cursor.execute("SELECT cache_key FROM results_cache")
        keys = [row[0] for row in cursor.fetchall()]
        cursor.execute("SELECT cache_key FROM shared_cache WHERE cache_key LIKE 'results:%'")
        assert cursor.fetchall() == []  # not in the arrivals' table
    version = results.answers_version(answered)
    assert any(f"batch-{answered.pk}:{version}:agreement:0:0" in key for key in keys)


def test_a_ruling_or_a_new_answer_is_seen_at_once(query_set, researcher, annotators, counted):
    answered = make_batch(query_set, "b3", assignments_per_query=3)
    services.publish_batch(answered)
    split(answered, annotators)
    before = agreement(answered, bootstrap=0)
    assert "101" in before["set_aside"]
    version = results.answers_version(answered)
    adjudicate(answered, "101", "n", "clearly not about a gender", researcher)
    assert results.answers_version(answered) != version
    after = agreement(answered, bootstrap=0)
    assert "101" not in after["set_aside"] and after["adjudicated"] == 1
    assert {r["qid"]: r["label"] for r in query_results(answered)}["101"] == "n"
    # A third annotator's answers: a new version again, and 105 now has a majority.
    version = results.answers_version(answered)
    while (assignment := next_assignment(annotators[2], answered)) is not None:
        submit_local_assignment(assignment, answers_for(assignment))
    assert results.answers_version(answered) != version
    assert "105" not in agreement(answered, bootstrap=0)["set_aside"]
    assert counted["agreement"] == 3


def test_the_agreement_page_computes_the_agreement_once(answered, researcher, client, settings, counted):
    settings.AGREEMENT_BOOTSTRAP_RESAMPLES = 10
    client.force_login(researcher)
    assert client.get(f"/annotation/batches/{answered.name}/agreement/").status_code == 200
    assert counted == {"agreement": 1, "dawid_skene": 1}
    # A second view (any worker) recomputes nothing.
    for url in ("agreement/", "", "live/", "review/"):
        assert client.get(f"/annotation/batches/{answered.name}/{url}").status_code == 200
    assert counted["dawid_skene"] == 1
    assert counted["agreement"] == 2  # the batch page's alpha without an interval: once, for all three


def test_a_missing_cache_table_costs_only_the_recomputation(answered, counted):
    with connection.cursor() as cursor:
        cursor.execute("DROP TABLE results_cache")
    report = agreement(answered, bootstrap=0)
    assert report["judgments"] > 0 and counted["agreement"] == 1


def test_culling_or_clearing_the_results_never_touches_the_prolific_arrivals_state(settings, db):
    """A database cache culls a third of its table past MAX_ENTRIES and ``clear()`` empties
    the table: with the results in the arrivals' table, many results (or clearing them) wiped
    the checks' remembered answers, the remembered refusals and the rate counters. Here the results cache is filled
    to three times its (lowered) limit, then cleared: the arrivals' entries are all there."""
    from django.core.cache import caches

    from core.services.ratelimit import SHARED, over_limit, shared_cache

    limited = {"MAX_ENTRIES": 30, "CULL_FREQUENCY": 3}
    settings.CACHES = {
        name: config | {"OPTIONS": limited} if name in (SHARED, "results") else config
        for name, config in settings.CACHES.items()
    }
    arrivals = shared_cache()
    # Its table is no model's: what earlier tests committed there (threads, live servers) outlives
    # them, and past the lowered limit would be culled with this test's entries. Emptied in this
    # test's transaction, so only this test's entries count.
    arrivals.clear()
    confirmed = "prolific-arrivals:confirmed:0123"
    arrivals.set(confirmed, "ACTIVE", 600)
    refusals = {f"prolific-arrivals:refused:{i:02d}": "refused" for i in range(20)}
    arrivals.set_many(refusals, 600)
    assert over_limit("prolific-arrivals:192.0.2.7", 5, now=1_000_000_000.0) == 0
    cached = caches["results"]
    for i in range(90):
        cached.set(f"batch-{i}:v:agreement:0:0", {"alpha": i / 90})
    with connection.cursor() as cursor:
        cursor.execute("SELECT COUNT(*) FROM results_cache")
        assert cursor.fetchone()[0] <= 31  # the results were culled, in their own table
    cached.clear()
    assert arrivals.get(confirmed) == "ACTIVE"
    assert arrivals.get_many(list(refusals)) == refusals
    assert over_limit("prolific-arrivals:192.0.2.7", 1, now=1_000_000_000.0) > 0  # the first count was kept
