"""Tied documents in stored reports: the ``ties`` choice through the command, the page's form and
the API; the report naming its ties (counts per cutoff, ranges, the warning when a range holds 0);
and the paper presets' settings on hand-made passages (expected values written out from the
definitions with the reference code's tokenizer, ``text.lower().split(" ")``)."""

import csv
import io
import math

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse

from core.options import PRESET_OPTION, TIES_OPTION
from genderbias.presets import PRESETS
from metrics.models import Report, Result

LN4 = math.log(4)
PASSAGES = {
    "d1": "She and her sister",  # f = 3 (her, she, sister)
    "d2": "He met his father",  # m = 3
    "d3": "nothing gendered here",
    "d4": "the man and the woman",  # f = 1, m = 1
    "d5": "his, father. he",  # words: m = 3; whitespace ("his,", "father.", "he"): m = 1
}
QUERIES = {"1": "who is she", "2": "what is a synapse", "3": "who is he"}
# (docid, score) in file order: query 1 ties d1 and d2 at the top, query 2 ties d3 and d4 at the top;
# query 3 has no tie
TIED = {"1": [("d1", 5.0), ("d2", 5.0), ("d3", 1.0)], "2": [("d3", 4.0), ("d4", 4.0)], "3": [("d2", 2.0), ("d5", 1.0)]}
PLAIN = {"1": [("d3", 3.0), ("d1", 2.0)], "2": [("d5", 3.0), ("d4", 1.0)], "3": [("d5", 2.0), ("d2", 1.0)]}


@pytest.fixture
def tied_world(db, tmp_path):
    collection = tmp_path / "collection.tsv"
    collection.write_text("".join(f"{pid}\t{text}\n" for pid, text in PASSAGES.items()))
    queries = tmp_path / "queries.tsv"
    queries.write_text("".join(f"{qid}\t{text}\n" for qid, text in QUERIES.items()))
    call_command("import_collection", str(collection), name="tiny", verbosity=0)
    call_command("import_queries", str(queries), name="q", verbosity=0)
    for name, rankings in (("tied", TIED), ("plain", PLAIN)):
        path = tmp_path / f"{name}.trec"
        path.write_text(
            "".join(
                f"{qid} Q0 {doc} {rank} {score} tag\n"
                for qid, docs in rankings.items()
                for rank, (doc, score) in enumerate(docs, 1)
            )
        )
        call_command("import_run", str(path), name=name, collection="tiny", order="file", verbosity=0)
    return tmp_path


def report_command(tmp_path, **options):
    out, stdout = tmp_path / "results.csv", io.StringIO()
    options = {"queries": "q", "runs": "tied,plain", "cutoffs": "1,2", "bootstrap": 10, **options}
    call_command("bias_report", out=str(out), verbosity=0, stdout=stdout, **options)
    rows = list(csv.DictReader(io.StringIO(out.read_text())))
    return stdout.getvalue(), {(r["run"], r["metric"], r["variant"], r["cutoff"]): r for r in rows}


def result(run, metric, variant, cutoff):
    return Result.objects.get(run__name=run, metric=metric, variant=variant, cutoff=cutoff)


@pytest.mark.django_db
def test_the_report_is_tie_aware_by_default_and_names_its_ties(tied_world):
    text, rows = report_command(tied_world, name="r")
    report = Report.objects.get(name="r")
    assert report.ties == "tie-aware" == TIES_OPTION.default
    # RaB@1 [tf]: query 1 is d1 (−ln 4) or d2 (+ln 4), mean 0; query 2 d3 or d4, 0 either way; query 3 d2 (+ln 4)
    rab = result("tied", "RaB", "tf", 1)
    assert rab.value == pytest.approx(LN4 / 3, abs=1e-12)
    assert (rab.tie_low, rab.tie_high) == (pytest.approx(0.0, abs=1e-12), pytest.approx(2 * LN4 / 3, abs=1e-12))
    # RaB@2 holds both tied documents whatever their order: no range
    assert result("tied", "RaB", "tf", 2).tie_low is None
    assert result("plain", "RaB", "tf", 1).tie_low is None
    assert report.tied_queries == {"tied": {"1": 2, "2": 2}, "plain": {"1": 0, "2": 0}}
    assert "Tied documents: tie-aware" in text and "effectiveness follows trec_eval" in text
    assert "Queries whose top k holds a tied document, tied of 3: @1: 2, @2: 2." in text
    assert "tied RaB [tf] @1: 0.4621 (0.0000 … 0.9242)  ! holds 0" in text
    row = rows[("tied", "RaB", "tf", "1")]
    assert row["ties"] == "tie-aware" and float(row["tie_high"]) == pytest.approx(2 * LN4 / 3)
    assert rows[("plain", "RaB", "tf", "1")]["tie_low"] == ""


@pytest.mark.django_db
@pytest.mark.parametrize(("ties", "expected"), [("trec_eval", 2 * LN4 / 3), ("file", 0.0)])
def test_trec_eval_and_file_orders_of_ties(tied_world, ties, expected):
    # trec_eval: docid descending puts d2 (+ln 4) first in query 1; the file puts d1 (−ln 4) first
    _, rows = report_command(tied_world, name=f"r-{ties.replace('_', '-')}", ties=ties)
    assert Report.objects.get().ties == ties
    assert result("tied", "RaB", "tf", 1).value == pytest.approx(expected, abs=1e-12)
    # the range over orders of ties is the run's, whichever order the values took
    assert result("tied", "RaB", "tf", 1).tie_high == pytest.approx(2 * LN4 / 3, abs=1e-12)
    assert rows[("tied", "RaB", "tf", "1")]["ties"] == ties


@pytest.mark.django_db
def test_a_bad_order_of_ties_is_refused_by_the_command(tied_world):
    with pytest.raises(CommandError, match="ties"):
        call_command("bias_report", queries="q", runs="tied", ties="random", verbosity=0)


@pytest.mark.django_db
def test_page_and_api_take_the_order_of_ties_and_show_it(tied_world, django_capture_on_commit_callbacks, admin_client):
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(
            reverse("metrics:report-create"),
            {
                "name": "page",
                "queries": "q",
                "runs": ["tied"],
                "cutoffs": "1,2",
                "tokenizer": "words",
                "ties": "trec_eval",
            },
        )
    assert response.status_code in (200, 302), response.content[:500]
    assert Report.objects.get(name="page").ties == "trec_eval"
    page = admin_client.get(reverse("metrics:report-detail", args=["page"])).content.decode()
    assert "trec_eval&#x27;s order" in page and "⚠" in page and 'id="ties-warning"' in page
    refused = admin_client.post(
        "/api/metrics/reports/",
        {"name": "api", "queries": "q", "runs": ["tied"], "ties": "random"},
        content_type="application/json",
    )
    assert refused.status_code == 400 and "ties" in refused.json()
    with django_capture_on_commit_callbacks(execute=True):
        started = admin_client.post(
            "/api/metrics/reports/",
            {"name": "api", "queries": "q", "runs": ["tied"], "cutoffs": "1"},
            content_type="application/json",
        )
    assert started.status_code == 202, started.content
    detail = admin_client.get("/api/metrics/reports/api/").json()
    assert detail["ties"] == "tie-aware" and detail["tied_queries"] == {"tied": {"1": 2}}
    rab = next(r for r in detail["results"] if (r["metric"], r["variant"], r["cutoff"]) == ("RaB", "tf", 1))
    assert rab["tie_low"] == pytest.approx(0.0, abs=1e-12) and rab["tie_high"] == pytest.approx(2 * LN4 / 3)


def test_every_shell_reads_the_one_declaration():
    from metrics.api import ReportRequestSerializer
    from metrics.forms import ReportForm

    form = ReportForm()
    serializer = ReportRequestSerializer()
    for option in (TIES_OPTION, PRESET_OPTION):
        assert [v for v, _ in form.fields[option.name].choices if v] == option.values
        assert list(serializer.fields[option.name].choices) == option.values
        assert Report._meta.get_field(option.name).choices == list(option.choices)
        assert Report._meta.get_field(option.name).help_text == option.help


# --- presets -------------------------------------------------------------------------------


@pytest.mark.django_db
def test_preset_sigir2020_sets_the_reference_code_and_says_so(tied_world):
    text, _ = report_command(tied_world, name="p", preset="sigir2020", runs="plain", tokenizer="words", cutoffs="3")
    report = Report.objects.get(name="p")
    assert report.preset == "sigir2020"
    assert (report.tokenizer, report.ties, report.cutoffs) == ("whitespace", "file", [5, 10, 20, 30])
    assert report.wordlist.name.startswith("genderspecific")
    for line in ["tokenizer whitespace", "ties file", "cutoffs 5,10,20,30", "32 + 32 definitional words"]:
        assert line in text
    # query 2 ranks d5 first: whitespace tokens "his," and "father." are not words of the list, "he" is: m = 1
    rab = Result.objects.get(run__name="plain", metric="RaB", variant="tf", cutoff=5)
    query_2 = (math.log(1 + 1) + 0.0) / 2  # d5 (m = 1), then d4 (f = 1 "woman", m = 1 "man")
    query_1 = (0.0 - LN4) / 2  # d3, then d1 ("she", "her", "sister": f = 3)
    query_3 = (math.log(2) + LN4) / 2  # d5, then d2 ("he", "his", "father": m = 3)
    assert rab.value == pytest.approx((query_1 + query_2 + query_3) / 3, abs=1e-12)
    assert "Effectiveness and rank bias (Rekabsaz & Schedl, SIGIR 2020, Table 3)" in text


@pytest.mark.django_db
@pytest.mark.parametrize("preset", ["sigir2021", "ecir2024"])
def test_nfairr_presets_need_the_bm25_background_and_set_the_exact_normaliser(tied_world, preset):
    with pytest.raises(CommandError, match="background"):
        report_command(tied_world, name="p", preset=preset, runs="plain")
    text, _ = report_command(tied_world, name="p", preset=preset, runs="plain", background="tied", threshold=3)
    report = Report.objects.get(name="p")
    assert (report.nfairr_normaliser, report.threshold, report.cutoffs) == ("exact", 1.0, [10, 20])
    assert (report.tokenizer, report.ties) == ("whitespace", "file")
    representative = PRESETS[preset].rank_bias_words == "representative"
    assert report.wordlist.name.startswith("representative") == representative
    assert "NFaiRR's τ = 1" in text and "NFaiRR normaliser exact" in text
    # NFaiRR@10 of query 3 under the exact normaliser, by hand: plain ranks d5 (whitespace: "he" only,
    # one word ≤ τ: neutral, ω 1) then d2 ("he", "his", "father": one-sided, ω 0); the background (tied)
    # offers d2 and d5 for query 3, best order d5, d2: IFaiRR = 1, FaiRR = 1
    nfairr = Result.objects.get(run__name="plain", metric="NFaiRR", cutoff=10)
    assert nfairr.variant == "tied:exact"
    per_query = {
        row["qid"]: row["value"]
        for row in admin_per_query(report)
        if (row["run"], row["metric"], row["cutoff"]) == ("plain", "NFaiRR", 10)
    }
    assert per_query["3"] == pytest.approx(1.0, abs=1e-12)


def admin_per_query(report):
    from metrics.selectors import report_per_query

    return report_per_query(report).to_dict("records")


@pytest.mark.django_db
@pytest.mark.slow
def test_methods_text_and_bundle_state_the_order_of_ties_and_the_preset(tied_world):
    from publishing.services.paper import paper_files

    report_command(tied_world, name="m")
    files = paper_files(Report.objects.get(name="m"), screenshots=False)
    methods = files["methods.tex"].decode()
    assert "expectation over all orders of tied documents" in methods and "\\cite{mcsherry2008}" in methods
    assert "\\texttt{tied} 2 at 1 and 2 at 2" in methods
    assert "@inproceedings{mcsherry2008" in files["references.bib"].decode()
    report_command(tied_world, name="n", preset="sigir2020", runs="plain")
    methods = paper_files(Report.objects.get(name="n"), screenshots=False)["methods.tex"].decode()
    assert "taken in the runs' own order" in methods and "preset \\texttt{sigir2020}" in methods


@pytest.mark.django_db
def test_a_tie_group_crossing_the_depth_is_read_whole_from_a_run_stored_by_score(tied_world):
    # stored by score (ties by docid descending: d4, d3, d2 at ranks 2..4), the deepest cutoff 2:
    # the group's third member, at rank 4, is past depth + 1 and must still be averaged over
    path = tied_world / "score.trec"
    path.write_text("1 Q0 d1 1 5.0 t\n1 Q0 d2 2 3.0 t\n1 Q0 d3 3 3.0 t\n1 Q0 d4 4 3.0 t\n1 Q0 d5 5 1.0 t\n")
    call_command("import_run", str(path), name="score", collection="tiny", verbosity=0)
    report_command(tied_world, name="s", runs="score")
    # RaB@2 = (v(d1) + mean(v(d2), v(d3), v(d4))) / 2 = (−ln 4 + ln 4 / 3) / 2
    assert result("score", "RaB", "tf", 2).value == pytest.approx((-LN4 + LN4 / 3) / 2, abs=1e-12)
    assert result("score", "RaB", "tf", 2).tie_high == pytest.approx((-LN4 + LN4) / 2, abs=1e-12)
