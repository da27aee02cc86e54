"""The full-size benchmark's own parts: the runs it writes, the reference's phases and their scaling."""

import math
from pathlib import Path

import numpy as np

from benchmarks.fullsize import scale_reference, write_runs_fast
from benchmarks.pooling.naive import naive_pool
from genderbias.text.wordlists import default_wordlist
from pooling.synthetic import SyntheticSpec, write_collection, write_queries


def test_written_runs_rank_distinct_passages_in_score_order(tmp_path: Path):
    queries = write_queries(tmp_path / "q.tsv", SyntheticSpec(queries=40))
    # 60 passages, 50 deep: most queries draw a repeat at first and must be redrawn.
    paths = write_runs_fast(tmp_path, queries, passages=60, runs=2, depth=50)
    qids = [line.split("\t", 1)[0] for line in queries.read_text().splitlines()]
    assert [p.name for p in paths] == ["run1.trec", "run2.trec"]
    for path in paths:
        lines = [line.split(" ") for line in path.read_text().splitlines()]
        assert len(lines) == 40 * 50
        assert {len(line) for line in lines} == {6}
        for i, qid in enumerate(qids):
            block = lines[i * 50 : (i + 1) * 50]
            assert {line[0] for line in block} == {qid}
            assert {line[1] for line in block} == {"Q0"}
            docs = [int(line[2]) for line in block]
            assert len(set(docs)) == 50 and all(0 <= d < 60 for d in docs)
            assert [int(line[3]) for line in block] == list(range(1, 51))
            scores = [float(line[4]) for line in block]
            assert scores == sorted(scores, reverse=True)
            assert {line[5] for line in block} == {path.stem}
    assert paths[0].read_text() != paths[1].read_text()


def test_the_reference_phases_add_up_and_leave_the_pool_unchanged(tmp_path: Path):
    spec = SyntheticSpec(passages=2_000, queries=60, runs=2, depth=30)
    collection = write_collection(tmp_path / "c.tsv", spec)
    queries = write_queries(tmp_path / "q.tsv", spec)
    runs = write_runs_fast(tmp_path, queries, spec.passages, spec.runs, spec.depth)
    words = default_wordlist().words
    phases: dict[str, float] = {}
    with_phases = naive_pool(collection, queries, runs, words, 10, 20, phases)
    assert with_phases == naive_pool(collection, queries, runs, words, 10, 20)
    assert set(phases) == {"collection", "runs"} and all(v >= 0 for v in phases.values())


def test_each_phase_scales_by_its_own_size():
    measured = {"passages": 1_000, "run_lines": 4_000, "phases": {"collection": 2.0, "runs": 3.0}, "peak_mb": 50.0}
    scaled = scale_reference(measured, passages=10_000, run_lines=6_000)
    # 2 s x 10 (passages) + 3 s x 1.5 (run lines) = 24.5 s; memory with the passages: 500 MB.
    assert math.isclose(scaled["seconds"], 24.5)
    assert math.isclose(scaled["peak_mb"], 500.0)
    assert np.isfinite(scale_reference(measured | {"run_lines": 0}, 10_000, 6_000)["seconds"])
