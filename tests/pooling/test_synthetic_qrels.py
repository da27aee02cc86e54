"""Synthetic qrels (``pooling.synthetic``): seeded, graded, every query judged, rankers ordered."""

from pooling.synthetic import SyntheticSpec, read_rankings, synthetic_qrels, write_qrels, write_queries, write_runs

SPEC = SyntheticSpec(passages=2000, queries=120, runs=3, depth=30, seed=5)


def _files(directory):
    queries = write_queries(directory / "queries.tsv", SPEC)
    return queries, write_runs(directory, queries, SPEC)


def test_qrels_are_deterministic_for_a_seed_and_differ_across_seeds(tmp_path):
    _, runs = _files(tmp_path)
    first = write_qrels(tmp_path / "a.txt", runs, SPEC).read_text()
    second = write_qrels(tmp_path / "b.txt", runs, SPEC).read_text()
    assert first == second
    other = synthetic_qrels([read_rankings(p) for p in runs], SyntheticSpec(**{**SPEC.__dict__, "seed": 6}))
    assert other != synthetic_qrels([read_rankings(p) for p in runs], SPEC)


def test_every_query_has_graded_relevant_documents_of_the_collection(tmp_path):
    queries, runs = _files(tmp_path)
    lines = write_qrels(tmp_path / "qrels.txt", runs, SPEC).read_text().splitlines()
    qids = {line.split("\t")[0] for line in queries.read_text().splitlines()}
    judged: dict[str, set[str]] = {}
    for line in lines:
        qid, zero, docid, grade = line.split(" ")
        assert zero == "0" and grade in {"1", "2", "3"} and 0 <= int(docid) < SPEC.passages
        assert docid not in judged.setdefault(qid, set())  # no pair judged twice
        judged[qid].add(docid)
    assert set(judged) == qids
    assert min(len(docs) for docs in synthetic_qrels([read_rankings(p) for p in runs], SPEC).values()) >= 1


def test_earlier_runs_find_more_relevant_documents(tmp_path):
    _, runs = _files(tmp_path)
    rankings = [read_rankings(p) for p in runs]
    qrels = synthetic_qrels(rankings, SPEC)
    hits = [sum(d in qrels[q] for q, docs in ranking.items() for d in docs[:10]) for ranking in rankings]
    assert hits[0] > hits[1] > hits[2] > 0
