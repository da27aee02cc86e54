"""methods.tex of a study with a pool and a machine labeller: the batch's real study facts, with the
pool's and the machine's facts in the shapes ``annotation.exports.selectors`` gives them
(``machine_facts`` itself makes the machine's), stated, cited and compiled."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from annotation.results.export_formats import machine_facts
from annotation.selectors import study_facts
from publishing.bibliography import bibtex, cited_keys
from publishing.latex import document
from publishing.methods_text import default_title, limitations_tex, methods_tex

DECISION = {
    "labeller": "rules",
    "model": "",
    "prompt_version": "v1",
    "threshold": 0.9,
    "target_accuracy": 0.95,
    "risk": 0.05,
    "conservative": False,
    "estimated_accuracy": 0.97,
    "accuracy_ci": [0.93, 0.99],
    "accepted": 120,
}
CALIBRATION = {"sample_batch": "mach-part-1", "n": 200, "accuracy": 0.955, "kappa": 0.9, "kappa_ci": [0.85, 0.94]}
CALIBRATION |= {"ece": 0.03, "brier": 0.08}
POOL = {
    "name": "sigir20",
    "source": "dev",
    "dataset": "msmarco-passage/dev/small",
    "runs": ["bm25", "bert_base"],
    "rank_cutoff": 10,
    "depth": 500,
    "magnitude": "tf",
    "tokenizer": "words",
    "wordlist": "genderspecific-32+32",
}
SETTINGS = {
    "report": "r",
    "query_set": "ng",
    "dataset_source": None,
    "queries": 2,
    "report_queries": 2,
    "runs": ["a", "c"],
    "metrics": ["RaB", "ARaB"],
    "cutoffs": [10],
    "tokenizer": "words",
    "wordlist": "genderspecific-32+32",
    "representative_wordlist": "representative-163+163",
    "threshold": 1.0,
    "nfairr_normalisation": "by the collection",
    "exposure_settings": "",
    "qrels": None,
    "measures": [],
    "unjudged": 0,
    "bootstrap_samples": 1000,
    "seed": 0,
    "policy": None,
    "on_batch": False,
    "software_version": "genderbias test",
}


def _deepest_parenthesis(text: str) -> int:
    depth = deepest = 0
    for char in text:
        depth += {"(": 1, ")": -1}.get(char, 0)
        deepest = max(deepest, depth)
    return deepest


@pytest.fixture
def facts(batch):
    facts = study_facts(batch)
    facts["machine"] = machine_facts(DECISION, CALIBRATION)
    facts["pool"] = POOL
    return facts


@pytest.mark.django_db
def test_pool_and_machine_are_stated_and_cited(facts):
    tex = methods_tex(facts, SETTINGS)
    assert r"pooled from the runs \texttt{bm25} and \texttt{bert\_base}" in tex
    assert "the 500 queries whose top 10 documents lean most female" in tex and "(MS MARCO \\cite{bajaj2016})" in tex
    assert "its labels at confidence 0.9 or above were accepted (120 queries)" in tex
    assert r"accuracy was 0.955 and Cohen's $\kappa$ \cite{cohen1960} 0.900 (95\% CI $[0.850, 0.940]$)" in tex
    assert (
        r"On its blind calibration sample \texttt{mach-part-1} (200 queries labelled by the crowd), the machine's"
        in tex
    )
    assert _deepest_parenthesis(tex) == 1 and tex.count("fixed-sequence") == 1
    fair = SETTINGS | {
        "metrics": ["NFaiRR", "TExFAIR"],
        "nfairr_normalisation": "by the collection (Σ w_r over the cutoff)",
    }
    assert _deepest_parenthesis(methods_tex(facts, fair)) == 1
    assert "expected calibration error 0.030, Brier score 0.080" in tex
    # The guarantee in machine_facts' own words, its signs as LaTeX, with the method cited.
    assert r"with probability $\geq$ 0.95 (1 $-$ $\delta$) over the blind sample" in tex
    assert r"\cite{angelopoulos2021ltt}" in tex and r"\cite{angelopoulos2023ppi}" in tex
    # The shares are PPI++ estimates (genderbias.machine.proportions): cited as such.
    assert r"PPI++ \cite{angelopoulos2023ppiplus}" in tex and "2311.01453" in bibtex(cited_keys(tex))
    assert r"estimated accuracy is 0.970 (95\% CI $[0.930, 0.990]$)" in tex
    # Only the metrics the report holds: no NFaiRR, no test without a baseline.
    assert "rekabsaz2021" not in tex and "holm1979" not in tex and "student1908" not in tex


@pytest.mark.django_db
def test_point_estimate_routing_promises_nothing_and_cites_no_guarantee(facts):
    facts["machine"] = machine_facts({**DECISION, "risk": None}, None)
    tex = methods_tex(facts, SETTINGS)
    assert "Guarantee: no guarantee (point estimate)." in tex
    assert not {"angelopoulos2021ltt", "angelopoulos2023ppi", "cohen1960"} & set(cited_keys(tex))


@pytest.mark.django_db
@pytest.mark.skipif(shutil.which("pdflatex") is None, reason="pdflatex is not installed (texlive-latex-recommended)")
def test_the_paragraph_compiles(facts, tmp_path):
    tex = methods_tex(facts, SETTINGS)
    (tmp_path / "methods.tex").write_text(tex)
    (tmp_path / "references.bib").write_text(bibtex(cited_keys(tex)))
    (tmp_path / "main.tex").write_text(document("Methods only", [], []))
    latex = ["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "main.tex"]
    for step in (latex, ["bibtex", "main"], latex, latex):
        if shutil.which(step[0]):
            done = subprocess.run(step, cwd=tmp_path, capture_output=True, text=True, timeout=120)
            assert done.returncode == 0, done.stdout[-2000:]
    assert "undefined" not in (tmp_path / "main.log").read_text(errors="replace").lower()


@pytest.mark.django_db
def test_a_machine_labelled_batch_is_described_by_its_label_sources(facts):
    """200 queries: 80 machine-accepted, the 120 others to the crowd (119 labelled by plurality, 1
    disputed). The crowd did not label every query, the machine's labels are no vote, and the cost is
    what was spent, never the all-crowd estimate of the batch's creation."""
    facts["labels"] |= {
        "queries": 200,
        "labelled": 199,
        "sources": {"machine-accepted": 80, "crowd majority": 119},
        "adjudicated": 0,
        "set_aside": {"disputed": 1, "too_few_votes": 0},
    }
    facts["batch"] |= {"cost": {"total": "30.00"}, "spent": "12.40", "min_votes": 2}
    tex = methods_tex(facts, SETTINGS)
    assert "Each of the 200 queries" not in tex and "majority vote" not in tex and "30.00" not in tex
    assert "The 120 queries that went to the crowd were each labelled as non-gendered" in tex
    assert "12.40 USD spent in all" in tex
    assert "A crowd label is the strict plurality of at least 2 usable votes" in tex
    assert "a machine-accepted label stands as the machine gave it" in tex
    assert (
        "Of the 200 queries, 199 were labelled (119 by the crowd's plurality, 80 machine-accepted, "
        "1 set aside as disputed)." in tex
    )
    del facts["batch"]["spent"]  # without what was spent: no figure for a machine-labelled batch
    assert "USD spent" not in methods_tex(facts, SETTINGS) and "30.00" not in methods_tex(facts, SETTINGS)
    facts["machine"] = None
    assert "estimated cost at creation 30.00 USD" in methods_tex(facts, SETTINGS)


def test_the_label_sources_are_annotations():
    from annotation.results.selectors.labels import SOURCES
    from publishing.methods_text import SOURCE_ORDER

    assert SOURCE_ORDER == SOURCES


@pytest.mark.django_db
def test_escalation_is_stated_as_it_works(facts):
    """The cap is the assignments a task (HIT) may reach in all, and a round adds an assignment to the
    whole task; with ``posterior:P`` a query is settled by Dawid–Skene's posterior, not a majority."""
    facts["quality"] |= {"escalate_until": "posterior:0.9", "escalation_cap": 7, "escalations": 3}
    tex = methods_tex(facts, SETTINGS)
    assert "up to 7 more" not in tex and "disputed queries were sent" not in tex
    assert (
        "a task with an unsettled query was given one more assignment per round (every query of the task gets a "
        "vote more) until Dawid--Skene's largest posterior \\cite{dawid1979} for it reached 0.9 or the task had "
        "7 assignments in all (3 escalations applied)"
    ) in tex
    facts["quality"] |= {"escalate_until": "majority", "escalations": 1}
    assert "until it had a strict majority or the task had 7 assignments in all (1 escalation applied)" in (
        methods_tex(facts, SETTINGS)
    )


@pytest.mark.django_db
def test_no_certified_threshold_is_never_called_certified(facts):
    facts["machine"] = machine_facts({**DECISION, "threshold": None, "accepted": 0, "estimated_accuracy": None,
                                      "accuracy_ci": None}, CALIBRATION)  # fmt: skip
    tex = methods_tex(facts, SETTINGS)
    assert "Guarantee: no threshold could be certified" in tex and "certified by" not in tex
    assert "angelopoulos2021ltt" not in cited_keys(tex)


@pytest.mark.django_db
def test_wording_agrees_in_number_and_states_the_rules(facts):
    facts["quality"] |= {"gold_per_hit": 2, "gold_pass_fraction": 0.5}
    facts["prolific"] = {"filters": [{"filter_id": "sex", "selected_values": ["0", "1"]}], "devices": None}
    settings = SETTINGS | {"cutoffs": [10], "qrels": "judged", "measures": ["nDCG@10"], "unjudged": 1}
    tex = methods_tex(facts, settings)
    assert "(1 screener)" in tex and "at cutoff 10," in tex and "the 1 unjudged query is left out" in tex
    assert "2 gold questions per task (a task passes with at least 50.0\\% of them right; a failed task's " in tex
    assert "answers are not counted)" in tex and "majority vote" not in tex
    tex = methods_tex(facts, SETTINGS | {"cutoffs": [5, 10], "unjudged": 2, "qrels": "j", "measures": ["MRR"]})
    assert "at cutoffs 5 and 10," in tex and "the 2 unjudged queries are left out" in tex


def test_ms_marco_is_cited_from_a_dataset_source_only():
    """A query set merely named msmarco is no evidence; an ir_datasets source is (the collection's too)."""
    given = SETTINGS | {"query_set": "msmarco-dev", "dataset_source": None, "collections": [{"name": "c"}]}
    tex = methods_tex(None, given)
    assert "bajaj2016" not in cited_keys(tex) and r"rank the passages of the collection \texttt{c}." in tex
    source = "ir_datasets:msmarco-passage (ir_datasets 0.5.9)"
    tex = methods_tex(None, given | {"collections": [{"name": "c", "dataset_source": source}, {"name": "d"}]})
    assert cited_keys(tex).count("bajaj2016") == 1
    # A long name is set with break points (after "_", "-", "." and inside long words): read without them.
    read = tex.replace(r"\allowbreak{}", "").replace(r"\discretionary{-}{}{}", "")
    assert (
        r"collections \texttt{c} (from \texttt{ir\_datasets:msmarco-passage} \cite{bajaj2016}) and \texttt{d}." in read
    )


def test_every_bibliography_entry_has_a_doi_or_url_and_every_cited_key_resolves():
    """An entry a reviewer cannot look up is a finding; so is a ``\\cite`` that would print [?]."""
    from publishing.bibliography import ENTRIES

    for key, entry in ENTRIES.items():
        assert entry.startswith("@") and f"{{{key}," in entry.splitlines()[0], key
        assert re.search(r"^\s*(doi|url)\s*=\s*\{[^}]+\}", entry, re.MULTILINE), f"{key} has neither doi nor url"
        doi = re.search(r"^\s*doi\s*=\s*\{([^}]+)\}", entry, re.MULTILINE)
        assert doi is None or re.fullmatch(r"10\.\d{4,9}/\S+", doi.group(1)), (key, doi and doi.group(1))
    # TExFAIR is in ECIR 2024 Part V (LNCS 14612): the DOI and volume the publisher's record gives.
    assert "10.1007/978-3-031-56069-9_1" in ENTRIES["abolghasemi2024"] and "{14612}" in ENTRIES["abolghasemi2024"]
    # Holm 1979's JSTOR id is no DOI that resolves (issue 54): its stable JSTOR address instead.
    assert "doi" not in ENTRIES["holm1979"] and "https://www.jstor.org/stable/4615733" in ENTRIES["holm1979"]


@pytest.mark.django_db
def test_every_key_the_bundle_texts_cite_resolves(facts):
    from publishing.latex_tables import uncertainty_tex

    settings = SETTINGS | {
        "metrics": ["RaB", "NFaiRR", "TExFAIR", "AWRF", "rKL"],
        "policy": {"test": "two-sided paired t-test", "family": "f", "correction": "Holm", "alpha": 0.05, "baseline": "a"},
        "exposure_settings": "AWRF with dcg weights",
        "qrels": "q",
        "measures": ["nDCG@10"],
    }  # fmt: skip
    texts = [methods_tex(facts, settings), limitations_tex(facts, settings), uncertainty_tex([], 10, "a")]
    keys = cited_keys(*texts)
    assert {"holm1979", "efron1979", "krippendorff2018"} <= set(keys)
    assert len(re.findall(r"^@", bibtex(keys), re.MULTILINE)) == len(keys)  # one entry per key, none missing


@pytest.mark.django_db
def test_limitations_state_the_studys_own_figures(facts):
    labels = facts["labels"]
    tex = limitations_tex(facts, SETTINGS | {"qrels": "q", "unjudged": 1, "report_queries": 2})
    alpha = facts["agreement"]["krippendorff_alpha"]
    if alpha is not None:
        assert f"$\\alpha = {alpha:.3f}$" in tex
    total, disputed = labels["queries"], labels["set_aside"]["disputed"]
    assert f"{disputed} of the {total} queries ({100 * disputed / total:.1f}\\%) were set aside as disputed" in tex
    machine = (labels.get("sources") or {}).get("machine-accepted", 0)
    assert f"{machine} of the {labels['labelled']} labels" in tex and "fixed-sequence" in tex  # its guarantee
    assert "1 of the 2 queries have no relevance judgments" in tex
    assert "the queries' sampling only" in tex  # not a report on the batch's labels
    assert "carry the labels' uncertainty as well" in limitations_tex(facts, SETTINGS | {"on_batch": True})
    given = limitations_tex(None, SETTINGS)
    assert "were given" in given and "Krippendorff" not in given


def test_the_default_title_is_the_studys_not_the_reports_id():
    settings = SETTINGS | {"report": "rep-2024-07-x1", "export": {"category": "non-gendered", "queries": 2}}
    title = default_title({"source_dataset": "msmarco-passage/dev/small"}, settings)
    assert title == "Gender Bias in the Rankings of Two Retrieval Runs on 2 non-gendered MS MARCO Queries"
    # One run in the singular; a named set by its name; many runs in figures.
    one = default_title(None, SETTINGS | {"runs": ["a"], "named_set": {"short": "Grep-BiasIR"}, "report_queries": 117})
    assert (
        "rep-2024" not in title and one == "Gender Bias in the Rankings of One Retrieval Run on 117 Grep-BiasIR Queries"
    )
    many = default_title(None, SETTINGS | {"runs": [str(i) for i in range(12)], "report_queries": 1})
    assert many.startswith("Gender Bias in the Rankings of 12 Retrieval Runs on 1 ") and many.endswith(" Query")


def test_subscripted_symbols_are_set_as_math():
    tex = methods_tex(
        None, SETTINGS | {"metrics": ["NFaiRR"], "nfairr_normalisation": "by the collection (Σ w_r over the cutoff)"}
    )
    assert r"$\Sigma$ $w_{r}$ over the cutoff" in tex and r"w\_r" not in tex
