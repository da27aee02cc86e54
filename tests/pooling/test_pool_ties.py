"""One RaB for a query (issue 67): the pool ranks queries by the report's tie-aware RaB@10, its order of
ties a choice declared once with the reports' (core.options.TIES_OPTION), and the pool page shows
each query's figure and its tie range as the report does. On Grep-BiasIR with a BM25 run, whose three
wordings of a document tie (:mod:`tests.genderbias.ranking.test_ties`), the pool's RaB@10 [tf] of every
pooled query equals the report's per-query RaB@10 [tf] on the same data, under each order of ties."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from core.options import TIES_OPTION
from metrics import selectors
from metrics.services import ReportSettings, build_report
from pooling.models import Pool, PoolEntry, QuerySet, Run

from ..publishing.test_paper_ties import grep_bm25_report  # noqa: F401


def pool_values(name: str) -> dict[str, tuple[float, float | None, float | None]]:
    return {
        qid: (value, low, high)
        for qid, value, low, high in PoolEntry.objects.filter(pool__name=name).values_list(
            "query__qid", "rank_bias", "tie_low", "tie_high"
        )
    }


@pytest.mark.slow
@pytest.mark.django_db
def test_the_pools_rab_of_each_pooled_query_is_the_reports(grep_bm25_report, admin_client):  # noqa: F811
    report = grep_bm25_report  # tie-aware, cutoffs 5, 10, 20, 30
    assert report.ties == TIES_OPTION.default == "tie-aware"
    per_query = selectors.report_per_query(report)
    at10 = per_query[(per_query["metric"] == "RaB") & (per_query["variant"] == "tf") & (per_query["cutoff"] == 10)]
    reported = dict(zip(at10["qid"].astype(str), at10["value"].astype(float), strict=True))
    summary = selectors.report_summary(report)

    call_command("pool", name="pool-aware", queries="grep-biasir", runs="bm25", depth=10, stdout=io.StringIO())
    pool = Pool.objects.get(name="pool-aware")
    assert pool.ties == "tie-aware"
    pooled = pool_values("pool-aware")
    assert len(pooled) == pool.queries.queries.count() >= 10
    for qid, (value, low, high) in pooled.items():
        assert value == pytest.approx(reported[qid], abs=1e-12), qid
        if low is not None:
            assert low <= value <= high and high - low > 1e-12
    # The pool's queries are the ten most female- and most male-leaning by the report's figure (equal
    # figures to the smaller qid, the pool's documented rule).
    female = sorted(reported, key=lambda qid: (round(reported[qid], 12), int(qid)))
    male = sorted(reported, key=lambda qid: (-round(reported[qid], 12), int(qid)))
    assert set(pooled) == set(female[:10]) | set(male[:10])

    # Another order of ties, as a report with that order gives it.
    call_command(
        "pool", name="pool-trec", queries="grep-biasir", runs="bm25", depth=10, ties="trec_eval", stdout=io.StringIO()
    )
    trec = build_report(
        "grep-trec",
        QuerySet.objects.get(name="grep-biasir"),
        [Run.objects.get(name="bm25")],
        ReportSettings(cutoffs=(10,), bootstrap_samples=20, ties="trec_eval"),
    )
    trec_query = selectors.report_per_query(trec)
    trec_query = trec_query[(trec_query["metric"] == "RaB") & (trec_query["variant"] == "tf")]
    trec_values = dict(zip(trec_query["qid"].astype(str), trec_query["value"].astype(float), strict=True))
    assert Pool.objects.get(name="pool-trec").ties == "trec_eval"
    for qid, (value, _, _) in pool_values("pool-trec").items():
        assert value == pytest.approx(trec_values[qid], abs=1e-12), qid
    assert trec_values != reported

    # The page shows each query's figure with its range over the orders of ties, and the warning where it holds 0.
    page = admin_client.get("/pooling/pools/pool-aware/").content.decode()
    ranged = [(qid, v) for qid, v in pooled.items() if v[1] is not None]
    assert ranged
    for _qid, (_value, low, high) in ranged:
        assert f"ties {low:.3f} … {high:.3f}" in page
    assert ("⚠" in page) == any(low <= 0 <= high for _, (_, low, high) in ranged)
    assert "tied documents: tie-aware" in page
    api = admin_client.get("/api/pooling/pools/pool-aware/entries/").json()
    rows = api["results"] if isinstance(api, dict) else api
    assert {r["qid"]: (r["rank_bias"], r["tie_low"], r["tie_high"]) for r in rows} == pooled
    download = admin_client.get("/pooling/pools/pool-aware/download.csv").content.decode()
    low, high = ranged[0][1][1:]
    assert f"bm25: ties {low:.4f} … {high:.4f}" in download
    assert len(summary)


@pytest.mark.django_db
def test_a_bad_order_of_ties_is_refused_by_the_pool_command_and_api(admin_client):
    with pytest.raises(CommandError):
        call_command("pool", name="p", queries="q", runs="a", ties="random", stdout=io.StringIO())
    refused = admin_client.post(
        "/api/pooling/pools/",
        {"name": "p", "queries": "q", "runs": ["a"], "ties": "random"},
        content_type="application/json",
    )
    assert refused.status_code == 400 and "ties" in refused.json()


@pytest.mark.django_db
def test_a_run_kept_in_its_files_score_order_reads_its_ties_as_a_run_stored_by_score(tmp_path):
    """A run imported in its file's order (``--order file``) whose file is by score within each query is marked
    so, and the documents tied with its top ``depth`` are found without reading it whole, the same rows the whole
    read finds; a file out of score order is not marked and is read whole."""
    import polars as pl

    from pooling.selectors import top_rankings

    collection = tmp_path / "c.tsv"
    collection.write_text("".join(f"d{i}\ttext {i}\n" for i in range(12)))
    (tmp_path / "q.tsv").write_text("1\tone\n2\ttwo\n")
    # Query 1: a tie group of 3 crosses rank 2 (scores 9, 8, 8, 8, 7); query 2: no tie at the depth.
    lines = ["1 Q0 d0 1 9 t", "1 Q0 d1 2 8 t", "1 Q0 d2 3 8 t", "1 Q0 d3 4 8 t", "1 Q0 d4 5 7 t",
             "2 Q0 d5 1 6 t", "2 Q0 d6 2 5 t", "2 Q0 d7 3 4 t"]  # fmt: skip
    (tmp_path / "sorted.trec").write_text("\n".join(lines) + "\n")
    (tmp_path / "unsorted.trec").write_text("\n".join([lines[4], *lines[:4], *lines[5:]]) + "\n")
    call_command("import_collection", str(collection), name="c", verbosity=0)
    call_command("import_queries", str(tmp_path / "q.tsv"), name="q", verbosity=0)
    for name in ("sorted", "unsorted"):
        call_command("import_run", str(tmp_path / f"{name}.trec"), collection="c", order="file", verbosity=0)
    in_order, out_of_order = Run.objects.get(name="sorted"), Run.objects.get(name="unsorted")
    assert (in_order.score_ordered, out_of_order.score_ordered) == (True, False)

    qids = pl.Series("qid", ["1", "2"])
    read = top_rankings([in_order], qids, 2, "q", through_ties=True)["sorted"]
    in_order.score_ordered = False  # as a run imported before the mark: read whole
    whole = top_rankings([in_order], qids, 2, "q", through_ties=True)["sorted"]
    assert read.sort("qid", "rank").equals(whole.sort("qid", "rank"))
    assert sorted(read.filter(pl.col("qid") == "1")["docid"]) == ["d0", "d1", "d2", "d3"]  # the whole tie group
    assert sorted(read.filter(pl.col("qid") == "2")["docid"]) == ["d5", "d6"]
