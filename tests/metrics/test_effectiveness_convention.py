"""Effectiveness as the field computes it (issue 26.7): a judged query a run did not return counts
as 0 (ir_measures' default, ``trec_eval -c``); queries without judgments stay out and are named.

Every run × measure mean of a stored report is checked against ``ir_measures.calc_aggregate`` and
``ir_measures.iter_calc`` run here on the very files imported (runs with tied scores in an order
trec_eval would re-sort, one run missing judged queries, one returning a query outside the set).

Tie order: trec_eval (and ir_measures' pytrec_eval provider: nDCG, R, P, AP) breaks tied scores by
docid descending, the project's default rank too; ir_measures' default RR@k comes from MS MARCO's
code, which breaks them by docid *ascending*. So the runs are handed to ir_measures in trec_eval's
order (tied scores resolved here, independently of the project); the pytrec_eval measures are also
checked on the raw files, ties and all.
"""

import io
import json

import numpy as np
import polars as pl
import pytest
from django.core.management import call_command

from genderbias.ranking import effectiveness as eff
from metrics.models import Report

ir_measures = pytest.importorskip("ir_measures")

MEASURES = ["RR@10", "nDCG@10", "nDCG@5", "R@10", "P@10", "AP@10"]


def test_two_query_hand_example():
    # Query 1: the relevant document at rank 2, RR = 1/2. Query 2 is judged but the run has
    # nothing for it: RR = 0. MRR@10 = (1/2 + 0) / 2 = 0.25 (trec_eval -c, ir_measures); the
    # old convention dropped query 2 and reported 0.5 over one query.
    run = pl.DataFrame({"qid": ["1", "1"], "docid": ["x", "y"], "rank": [1, 2]})
    qrels = pl.DataFrame({"qid": ["1", "2"], "docid": ["y", "z"], "rel": [1, 1]})
    frame = eff.effectiveness(run, qrels, ["RR@10"], qids=["1", "2"])
    assert dict(zip(frame["qid"], frame["value"], strict=True)) == {"1": 0.5, "2": 0.0}
    assert frame["value"].mean() == 0.25
    assert eff.unreturned_queries(run, qrels, ["1", "2"]) == ["2"]
    reference = pl.DataFrame({"query_id": ["1", "1"], "doc_id": ["x", "y"], "score": [2.0, 1.0]}).to_pandas()
    judged = qrels.rename({"qid": "query_id", "docid": "doc_id", "rel": "relevance"}).to_pandas()
    assert ir_measures.calc_aggregate([ir_measures.RR @ 10], judged, reference)[ir_measures.RR @ 10] == 0.25
    # A query asked but not judged is NaN (out of the mean); judgments of a query not asked are ignored.
    frame = eff.effectiveness(run, qrels, ["RR@10"], qids=["1", "3"])
    assert frame.set_index("qid")["value"].isna().to_dict() == {"1": False, "3": True}


@pytest.mark.django_db
def test_hand_example_through_a_report(world):
    # conftest's run b lacks query 3. Judged: 1 (d1 relevant) and 3 (d2 relevant); query 2 unjudged.
    (world / "qrels.txt").write_text("1 0 d1 1\n3 0 d2 1\n")
    call_command("import_qrels", str(world / "qrels.txt"), name="j", queries="q", collection="tiny", verbosity=0)
    stdout = io.StringIO()
    options = {"queries": "q", "runs": "a,b", "cutoffs": "2", "qrels": "j", "measures": "RR@10", "bootstrap": 20}
    call_command("bias_report", **options, name="hand", verbosity=0, stdout=stdout)
    report = Report.objects.get(name="hand")
    rr = {r.run.name: (r.value, r.queries) for r in report.results.filter(metric="RR")}
    # b: query 1 = d3, d1 → 1/2; query 3 not returned → 0: (0.5 + 0) / 2. a: 1 and 1/2 (q3 = d2, d1... d2 first).
    assert rr == {"a": (1.0, 2), "b": (0.25, 2)}
    assert report.unjudged == ["2"] and report.unreturned == {"a": [], "b": ["3"]}
    assert "b: 1 (3)" in stdout.getvalue()


def trec_eval_order(path):
    """The run's rows as ir_measures ScoredDocs whose scores follow trec_eval's order (score
    descending, ties by docid descending) with no ties left."""
    rows = [line.split() for line in path.read_text().splitlines()]
    by_query = {}
    for qid, _, docid, _, score, _ in rows:
        by_query.setdefault(qid, []).append((float(score), docid))
    return [
        ir_measures.ScoredDoc(qid, docid, float(len(docs) - position))
        for qid, docs in by_query.items()
        for position, (_, docid) in enumerate(sorted(docs, reverse=True))
    ]


def _write_world(tmp_path, rng):
    """30 queries, 60 passages, qrels judging 24 queries (6 unjudged), four runs with tied scores."""
    qids = [str(i) for i in range(1, 31)]
    docs = [f"p{i:02d}" for i in range(60)]
    (tmp_path / "collection.tsv").write_text("".join(f"{d}\tpassage {d} about he and she\n" for d in docs))
    (tmp_path / "queries.tsv").write_text("".join(f"{q}\tquery {q}\n" for q in qids))
    judged = qids[:24]
    lines = []
    for qid in judged:
        for doc in rng.choice(docs, size=8, replace=False):
            lines.append(f"{qid} 0 {doc} {int(rng.choice([0, 0, 1, 2, 3]))}\n")
    (tmp_path / "qrels.txt").write_text("".join(lines))
    runs = {}
    for name in ("r1", "r2", "r3", "sparse"):
        rows = []
        asked = qids if name != "sparse" else [q for q in qids if int(q) % 3]  # misses judged 3, 6, 9, …
        for qid in [*asked, "99"] if name == "r2" else asked:  # r2 also ranks a query outside the set
            chosen = rng.choice(docs, size=15, replace=False)
            scores = rng.integers(0, 4, size=15).astype(float)  # few distinct scores: many ties
            order = rng.permutation(15)  # file order unrelated to score order
            rows += [f"{qid} Q0 {chosen[i]} {k + 1} {scores[i]} {name}\n" for k, i in enumerate(order)]
        path = tmp_path / f"{name}.trec"
        path.write_text("".join(rows))
        runs[name] = path
    return qids, judged, runs


@pytest.mark.django_db
@pytest.mark.slow
def test_every_run_and_measure_mean_equals_ir_measures(tmp_path, client, django_user_model):
    qids, judged, runs = _write_world(tmp_path, np.random.default_rng(26))
    call_command("import_collection", str(tmp_path / "collection.tsv"), name="coll", verbosity=0)
    call_command("import_queries", str(tmp_path / "queries.tsv"), name="qs", verbosity=0)
    for name, path in runs.items():
        call_command("import_run", str(path), name=name, collection="coll", verbosity=0)
    qrels_path = tmp_path / "qrels.txt"
    call_command("import_qrels", str(qrels_path), name="rel", queries="qs", collection="coll", verbosity=0)
    call_command(
        "bias_report",
        queries="qs",
        runs=",".join(runs),
        cutoffs="10",
        qrels="rel",
        measures=",".join(MEASURES),
        baseline="r1",
        bootstrap=20,
        name="conv",
        verbosity=0,
        stdout=io.StringIO(),
    )
    report = Report.objects.get(name="conv")
    stored = {(r.run.name, f"{r.metric}@{r.cutoff}"): r for r in report.results.filter(variant="rel")}
    measures = [ir_measures.parse_measure(m) for m in MEASURES]
    qrels = list(ir_measures.read_trec_qrels(str(qrels_path)))
    compared = 0
    for name, path in runs.items():
        aggregate = ir_measures.calc_aggregate(measures, qrels, trec_eval_order(path))
        raw = ir_measures.calc_aggregate(measures[1:], qrels, list(ir_measures.read_trec_run(str(path))))
        for measure in measures:
            result = stored[(name, str(measure))]
            assert result.value == pytest.approx(aggregate[measure], abs=1e-12, rel=0), (name, str(measure))
            if measure in raw:  # pytrec_eval's measures on the file itself, tied scores included
                assert result.value == pytest.approx(raw[measure], abs=1e-12, rel=0), (name, str(measure))
            assert result.queries == len(judged)
            compared += 1
    assert compared == len(runs) * len(MEASURES) == 24
    # Per query too (the values the paired tests take): ir_measures.iter_calc, 0 for a missing judged query.
    per_query = pl.read_parquet(report.per_query).filter(pl.col("variant") == "rel")
    ours = {(r["run"], r["qid"], f"{r['metric']}@{r['cutoff']}"): r["value"] for r in per_query.iter_rows(named=True)}
    for name, path in runs.items():
        for metric in ir_measures.iter_calc(measures, qrels, trec_eval_order(path)):
            assert ours[(name, metric.query_id, str(metric.measure))] == pytest.approx(metric.value, abs=1e-12)
    # The paired tests take the same zeros: scipy's ttest_rel over all 24 judged queries on
    # ir_measures' per-query values, Holm across the three runs (statsmodels), equals the stored p.
    from scipy import stats

    multitest = pytest.importorskip("statsmodels.stats.multitest")
    for measure in measures:
        per_run = {
            name: {m.query_id: m.value for m in ir_measures.iter_calc([measure], qrels, trec_eval_order(path))}
            for name, path in runs.items()
        }
        others = ["r2", "r3", "sparse"]
        raw = [
            stats.ttest_rel([per_run[n][q] for q in judged], [per_run["r1"][q] for q in judged]).pvalue for n in others
        ]
        expected = multitest.multipletests(raw, method="holm")[1]
        for name, p in zip(others, expected, strict=True):
            assert stored[(name, str(measure))].p_value == pytest.approx(p, abs=1e-12), (name, str(measure))
    unjudged = [q for q in qids if q not in judged]
    empty = [ours[(n, q, m)] for n in runs for q in unjudged for m in MEASURES]
    assert len(empty) == 4 * 6 * 6 and all(v is None or np.isnan(v) for v in empty)  # listed, no value
    # The sparse run would look better under the old convention (its missing queries dropped).
    assert report.unjudged == unjudged
    missing = [q for q in judged if int(q) % 3 == 0]
    assert report.unreturned == {"r1": [], "r2": [], "r3": [], "sparse": missing}
    assert all(ours[("sparse", q, m)] == 0.0 for q in missing for m in MEASURES)
    # Named on the page and in the API.
    client.force_login(django_user_model.objects.create_user("res", password="pw-secret-123", is_staff=True))
    page = client.get("/metrics/conv/").content.decode()
    assert f"sparse: {len(missing)} judged queries not returned ({', '.join(missing)})" in page
    body = json.loads(client.get("/api/metrics/reports/conv/").content)
    assert body["unreturned"]["sparse"] == missing and body["unjudged"] == unjudged
    # A report built before this rule (migration 0004 leaves its field null) says so.
    Report.objects.filter(name="conv").update(unreturned=None)
    assert "build the report again" in client.get("/metrics/conv/").content.decode()
