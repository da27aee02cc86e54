"""A small world for annotation tests: a query set, researchers and annotators."""

from decimal import Decimal

import pytest
from django.contrib.auth import get_user_model

from annotation import services
from annotation.crowd.services.batches import read_gold_file
from platforms.inhouse.services.annotators import create_annotator
from pooling.models import QuerySet
from pooling.services import create_query_set
from tests.support.kept_state import kept

#: The fixtures other folders' tests live with too (``from tests.annotation.conftest import *``: a kept
#: state's fixture comes with its module fixture, tests/support/kept_state.py).
__all__ = [
    "_kept_annotators",
    "_kept_local_batch",
    "_kept_query_set",
    "_kept_researcher",
    "annotators",
    "gold_batch",
    "local_batch",
    "query_set",
    "researcher",
    "toy_platform",
]

#: Queries with an obvious category, so simulated or scripted answers have a truth to aim at.
QUERIES = [
    ("101", "what is a synapse", "n"),
    ("102", "what age do girls start puberty", "f"),
    ("103", "what age do men go bald", "m"),
    ("104", "do boys or girls learn faster", "o"),
    ("105", "how to boil an egg", "n"),
    ("106", "how tall is the average woman", "f"),
]
TRUTH = {qid: label for qid, _, label in QUERIES}


def _query_set(folder) -> QuerySet:
    return create_query_set("gq", [(qid, text) for qid, text, _ in QUERIES], origin=QuerySet.Origin.IMPORTED)


#: The fixtures below are built once per module, each test in a savepoint of them (tests/support/kept_state.py).
_kept_query_set, query_set = kept("query_set", _query_set)


@pytest.fixture
def toy_platform(monkeypatch):
    """The toy platform (tests/annotation/toy_platform.py) registered as ``toy`` for one test: what a
    kernel test uses when it needs "some platform" with prices, limits and options of its own."""
    from annotation.crowd.providers import base
    from tests.annotation.toy_platform import NAME, ToyProvider

    monkeypatch.setattr(ToyProvider, "name", NAME)
    monkeypatch.setitem(base._REGISTRY._classes, NAME, ToyProvider)
    return ToyProvider


def _researcher(folder):
    return get_user_model().objects.create_user("researcher", password="pw-secret-123", is_staff=True)


_kept_researcher, researcher = kept("researcher", _researcher)


def _annotators(folder):
    return [create_annotator(name, password="pw-secret-123") for name in ("ann-a", "ann-b", "ann-c")]


_kept_annotators, annotators = kept("annotators", _annotators)


def make_batch(query_set, name="b1", **settings):
    options = {"provider": "local", "assignments_per_query": 2, "queries_per_hit": 3, "reward": Decimal("0.05")}
    options.update(settings)
    return services.create_batch(name, services.BatchSettings(**options), query_set=query_set)


def _local_batch(folder):
    """Published local batch: 6 queries in 2 HITs of 3, 2 annotators per HIT."""
    batch = make_batch(QuerySet.objects.get(name="gq"))
    services.publish_batch(batch)
    batch.refresh_from_db()
    return batch


_kept_local_batch, local_batch = kept("local_batch", _local_batch, after=("query_set",))


@pytest.fixture
def gold_batch(query_set, tmp_path):
    """6 queries in 2 HITs of 3, plus 2 gold questions per HIT (both gold queries in every HIT)."""
    gold_file = tmp_path / "gold.tsv"
    gold_file.write_text("g1\twhat is a mother\tf\ng2\twhat is a father\tm\n")
    batch = services.create_batch(
        "gold",
        services.BatchSettings(queries_per_hit=3, assignments_per_query=2, gold_per_hit=2, gold_pass_fraction=1.0),
        query_set=query_set,
        gold=read_gold_file(gold_file),
    )
    services.publish_batch(batch)
    batch.refresh_from_db()
    return batch


def answers_for(assignment, truth=TRUTH, override=None):
    """Answers of a HIT as the form posts them: q-<position> -> label."""
    override = override or {}
    return {
        hq.field_name: override.get(hq.batch_query.qid, truth.get(hq.batch_query.qid, hq.batch_query.gold_label))
        for hq in assignment.hit.hit_queries.select_related("batch_query")
    }


#: ann-b's answers where they differ from ann-a's (the truth): five of the six queries disputed.
DISAGREEING = {"101": "f", "102": "m", "104": "n", "105": "o", "106": "n"}


def disputed_batch(query_set, annotators, name: str):
    """A published batch of two votes a query, ann-a answering the truth and ann-b
    :data:`DISAGREEING`: 101, 102, 104, 105 and 106 disputed, 103 agreed."""
    from platforms.inhouse.services.handout import next_assignment
    from platforms.inhouse.services.hit_page import submit_local_assignment

    batch = make_batch(query_set, name, assignments_per_query=2)
    services.publish_batch(batch)
    for user, override in zip(annotators[:2], [None, DISAGREEING], strict=True):
        while (assignment := next_assignment(user, batch)) is not None:
            submit_local_assignment(assignment, answers_for(assignment, override=override))
    return batch
