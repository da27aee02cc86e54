"""``genderbias.datasets``: the bundled sets are the published files, and ``load`` gives what they hold, read here
independently from the reference copies (../shared/reference) with pandas and plain line scans."""

import filecmp

import pandas as pd
import pytest

from genderbias import datasets
from genderbias.datasets import DATA_DIR, NAMED_SETS

GREP_CATEGORIES = (
    "Appearance",
    "Career",
    "Child Care",
    "Cognitive Capabilities",
    "Domestic Work",
    "Physical Capabilities",
    "Sex & Relationship",
)
GREP_FILES = ["queries.csv", "LICENSE", *[f"queries-documents_{c}.csv" for c in GREP_CATEGORIES]]


def test_bundled_files_are_the_references_with_their_licences(reference_dir):
    for name in GREP_FILES:
        assert filecmp.cmp(DATA_DIR / "grep-biasir" / name, reference_dir / "grep-biasir" / name, shallow=False), name
    for name in (
        "LICENSE",
        "msmarco_passage.dev.fair.FULL_ANNOTATION.tsv",
        "trecdeep19_passage.fair.FULL_ANNOTATION.tsv",
    ):
        assert filecmp.cmp(DATA_DIR / "cpjku-fair" / name, reference_dir / "cpjku-fair" / name, shallow=False), name
    assert filecmp.cmp(
        DATA_DIR / "rekabsaz-3750" / "queries_gender_annotated.csv",
        reference_dir / "queries_gender_annotated.csv",
        shallow=False,
    )
    assert "CC0 1.0 Universal" in (DATA_DIR / "grep-biasir" / "LICENSE").read_text()
    assert "MIT License" in (DATA_DIR / "rekabsaz-3750" / "LICENSE").read_text()


def test_load_grep_biasir_gives_its_queries_documents_and_judgments(reference_dir):
    loaded = datasets.load("grep-biasir")
    queries = pd.read_csv(reference_dir / "grep-biasir" / "queries.csv", dtype=str)
    documents = pd.concat(
        [pd.read_csv(reference_dir / "grep-biasir" / f"queries-documents_{c}.csv", dtype=str) for c in GREP_CATEGORIES],
        ignore_index=True,
    )
    assert sorted(loaded.queries["qid"]) == sorted(queries["q_id"].str.strip())
    assert len(loaded.queries) == NAMED_SETS["grep-biasir"].queries == 117
    assert sorted(loaded.documents["docid"]) == sorted(documents["d_id"].str.strip())
    assert len(loaded.documents) == 702
    # The judgments are the documents' own relevance, one row each, as the files give it.
    given = dict(zip(documents["d_id"].str.strip(), documents["relevant"].astype(int), strict=True))
    assert dict(zip(loaded.qrels["docid"], loaded.qrels["relevance"], strict=True)) == given
    assert list(loaded.qrels.columns) == ["qid", "docid", "relevance"]
    # F/M/N wordings; "both" (and its typo) is no wording, and each such document is noted with its file and line.
    gender = documents["content_gender"].str.strip()
    assert (loaded.documents["wording"] == "").sum() == (~gender.isin(["F", "M", "N"])).sum() > 0
    assert any("content_gender" in note or "both" in note for note in loaded.notes)


def test_load_the_labelled_and_the_bias_sensitive_queries(reference_dir):
    labelled = datasets.load("rekabsaz-3750")
    expected = {}
    for line in (reference_dir / "queries_gender_annotated.csv").read_text(encoding="utf-8").splitlines():
        qid, rest = line.split(",", 1)
        text, label = rest.rsplit(",", 1)
        expected[qid] = (text.strip(), label.strip())
    rows = labelled.queries
    assert {q: (t, lab) for q, t, lab in rows[["qid", "text", "label"]].itertuples(index=False)} == expected
    assert labelled.documents.empty and labelled.qrels.empty
    for name, count in (("cpjku-msmarco", 215), ("cpjku-trecdl", 30)):
        loaded = datasets.load(name)
        assert len(loaded.queries) == count and (loaded.queries["categories"] != "").any(), name


def test_an_unknown_set_is_refused_naming_the_known_ones():
    with pytest.raises(KeyError, match="grep-biasir"):
        datasets.load("no-such-set")
