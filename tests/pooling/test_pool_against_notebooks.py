"""The pool is the reference notebooks' pool: the site's import and ``build_pool`` against the notebooks'
plain loops (:mod:`tests.support.naive_pool`, a ``Counter`` per passage), on synthetic data where every
RaB's order decides who is pooled (4 lists of 5 of 120 queries)."""

from pathlib import Path

import pytest

from genderbias.text.wordlists import default_wordlist
from pooling import services
from pooling.models import QuerySet, Run
from pooling.synthetic import SyntheticSpec, write_collection, write_queries, write_runs
from tests.support.naive_pool import naive_pool

CUTOFF, DEPTH = 10, 5


@pytest.mark.django_db
def test_the_sites_pool_is_the_notebooks_pool(tmp_path: Path):
    spec = SyntheticSpec(passages=1_500, queries=120, runs=2, depth=20, gender_rate=0.05)
    collection = write_collection(tmp_path / "collection.tsv", spec)
    queries = write_queries(tmp_path / "queries.tsv", spec)
    runs = write_runs(tmp_path, queries, spec)

    registered = services.import_collection(collection, "synthetic", bar=False).obj
    services.import_queries(queries, "q")
    imported = [services.import_run(path, path.stem, registered, order=Run.Order.FILE).obj for path in runs]
    pool = services.build_pool(
        "p",
        QuerySet.objects.get(name="q"),
        imported,
        services.PoolSettings(CUTOFF, DEPTH, "tf", "whitespace"),
        bar=False,
    )
    pooled = sorted(pool.queries.queries.values_list("qid", flat=True), key=int)

    expected = naive_pool(collection, queries, runs, default_wordlist().words, CUTOFF, DEPTH)
    assert len(expected) > DEPTH * 2  # the runs' lists differ: more than one run's worth is pooled
    assert pooled == expected
