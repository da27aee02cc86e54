"""Creating a batch: snapshot, HIT grouping, gold, cost, validation; cancelling."""

import datetime as dt
from decimal import Decimal

import pytest

from annotation import services
from annotation.crowd.services.batches import cancel_batch, read_gold_file
from annotation.models import Batch, BatchQuery, Hit, HitQuery
from core.errors import ServiceError
from genderbias.errors import InputError
from tests.annotation.conftest import QUERIES, make_batch


def test_create_batch_snapshots_queries_and_groups_them_into_hits(query_set):
    batch = make_batch(query_set, queries_per_hit=4, assignments_per_query=3)
    assert batch.status == Batch.Status.DRAFT
    assert list(batch.queries.values_list("qid", "text")) == [(q, t) for q, t, _ in QUERIES]
    assert batch.hits.count() == 2
    sizes = [hit.hit_queries.count() for hit in batch.hits.order_by("position")]
    assert sizes == [4, 2]
    # Every query is in exactly one HIT; positions within a HIT are 1..n.
    assert sorted(HitQuery.objects.filter(hit__batch=batch).values_list("batch_query__qid", flat=True)) == sorted(
        q for q, _, _ in QUERIES
    )
    assert list(batch.hits.get(position=2).hit_queries.values_list("position", flat=True)) == [1, 2]
    assert set(batch.hits.values_list("max_assignments", flat=True)) == {3}

    # The snapshot does not follow later edits of the source.
    query_set.queries.filter(qid="101").update(text="changed")
    assert batch.queries.get(qid="101").text == "what is a synapse"


def test_cost_is_computed_when_the_batch_is_created(query_set):
    batch = make_batch(query_set, queries_per_hit=4, assignments_per_query=3, reward=Decimal("0.10"))
    # 2 HITs × 3 assignments = 6 × $0.10, and no crowd fee for in-house annotators
    assert batch.cost["assignments_total"] == 6
    assert batch.cost["total"] == "0.60" and batch.cost["fees"] == "0.00"
    assert batch.cost["hits"] == 2


def test_unique_tokens_are_deterministic_and_distinct(query_set):
    batch = make_batch(query_set)
    tokens = list(batch.hits.order_by("position").values_list("unique_token", flat=True))
    assert len(set(tokens)) == len(tokens)
    assert all(token.startswith(f"{batch.pk}-") and len(token) <= 64 for token in tokens)
    other = make_batch(query_set, name="b2")
    assert not set(tokens) & set(other.hits.values_list("unique_token", flat=True))


def test_gold_questions_are_mixed_into_every_hit(query_set, tmp_path):
    gold_file = tmp_path / "gold.tsv"
    gold_file.write_text("g1\twhat is a mother\tfemale\ng2\twhat is a father\tm\n")
    gold = read_gold_file(gold_file)
    batch = services.create_batch(
        "gold",
        services.BatchSettings(queries_per_hit=3, assignments_per_query=2, gold_per_hit=1),
        query_set=query_set,
        gold=gold,
    )
    assert BatchQuery.objects.filter(batch=batch, is_gold=True).count() == 2
    for hit in batch.hits.all():
        assert hit.hit_queries.filter(batch_query__is_gold=True).count() == 1
        assert hit.hit_queries.count() == 4
    assert batch.queries.get(qid="g1").gold_label == "f"


@pytest.mark.parametrize(
    ("line", "message"),
    [("g1\tq\tmaybe", "unknown label"), ("g1\tq", "expected qid"), ("g1\tq\tn\ng1\tq2\tf", "repeated")],
)
def test_bad_gold_files_are_refused_with_the_line(tmp_path, line, message):
    path = tmp_path / "gold.tsv"
    path.write_text(line + "\n")
    with pytest.raises(InputError, match=rf"^{path}:\d: .*{message}"):
        read_gold_file(path)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"reward": Decimal("0.001")}, "whole cents"),
        ({"assignments_per_query": 0}, "at least 1"),
        ({"queries_per_hit": 0}, "between 1 and 100"),
        ({"lifetime": dt.timedelta(seconds=5)}, "lifetime"),
        ({"provider_options": {"tier": "gold"}}, "^Toy platform options only apply to the toy provider$"),
        ({"provider": "crowdflower"}, "unknown provider"),
        ({"provider_options": {"bonus": "0.10"}}, "only apply to the prolific"),
        ({"provider": "prolific", "provider_options": {"devices": ["watch"]}}, "unknown device"),
    ],
)
def test_invalid_settings_are_refused_before_anything_is_created(query_set, options, message, toy_platform):
    with pytest.raises(ServiceError, match=message):
        make_batch(query_set, **options)
    assert not Batch.objects.exists()


def test_batch_names_are_unique(query_set):
    make_batch(query_set)
    with pytest.raises(ServiceError, match="already exists"):
        make_batch(query_set)


def test_publish_local_batch_and_cancel(local_batch):
    assert local_batch.status == Batch.Status.PUBLISHED
    assert local_batch.published is not None
    assert not local_batch.hits.filter(provider_id=None).exists()
    assert set(local_batch.hits.values_list("status", flat=True)) == {Hit.Status.OPEN}
    assert services.publish_batch(local_batch) == 0  # re-running publishes nothing new

    assert cancel_batch(local_batch) == 2
    local_batch.refresh_from_db()
    assert local_batch.status == Batch.Status.CANCELLED
    assert set(local_batch.hits.values_list("status", flat=True)) == {Hit.Status.EXPIRED}
    with pytest.raises(ServiceError, match="cannot be published"):
        services.publish_batch(local_batch)
