"""A named set's source, licence and citation travel into what is made from it: the export's
dataset card (and the Hub card's terms), the paper bundle's methods and references."""

import io
import re
from decimal import Decimal

import pytest
from django.core.management import call_command

from pooling.models import Collection, QuerySet
from pooling.services import import_run

LICENCE = "CC0-1.0"


@pytest.fixture
def grep(db, reference_dir, tmp_path):
    call_command("import_named_set", "grep-biasir", stdout=io.StringIO())
    # The reference's own licence line, read here: the set is CC0 1.0.
    assert "CC0 1.0 Universal" in (reference_dir / "grep-biasir" / "LICENSE").read_text()
    lines = []
    query_set = QuerySet.objects.get(name="grep-biasir")
    docids = Collection.objects.get(name="grep-biasir")
    for n, qid in enumerate(query_set.queries.values_list("qid", flat=True)[:20]):
        lines += [f"{qid} Q0 {d} {r} {10 - r} bm25\n" for r, d in enumerate((str(6 * n), str(6 * n + 1)), 1)]
    path = tmp_path / "run.trec"
    path.write_text("".join(lines))
    return import_run(path, "grep-run", docids).obj


@pytest.mark.slow
def test_paper_bundle_cites_the_set_with_its_licence(grep):
    from metrics.services import build_report
    from publishing.services.paper import paper_files

    report = build_report("grep-report", QuerySet.objects.get(name="grep-biasir"), [grep])
    files = paper_files(report, screenshots=False)
    # Long names are set breakable (publishing.latex.breakable): read without the break points.
    methods = files["methods.tex"].decode().replace(r"\allowbreak{}", "").replace(r"\discretionary{-}{}{}", "")
    assert "Grep-BiasIR \\cite{krieg2023grep}" in methods
    assert "KlaraKrieg/GrepBiasIR@ed44a46" in methods and f"licence {LICENCE}" in methods
    bib = files["references.bib"].decode()
    assert "@inproceedings{krieg2023grep," in bib and "10.1145/3576840.3578295" in bib
    cited = set(re.findall(r"\\cite\{([^}]*)\}", methods))
    assert "krieg2023grep" in cited


def test_export_card_states_source_licence_and_citation(grep, tmp_path):
    from annotation import services as annotation_services
    from annotation.exports.services import export_queries

    options = {"provider": "local", "assignments_per_query": 1, "queries_per_hit": 5, "reward": Decimal("0.05")}
    batch = annotation_services.create_batch(
        "grep-batch", annotation_services.BatchSettings(**options), query_set=QuerySet.objects.get(name="grep-biasir")
    )
    export = export_queries(batch, "all", tmp_path / "grep.tsv")
    card = export.card
    assert "KlaraKrieg/GrepBiasIR@ed44a46" in card and f"licence {LICENCE}" in card
    assert "@inproceedings{krieg2023grep," in card
    from annotation.exports.selectors import study_facts
    from publishing.statements import source_terms

    terms = source_terms(study_facts(batch))
    assert "Grep-BiasIR" in terms and LICENCE in terms and "krieg2023grep" in terms
