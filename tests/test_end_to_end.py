"""The researcher's whole path, as ``bin/demo`` runs it: pool -> annotate -> export -> measure."""

import csv
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from annotation.models import Batch, Hit
from metrics.models import Report
from pooling.models import Pool, Qrels, QuerySet


@pytest.mark.django_db
@pytest.mark.slow
def test_demo_runs_the_whole_path(settings, tmp_path):
    settings.VAR_DIR = tmp_path
    out = StringIO()
    call_command("demo", passages=3000, queries=200, create_demo_user=True, stdout=out)  # the suite: DEBUG off
    demo = Path(tmp_path) / "demo"

    pool = Pool.objects.get(name="demo-pool")
    assert pool.runs.count() == 3
    # Every run ranks all 200 queries; its female list (100 most negative) and male list
    # (100 most positive) are complementary, so depth 100 pools every query.
    assert pool.queries.queries.count() == 200

    # The demo batch and its HITs agree: a completed batch lists no open HIT.
    batch = Batch.objects.get(name="demo-batch")
    hit_statuses = set(batch.hits.values_list("status", flat=True))
    assert batch.status != Batch.Status.COMPLETED or hit_statuses == {Hit.Status.COMPLETE}
    assert Hit.Status.OPEN not in hit_statuses  # every HIT got all its simulated answers

    exported = QuerySet.objects.get(name="demo-non-gendered")
    exported_qids = set(exported.queries.values_list("qid", flat=True))
    assert exported_qids and exported_qids <= set(pool.queries.queries.values_list("qid", flat=True))
    lines = (demo / "non-gendered.tsv").read_text().splitlines()
    assert {line.split("\t")[0] for line in lines} == exported_qids

    with open(demo / "bias.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert set(rows[0]) == {
        "run",
        "metric",
        "variant",
        "cutoff",
        "value",
        "queries",
        "tie_low",
        "tie_high",
        "ties",
        "notes",
    }
    assert {r["ties"] for r in rows} == {"tie-aware"}  # the default order of tied documents
    assert {r["run"] for r in rows} == {"ranker-a", "ranker-b", "ranker-c"}
    assert {r["metric"] for r in rows} >= {"RaB", "ARaB", "NFaiRR", "TExFAIR"}
    assert (demo / "bias.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    # Effectiveness beside bias: the synthetic qrels judge every query, and the report holds the
    # default measures at 10 for every ranker, ranker-a (the most skilled by design) ahead.
    qrels = Qrels.objects.get(name="demo-qrels")
    assert qrels.queries == 200 and qrels.relevant >= 200
    report = Report.objects.get(query_set__name="demo-non-gendered")
    assert report.qrels == qrels and report.unjudged == []
    effect = {(r["run"], r["metric"]): float(r["value"]) for r in rows if r["variant"] == "demo-qrels"}
    assert {m for _, m in effect} == {"RR", "nDCG", "R", "P"}
    assert {r["cutoff"] for r in rows if r["variant"] == "demo-qrels"} == {"10"}
    assert effect["ranker-a", "nDCG"] > effect["ranker-b", "nDCG"] > effect["ranker-c", "nDCG"]
    assert report.results.filter(metric="nDCG", variant="demo-qrels").count() == 3
    printed = out.getvalue()
    assert "Effectiveness beside bias at rank 10" in printed and "nDCG@10" in printed and "ARaB[tf]" in printed
    # A study plan for the two most different rankers, and a report on the routed batch's labels.
    assert "with 80% power you need about" in printed and "Annotate about" in printed
    labelled = Report.objects.get(name="demo-machine-labels")
    assert labelled.on_batch and labelled.label_batch.name == "demo-machine"
    assert "With the labels' uncertainty" in printed and "with labels 95%" in printed
    assert labelled.results.exclude(combined_low=None).exists()
    # Every bias figure every demo report stores is the library's calc_aggregate of its measure string.
    for each in Report.objects.all():
        assert_the_library_gives(each)
    # It ends by writing the dataset folder and the paper bundle, and says where.
    dataset = demo / "dataset"
    assert str(dataset) in printed
    assert {"README.md", "croissant.json", "non_gendered.parquet"} <= {p.name for p in dataset.rglob("*")}
    paper = demo / "paper"
    assert f"Paper bundle of {report.name} in {paper}" in printed
    assert {"main.tex", "methods.tex", "references.bib", "table-ecir2024.tex"} <= {p.name for p in paper.iterdir()}

    # Running it again changes nothing and does not fail.
    call_command("demo", passages=3000, queries=200, create_demo_user=True, stdout=StringIO())
    assert Pool.objects.count() == 1


def assert_the_library_gives(report: Report) -> int:
    """Each bias figure ``report`` stores (value and tie range) equals ``genderbias.calc_aggregate`` of its
    measure string (the report's settings written as the measure's parameters) on the report's runs,
    their collection's texts and its queries (issue 83: one pipeline behind both). NFaiRR normalised by a
    background run is left out (the library takes none), and so is effectiveness (ir_measures' own).
    Returns how many figures were compared."""
    import math

    import genderbias
    from genderbias.api.notation import MEASURES
    from genderbias.text.wordlists import GenderWords
    from pooling.services import run_frame

    qids = list(report.query_set.queries.values_list("qid", flat=True))

    def words(record):
        female = frozenset(w for w, g in record.words.items() if g == "f")
        return GenderWords(female, frozenset(w for w, g in record.words.items() if g == "m"), record.name)

    compared = 0
    for run in report.runs.all():
        strings = {}
        for result in report.results.filter(run=run):
            kind = MEASURES.get(result.metric)
            if kind is None or (result.metric == "NFaiRR" and result.variant != "collection"):
                continue
            params = {
                name: result.variant if name in ("magnitude", "variant") else getattr(report, rule.name)
                for name, rule in kind.RULES.items()
                if name != "bound"
            }
            strings[str(kind(**params) @ result.cutoff)] = result
        frame = run_frame(run).filter(run_frame(run)["qid"].is_in(qids))
        figures = genderbias.calc_aggregate(
            list(strings), frame, Path(run.collection.path), wordlist=words(report.wordlist),
            representative=words(report.representative_wordlist),
        )  # fmt: skip
        for text, result in strings.items():
            figure = figures[genderbias.parse_measure(text)]
            if result.value is None:
                assert math.isnan(figure), (report.name, run.name, text)
                continue
            assert figure == pytest.approx(result.value, abs=1e-12), (report.name, run.name, text)
            low, high = (result.tie_low, result.tie_high) if result.tie_low is not None else (result.value,) * 2
            assert (figure.low, figure.high) == pytest.approx((low, high), abs=1e-12), (report.name, run.name, text)
            compared += 1
    assert compared, report.name
    return compared


@pytest.mark.django_db
def test_demo_with_debug_off_refuses_to_make_its_superuser_unless_told(settings, tmp_path):
    """Issue 44.5: ``manage.py demo`` with debug off (e.g. on PostgreSQL in production) silently created
    the superuser demo/demo. Refused before any work now, with what to pass."""
    from django.contrib.auth import get_user_model
    from django.core.management import CommandError

    from pooling.models import Collection

    settings.VAR_DIR, settings.DEBUG = tmp_path, False
    with pytest.raises(CommandError, match=r"DEBUG is off .*--create-demo-user .*--no-demo-user"):
        call_command("demo", passages=3000, queries=200, stdout=StringIO())
    assert not get_user_model().objects.filter(username="demo").exists()
    assert not Collection.objects.exists() and not (tmp_path / "demo").exists()  # nothing begun
    with pytest.raises(CommandError, match="not allowed with argument"):
        call_command("demo", "--create-demo-user", "--no-demo-user")
