"""Export writers: formula neutralising, round trips through real parsers, atomic replacement."""

from __future__ import annotations

import csv
import json
from decimal import Decimal

import numpy as np
import pytest

from annotation.crowd.costs import per_assignment_fees
from annotation.results.export_formats import (
    dataset_card,
    write_dataset_card,
    write_jsonl,
    write_labelled_csv,
    write_tsv,
)
from core.spreadsheet import neutralise_formula

TRICKY_ROWS = [
    {"qid": "1", "query": "what is a nurse, and what does she do", "label": "f"},
    {"qid": "2", "query": 'he said "hello", then left', "label": "m"},
    {"qid": "3", "query": "tab\there and\nnewline", "label": "n"},
    {"qid": "4", "query": '=HYPERLINK("http://x")', "label": "o"},
    {"qid": "5", "query": "-1 degrees celsius", "label": "n"},
    {"qid": "6", "query": "@mention of a king", "label": "m"},
    {"qid": "7", "query": "café ünïcode", "label": "n"},
]


def only_file(directory):
    """Every entry in the directory: an atomic writer must leave exactly its target behind."""
    return sorted(p.name for p in directory.iterdir())


@pytest.mark.parametrize("cell", ["=1+2", "+1", "-1", "@SUM(A1)", "\tx", "\rx"])
def test_formula_cells_get_a_quote_prefix(cell):
    assert neutralise_formula(cell) == "'" + cell


@pytest.mark.parametrize("cell", ["what is 1+1", "a=b", "", "'quoted", " =1", "him-her"])
def test_harmless_cells_are_unchanged(cell):
    assert neutralise_formula(cell) == cell


def test_tsv_round_trip(tmp_path):
    path = tmp_path / "queries.tsv"
    write_tsv(TRICKY_ROWS, path)
    lines = path.read_text(encoding="utf-8").split("\n")
    assert lines[-1] == "" and len(lines) == len(TRICKY_ROWS) + 1, "one line per row, newline-terminated"
    parsed = [line.split("\t") for line in lines[:-1]]
    assert all(len(fields) == 2 for fields in parsed)
    queries = dict(parsed)
    assert queries["1"] == "what is a nurse, and what does she do"
    assert queries["2"] == 'he said "hello", then left'
    assert queries["3"] == "tab here and newline"
    # Verbatim: rankers read this file (formulas are neutralised in the CSV, for people).
    assert queries["4"] == '=HYPERLINK("http://x")'
    assert queries["5"] == "-1 degrees celsius"
    assert queries["6"] == "@mention of a king"
    assert queries["7"] == "café ünïcode"
    assert only_file(tmp_path) == ["queries.tsv"]


def test_csv_round_trip(tmp_path):
    path = tmp_path / "queries.csv"
    write_labelled_csv(TRICKY_ROWS, path)
    with path.open(encoding="utf-8", newline="") as handle:
        parsed = list(csv.reader(handle))
    assert parsed[0] == ["qid", "query", "label"]
    body = {qid: (query, label) for qid, query, label in parsed[1:]}
    assert len(body) == len(TRICKY_ROWS)
    for row in TRICKY_ROWS:
        query, label = body[row["qid"]]
        assert label == row["label"]
        assert query == neutralise_formula(row["query"])
    assert body["3"][0] == "tab\there and\nnewline", "the csv module quotes line breaks instead of losing them"
    assert body["4"][0].startswith("'=")
    assert only_file(tmp_path) == ["queries.csv"]


def test_csv_accepts_category_slugs_and_rejects_unknown_labels(tmp_path):
    path = tmp_path / "q.csv"
    write_labelled_csv([{"qid": "1", "query": "a", "label": "female"}], path)
    assert path.read_text(encoding="utf-8").splitlines()[1] == "1,a,f"
    with pytest.raises(ValueError, match="'x'"):
        write_labelled_csv([{"qid": "1", "query": "a", "label": "x"}], tmp_path / "bad.csv")
    assert only_file(tmp_path) == ["q.csv"], "a failed export leaves neither a partial file nor a temp file"


def test_reference_queries_round_trip_through_csv(tmp_path, reference_dir):
    rows = []
    for line in (reference_dir / "queries_gender_annotated.csv").read_text(encoding="utf-8").splitlines():
        qid, rest = line.split(",", 1)
        query, label = rest.rsplit(",", 1)
        rows.append({"qid": qid, "query": query, "label": label})
    assert any("," in row["query"] for row in rows), "the reference file has queries with commas"
    path = tmp_path / "reference.csv"
    write_labelled_csv(rows, path)
    with path.open(encoding="utf-8", newline="") as handle:
        parsed = list(csv.DictReader(handle))
    assert parsed == [{k: neutralise_formula(v) for k, v in row.items()} for row in rows]


def test_jsonl_keeps_every_key_and_raw_text(tmp_path):
    rows = [
        {
            "qid": "4",
            "query": "=cmd|' /C calc'!A0",
            "label": "o",
            "votes": {"n": 1, "f": 0, "m": 0, "o": 2},
            "method": "majority",
            "agreement": np.float64(0.5),
            "judgments": np.int64(3),
            "posterior": float("nan"),
            "reward": Decimal("0.05"),
        },
        {"qid": "5", "query": "tab\tand\nnewline", "label": "n"},
    ]
    path = tmp_path / "q.jsonl"
    write_jsonl(rows, path)
    lines = path.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 2
    first, second = (json.loads(line) for line in lines)
    assert first["query"] == "=cmd|' /C calc'!A0", "JSON Lines is for programs: no neutralising"
    assert first["votes"] == {"n": 1, "f": 0, "m": 0, "o": 2}
    assert first["method"] == "majority" and first["agreement"] == 0.5 and first["judgments"] == 3
    assert first["posterior"] is None
    assert first["reward"] == "0.05"
    assert second["query"] == "tab\tand\nnewline"


def test_atomic_write_replaces_and_keeps_old_file_on_failure(tmp_path):
    path = tmp_path / "q.tsv"
    write_tsv([{"qid": "1", "query": "old", "label": "n"}], path)
    write_tsv([{"qid": "2", "query": "new", "label": "n"}], path)
    assert path.read_text(encoding="utf-8") == "2\tnew\n"

    def broken_rows():
        yield {"qid": "3", "query": "partial", "label": "n"}
        raise RuntimeError("database went away")

    with pytest.raises(RuntimeError):
        write_tsv(broken_rows(), path)
    assert path.read_text(encoding="utf-8") == "2\tnew\n"
    assert only_file(tmp_path) == ["q.tsv"]


def test_dataset_card_renders_the_facts(tmp_path):
    cost = per_assignment_fees(Decimal("0.05"), Decimal("0.20"), 300, Decimal("0.01"))  # a 20% commission, $0.01 each
    facts = {
        "title": "QS1 gender queries",
        "counts": {"n": 1765, "f": 742, "m": 1202, "o": 41},
        "method": "majority vote",
        "krippendorff_alpha": 0.7123,
        "alpha_ci": [0.70, 0.73],
        "fleiss_kappa": None,
        "batch": {"reward": Decimal("0.05"), "assignments_per_hit": 3},
        "dates": {"published": "2024-03-01", "completed": "2024-03-04"},
        "cost": cost,
        "note": "pipes | must not break tables",
    }
    card = dataset_card(facts)
    assert card.startswith("# QS1 gender queries\n")
    assert "| Female | f | 742 | 19.8% |" in card  # 742 / 3750
    assert "| **Total** | | 3750 | |" in card
    assert "0.712" in card and "0.700, 0.730" in card
    assert "| Fleiss' kappa | – |" in card
    assert "| assignments_per_hit | 3 |" in card
    assert "| completed | 2024-03-04 |" in card
    assert "| total | 18.00 |" in card
    assert "pipes \\| must not break tables" in card

    path = tmp_path / "README.md"
    write_dataset_card(card, path)
    assert path.read_text(encoding="utf-8") == card
    assert only_file(tmp_path) == ["README.md"]


def test_dataset_card_omits_sections_without_facts():
    card = dataset_card({"counts": {"n": 1, "f": 1, "m": 0, "o": 0}})
    assert "## Queries per category" in card
    assert "## Agreement" not in card and "## Cost" not in card


def test_export_vocabulary_is_the_one_the_model_form_api_and_command_use():
    """Formats and categories are declared once (export_formats, labels); every shell offers exactly those."""
    from annotation.batches.api import ExportRequestSerializer
    from annotation.batches.views import ExportForm
    from annotation.models import Export
    from annotation.results.export_formats import EXPORT_FORMATS, format_for_path
    from genderbias.labels import EXPORT_CATEGORIES

    assert set(Export.Format.values) == set(EXPORT_FORMATS)
    assert [c for c, _ in ExportForm.base_fields["format"].choices] == list(EXPORT_FORMATS)
    assert [c for c, _ in ExportForm.base_fields["category"].choices] == list(EXPORT_CATEGORIES)
    fields = ExportRequestSerializer().fields
    assert list(fields["format"].choices) == list(EXPORT_FORMATS)
    assert list(fields["category"].choices) == list(EXPORT_CATEGORIES)
    assert EXPORT_CATEGORIES == ("non-gendered", "female", "male", "other", "all")
    assert [format_for_path(p) for p in ("a.CSV", "b.jsonl", "c.tsv", "d.txt", "noext")] == [
        "csv",
        "jsonl",
        "tsv",
        "tsv",
        "tsv",
    ]


def _card_for(file_name: str) -> str:
    """A machine-labelled batch's card for an export written as ``file_name`` (the format from its ending)."""
    import datetime as dt

    from annotation.results.export_formats import card_facts, export_rows

    results = [
        {"qid": "1", "query": "nurse", "label": "n", "label_source": "machine-accepted", "machine_confidence": 0.9,
         "adjudicated": False, "votes": [], "counts": {"n": 0, "f": 0, "m": 0, "o": 0}, "dawid_skene": None,
         "ds_posteriors": None, "agreement": None},
        {"qid": "2", "query": "king", "label": "m", "label_source": "adjudicated", "machine_confidence": None,
         "adjudicated": True, "votes": [{"worker": "w1", "label": "m"}], "counts": {"n": 0, "f": 0, "m": 1, "o": 0},
         "dawid_skene": "m", "ds_posteriors": {"m": 1.0}, "agreement": 1.0},
    ]  # fmt: skip
    report = {
        "krippendorff_alpha": None, "alpha_ci": [None, None], "bootstrap_resamples": 0, "per_category_alpha": {},
        "percent_agreement": None, "fleiss_kappa": None, "workers": 1, "judgments": 1,
        "progress": {
            "invalid_judgments": 0,
            "rejected": 0,
            "submitted": 1,
            "approved": 0,
            "answered": 1,
            "assignments_expected": 3,
        },
    }  # fmt: skip
    batch = {
        "name": "b", "provider_display": "In-house", "annotators": "in-house annotators", "source": "pool p",
        "provider": "local",
        "assignments_per_query": 3, "queries_per_hit": 10, "reward": "0.05", "gold_per_hit": 0, "qualifications": {},
        "created": dt.datetime(2026, 1, 1), "published": None, "cost": {"total": "1.00"},
    }  # fmt: skip
    rows = export_rows(results, "all")
    facts = card_facts(
        batch=batch, category="all", rows=rows, results=results, report=report, min_votes=2, file_name=file_name,
        exported=dt.date(2026, 1, 2), citation="c", machine={"labeller": "rules"},
    )  # fmt: skip
    return dataset_card(facts)


def test_a_tsv_card_does_not_send_the_reader_to_the_file_for_what_it_lacks(tmp_path):
    card = _card_for("b-all.tsv")
    assert "label source is in the file" not in card
    assert "marked adjudicated in the file" not in card
    assert "qids and queries only" in card
    # The counts by source are still on the card itself.
    assert "machine-accepted" in card and "adjudicated" in card
    # The TSV itself indeed holds only qid and query: what the card says is true.
    write_tsv([{"qid": "1", "query": "nurse"}], tmp_path / "b.tsv")
    assert (tmp_path / "b.tsv").read_text() == "1\tnurse\n"


@pytest.mark.parametrize("name", ["b-all.csv", "b-all.jsonl"])
def test_csv_and_jsonl_cards_point_to_the_columns_their_files_hold(name):
    card = _card_for(name)
    assert "Each query's label source is in the file." in card
    assert "marked adjudicated in the file" in card
