"""The library computes what the platform reports: Grep-BiasIR imported as the platform bundles it, a
BM25 run (written in the test, Robertson's formula: tests/genderbias/ranking/test_ties.py) imported
and reported by ``bias_report``; the library, given the same two files, gives the report's tie-aware
figures and ranges. ir_measures' own ``calc_aggregate`` computes nDCG@10 beside them, and PyTerrier's
``pt.Experiment`` too; and in a fresh venv with the library alone (no Django) the figure is the same."""

import io
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.core.management import call_command

import genderbias
from tests.genderbias.ranking.test_ties import bm25_run

ROOT = Path(__file__).resolve().parents[2]
MEASURES = {  # the library's string → the report's (metric, variant, cutoff)
    "ARaB@5": ("ARaB", "tf", 5),
    "RaB(magnitude=bool)@10": ("RaB", "bool", 10),
    "NFaiRR@10": ("NFaiRR", "collection", 10),
    "TExFAIR@10": ("TExFAIR", "rbdf", 10),
}


def write_run(frame, path: Path) -> Path:
    path.write_text(
        "".join(
            f"{q} Q0 {d} {r} {s!r} bm25\n" for q, d, r, s in frame.select("qid", "docid", "rank", "score").iter_rows()
        )
    )
    return path


@pytest.fixture
def grep_biasir_report(reference_dir, tmp_path):
    """``(collection file, run file, {measure: (value, tie_low, tie_high)})`` of the platform's report."""
    import csv

    from metrics.models import Report
    from pooling.models import Collection

    call_command("import_named_set", "grep-biasir", stdout=io.StringIO())
    folder = reference_dir / "grep-biasir"
    queries = list(csv.DictReader((folder / "queries.csv").open(encoding="utf-8")))
    docs = [
        row
        for path in sorted(folder.glob("queries-documents_*.csv"))
        for row in csv.DictReader(path.open(encoding="utf-8"))
    ]
    run = write_run(bm25_run(queries, docs), tmp_path / "bm25.trec")
    call_command("import_run", str(run), name="bm25", collection="grep-biasir", verbosity=0, stdout=io.StringIO())
    call_command(
        "bias_report",
        queries="grep-biasir",
        runs="bm25",
        cutoffs="5,10",
        bootstrap=20,
        name="lib",
        verbosity=0,
        stdout=io.StringIO(),
    )
    results = {(r.metric, r.variant, r.cutoff): r for r in Report.objects.get(name="lib").results.all()}
    reported = {}
    for text, key in MEASURES.items():
        result = results[key]
        reported[text] = (result.value, result.tie_low, result.tie_high)
    return Path(Collection.objects.get(name="grep-biasir").path), run, reported


@pytest.mark.django_db
def test_the_library_gives_the_reports_figures_and_tie_ranges(grep_biasir_report):
    collection, run, reported = grep_biasir_report
    figures = genderbias.calc_aggregate(list(MEASURES), run, collection)
    for text, (value, low, high) in reported.items():
        figure = figures[str(genderbias.parse_measure(text))]
        assert figure == pytest.approx(value, abs=1e-12), text
        # the report stores no range where no order of ties moves the mean; the library gives the figure there
        assert (figure.low, figure.high) == pytest.approx((low, high) if low is not None else (value, value)), text
    assert reported["ARaB@5"][1] < reported["ARaB@5"][0] < reported["ARaB@5"][2]  # ties decide ARaB@5 here


@pytest.mark.slow
@pytest.mark.django_db
def test_ir_measures_and_pyterrier_compute_the_bias_beside_ndcg(grep_biasir_report):
    import ir_measures
    import pandas as pd
    from ir_measures import nDCG

    collection, run, reported = grep_biasir_report
    qrels = list(ir_measures.read_trec_qrels(str(_qrels_file(collection.parent))))
    frame = genderbias.load_run(run).to_pandas()
    trec_run = frame.rename(columns={"qid": "query_id", "docid": "doc_id"})
    arab, nfairr = genderbias.measures_for(collection, measures=["ARaB", "NFaiRR"])
    together = ir_measures.calc_aggregate([nDCG @ 10, arab @ 5, nfairr @ 10], qrels, trec_run)
    assert together[nDCG @ 10] == pytest.approx(ir_measures.calc_aggregate([nDCG @ 10], qrels, trec_run)[nDCG @ 10])
    assert together[arab @ 5] == pytest.approx(reported["ARaB@5"][0], abs=1e-12)
    assert together[nfairr @ 10] == pytest.approx(reported["NFaiRR@10"][0], abs=1e-12)
    per_query = {m.query_id: m.value for m in ir_measures.iter_calc([arab @ 5], qrels, trec_run)}
    assert len(per_query) == 117

    pt = pytest.importorskip("pyterrier")

    class Ranked(pt.Transformer):  # a ranker's output as PyTerrier passes it on: no Java needed
        def transform(self, topics):
            return frame.rename(columns={"docid": "docno"}).merge(topics, on="qid")

    topics = pd.DataFrame({"qid": sorted(frame["qid"].unique()), "query": "unused"})
    labels = pd.DataFrame([(q.query_id, q.doc_id, q.relevance) for q in qrels], columns=["qid", "docno", "label"])
    table = pt.Experiment([Ranked()], topics, labels, eval_metrics=[nDCG @ 10, arab @ 5], names=["bm25"])
    assert table.loc[0, "ARaB@5"] == pytest.approx(reported["ARaB@5"][0], abs=1e-12)
    assert table.loc[0, "nDCG@10"] == pytest.approx(together[nDCG @ 10])


def _qrels_file(folder: Path) -> Path:
    """The judgments the platform imported with the set (written beside its collection)."""
    from pooling.models import Qrels

    return Path(Qrels.objects.get(name="grep-biasir").path)


#: The library's files: what `pip install` of the checkout reads (copied, so no build leaves files in the checkout).
LIBRARY_FILES = ("pyproject.toml", "genderbias", "docs/library.md")


def fresh_venv(where: Path) -> tuple[Path, float]:
    """A venv with nothing but the library installed from the checkout; ``(its python, seconds)``.
    ``GENDERBIAS_WHEELHOUSE``: a folder of the pinned wheels (``pip download``), installed offline."""
    source = where / "source"
    for name in LIBRARY_FILES:
        target = source / name
        target.parent.mkdir(parents=True, exist_ok=True)
        copy = shutil.copytree if (ROOT / name).is_dir() else shutil.copy
        copy(
            ROOT / name,
            target,
            **({"ignore": shutil.ignore_patterns("__pycache__")} if copy is shutil.copytree else {}),
        )
    started = time.monotonic()
    subprocess.run([sys.executable, "-m", "venv", str(where / "venv")], check=True)
    python = where / "venv" / "bin" / "python"
    wheels = os.environ.get("GENDERBIAS_WHEELHOUSE")
    offline = ["--no-index", "--find-links", wheels] if wheels else []
    done = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--no-compile", *offline, str(source)],  # as bin/_setup.sh
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert done.returncode == 0, done.stderr
    return python, time.monotonic() - started


PROBE = """
import importlib.resources, importlib.util, json, sys
import genderbias
figure = genderbias.calc_aggregate(["ARaB@5"], sys.argv[1], sys.argv[2])["ARaB@5"]
print(json.dumps({"django": importlib.util.find_spec("django") is not None,
                  "rest_framework": importlib.util.find_spec("rest_framework") is not None,
                  "celery": importlib.util.find_spec("celery") is not None,
                  "boto3": importlib.util.find_spec("boto3") is not None,
                  "typed": importlib.resources.files("genderbias").joinpath("py.typed").is_file(),
                  "figure": [figure, figure.low, figure.high]}))
"""


@pytest.mark.slow
@pytest.mark.django_db
def test_a_fresh_venv_with_the_library_alone_gives_the_reports_figure(grep_biasir_report, tmp_path_factory):
    collection, run, reported = grep_biasir_report
    python, seconds = fresh_venv(tmp_path_factory.mktemp("fresh"))
    print(f"fresh venv with the library installed in {seconds:.0f} s")
    done = subprocess.run(
        [str(python), "-c", PROBE, str(run), str(collection)], capture_output=True, text=True, cwd="/"
    )
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert not any(found[name] for name in ("django", "rest_framework", "celery", "boto3"))
    assert found["typed"], "the installed library has no py.typed (PEP 561): type checkers would ignore its hints"
    assert found["figure"] == pytest.approx(list(reported["ARaB@5"]), abs=1e-12)
