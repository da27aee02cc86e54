"""Grep-BiasIR's wordings feed variant preference directly: a hand-made run over its documents
(the set's own docids), its winners computed here independently from the reference CSV files."""

import io
import random

import pandas as pd
import pytest
from django.core.management import call_command

from pooling.models import Collection
from pooling.services import import_run

WORDING = {"M": "m", "F": "f", "N": "n"}


def reference_documents(reference_dir) -> pd.DataFrame:
    folder = reference_dir / "grep-biasir"
    return pd.concat(
        [pd.read_csv(path, dtype=str) for path in sorted(folder.glob("queries-documents_*.csv"))], ignore_index=True
    )


def hand_made_run(documents: pd.DataFrame, seed: int = 7) -> list[tuple[str, str, float]]:
    """Each query ranks its own six documents and two of another query, with scores from a small
    set of values so that ties for the highest score happen; a few queries leave one document out."""
    rng = random.Random(seed)
    rows = []
    qids = sorted(documents.q_id.unique(), key=int)
    for qid in qids:
        own = documents[documents.q_id == qid].d_id.tolist()
        other = documents[documents.q_id == rng.choice(qids)].d_id.tolist()[:2]
        if rng.random() < 0.1:
            own = own[1:]  # the run lacks one wording: an incomplete case
        for docid in own + [d for d in other if d not in own]:
            rows.append((qid, docid, float(rng.choice([1, 2, 3, 4]))))
    return rows


def expected_cases(documents: pd.DataFrame, rows) -> dict[tuple[str, str], str]:
    scores = {(q, d): s for q, d, s in rows}
    cases = {}
    for (qid, relevant), group in documents.groupby(["q_id", "relevant"]):
        ranked = {(q, d) for q, d, _ in rows if q == qid}
        if not any((qid, d) in ranked for d in group.d_id):
            continue  # the run shows none of this case's documents
        item = f"{qid}-{'relevant' if relevant == '1' else 'non-relevant'}"
        by_wording = {}
        for row in group.itertuples():
            wording = WORDING.get(row.content_gender)
            if wording and (qid, row.d_id) in scores:
                by_wording[wording] = scores[(qid, row.d_id)]
        if len(by_wording) < 3:
            cases[(qid, item)] = "incomplete"
            continue
        best = max(by_wording.values())
        top = [w for w, s in by_wording.items() if s == best]
        cases[(qid, item)] = top[0] if len(top) == 1 else "tie"
    return cases


@pytest.mark.django_db
def test_variant_preference_reads_grep_biasir_wordings(reference_dir, tmp_path):
    call_command("import_named_set", "grep-biasir", stdout=io.StringIO())
    documents = reference_documents(reference_dir)
    rows = hand_made_run(documents)
    by_query: dict[str, list] = {}
    for qid, docid, score in rows:
        by_query.setdefault(qid, []).append((docid, score))
    lines = []
    for qid, docs in by_query.items():
        ordered = sorted(docs, key=lambda d: -d[1])
        lines += [f"{qid} Q0 {docid} {rank} {score} hand\n" for rank, (docid, score) in enumerate(ordered, 1)]
    path = tmp_path / "hand.trec"
    path.write_text("".join(lines))
    run = import_run(path, "hand", Collection.objects.get(name="grep-biasir")).obj

    from metrics.services import preference_summary

    result = preference_summary(run)
    expected = expected_cases(documents, rows)
    got = {(case["qid"], case["item"]): case["winner"] for case in result["per_query"]}
    assert got == expected
    assert result["versions_from"] == "the wordings of grep-biasir"
    winners = list(expected.values())
    assert result["cases"] == len(expected)
    assert result["ties"] == winners.count("tie") > 0
    assert result["incomplete"] == winners.count("incomplete") > 0
    assert {v: w["wins"] for v, w in result["wins"].items()} == {v: winners.count(v) for v in "mfn"}
    # Query 107's non-relevant documents have no F/M/N wording (both, botrh): incomplete, not missing.
    assert expected[("107", "107-non-relevant")] == "incomplete"
    # The ranks shown are the run's, in trec_eval's order (score, then docid descending, as strings).
    rank_of = {
        (qid, docid): rank
        for qid, docs in by_query.items()
        for rank, (docid, _) in enumerate(sorted(docs, key=lambda d: (d[1], d[0]), reverse=True), 1)
    }
    wording_doc = {
        (
            row.q_id,
            f"{row.q_id}-{'relevant' if row.relevant == '1' else 'non-relevant'}",
            WORDING[row.content_gender],
        ): row.d_id
        for row in documents.itertuples()
        if row.content_gender in WORDING
    }
    for case in result["per_query"]:
        for version, rank in case["ranks"].items():
            docid = wording_doc.get((case["qid"], case["item"], version))
            assert rank == rank_of.get((case["qid"], docid))

    out = io.StringIO()
    call_command("variant_preference", "--run", "hand", "--per-query", stdout=out)
    text = out.getvalue()
    assert "Versions read from the wordings of grep-biasir" in text
    assert "107\t107-non-relevant\tincomplete" in text
