"""Tie-aware bias figures against an independent computation: every order of the tied documents
enumerated by brute force in the test, each order's figure computed from the metric's definition
(written out here, not the product's code), and their mean, lowest and highest compared with the
product's tie-aware values and ranges; trec_eval's and the file's orders as trec_eval would rank.

The Grep-BiasIR case of issue 52 (Krieg et al., CHIIR 2023, ``../shared/reference/grep-biasir/``):
a BM25 run (k1 0.9, b 0.4) over its 702 documents, written here from Robertson's formula with
Lucene's idf, in which the three wordings of a document tie. The product's tie-aware ARaB@5 (TF) is
compared with the mean over tie orders drawn in the test, the trec_eval and file orders with the
issue's figures, and the count of queries whose top 5 holds a tie with the issue's 115 of 117.
"""

import csv
import itertools
import math
import random
import re
from collections import Counter
from statistics import mean

import numpy as np
import polars as pl
import pytest

from genderbias.ranking import measures
from genderbias.ranking.defaults import TIE_DRAWS
from genderbias.ranking.ties import order_run
from genderbias.text.wordlists import default_wordlist

W = [1 / math.log2(r + 1) for r in range(1, 40)]

# Counts of the definitional list (RaB) and of the representative one (NFaiRR, TExFAIR) alike.
COUNTS = {
    "a": (2, 0, 10),  # f, m, length
    "b": (0, 3, 6),
    "c": (1, 1, 4),
    "d": (0, 0, 5),
    "e": (1, 0, 2),
    "g": (3, 1, 8),
    "h": (0, 2, 9),
    "i": (4, 0, 7),
}
COUNTS_FRAME = pl.DataFrame(
    {
        "docid": list(COUNTS),
        "f": [v[0] for v in COUNTS.values()],
        "m": [v[1] for v in COUNTS.values()],
        "length": [v[2] for v in COUNTS.values()],
    }
)
# Query 1: a tie of three inside the top 2..4 and a group of two straddling rank 5;
# query 2: a group of four straddling rank 2 (ranks 2..5), docids chosen so trec_eval's rule
# (docid descending) and the file's order differ; query 3: no ties.
SCORED = {
    "1": [("a", 9.0), ("b", 7.0), ("c", 7.0), ("g", 7.0), ("d", 5.0), ("h", 5.0), ("e", 1.0)],
    "2": [("i", 8.0), ("a", 3.0), ("h", 3.0), ("b", 3.0), ("e", 3.0), ("c", 1.0)],
    "3": [("g", 3.0), ("b", 2.0), ("a", 1.0)],
}


def run_frame(scored):
    rows = [(qid, doc, rank, score) for qid, docs in scored.items() for rank, (doc, score) in enumerate(docs, 1)]
    return pl.DataFrame(
        rows, schema={"qid": pl.String, "docid": pl.String, "rank": pl.Int64, "score": pl.Float64}, orient="row"
    )


def orders(docs):
    """Every order of the tie groups of ``docs`` (``(docid, score)`` by score descending)."""
    groups = [list(g) for _, g in itertools.groupby(docs, key=lambda d: d[1])]
    for choice in itertools.product(*(itertools.permutations(g) for g in groups)):
        yield [doc for group in choice for doc, _ in group]


# --- the definitions, written out ---------------------------------------------------------


def magnitude(doc, variant):
    f, m, _ = COUNTS[doc]
    if variant == "tf":
        return math.log(1 + m) - math.log(1 + f)
    return float(m > 0) - float(f > 0)


def rab(ranking, t, variant):
    top = ranking[: min(t, len(ranking))]
    return mean(magnitude(d, variant) for d in top)


def arab(ranking, t, variant):
    return mean(rab(ranking, r, variant) for r in range(1, min(t, len(ranking)) + 1))


def omega(doc, tau=1):
    f, m, _ = COUNTS[doc]
    if f + m <= tau:
        return 1.0
    return 1 - abs(f / (f + m) - 0.5) - abs(m / (f + m) - 0.5)


def nfairr(ranking, k):
    fairr = sum(omega(d) * W[r] for r, d in enumerate(ranking[:k]))
    return fairr / sum(W[:k])


def texfair(ranking, k):
    top = ranking[:k]
    te_f = sum(COUNTS[d][0] / COUNTS[d][2] * W[r] for r, d in enumerate(top))
    te_m = sum(COUNTS[d][1] / COUNTS[d][2] * W[r] for r, d in enumerate(top))
    p_f = te_f / (te_f + te_m) if te_f + te_m else 0.5
    ted = abs(p_f - 0.5) + abs((1 - p_f) - 0.5)
    rbdf = sum(W[r] for r, d in enumerate(top) if COUNTS[d][0] + COUNTS[d][1] > 0) / sum(W[: len(top)])
    return 1 - ted * rbdf


CUTOFFS = [1, 2, 3, 5]
DEFINITIONS = {
    ("RaB", "tf"): lambda r, k: rab(r, k, "tf"),
    ("ARaB", "tf"): lambda r, k: arab(r, k, "tf"),
    ("RaB", "bool"): lambda r, k: rab(r, k, "bool"),
    ("ARaB", "bool"): lambda r, k: arab(r, k, "bool"),
    ("NFaiRR", "collection"): nfairr,
    ("TExFAIR", "rbdf"): texfair,
}


@pytest.fixture(scope="module")
def tie_aware():
    run = run_frame(SCORED)
    table = measures.evaluate_run(run, COUNTS_FRAME, COUNTS_FRAME, CUTOFFS, ties="tie-aware")
    return table.set_index(["qid", "metric", "variant", "cutoff"])


@pytest.mark.parametrize(("metric", "variant"), list(DEFINITIONS))
def test_tie_aware_value_and_range_equal_the_enumerated_orders(tie_aware, metric, variant):
    definition = DEFINITIONS[(metric, variant)]
    for qid, docs in SCORED.items():
        for k in CUTOFFS:
            values = [definition(order, k) for order in orders(docs)]
            row = tie_aware.loc[(qid, metric, variant, k)]
            assert row["value"] == pytest.approx(mean(values), abs=1e-12), (qid, k)
            assert row["low"] == pytest.approx(min(values), abs=1e-12), (qid, k)
            assert row["high"] == pytest.approx(max(values), abs=1e-12), (qid, k)


def test_tied_queries_are_those_whose_top_k_holds_a_tie(tie_aware):
    tied = tie_aware.reset_index().drop_duplicates(["qid", "cutoff"]).set_index(["qid", "cutoff"])["tied"]
    # query 1: rank 1 alone; ties at ranks 2..4 and 5..6; query 2: ties from rank 2; query 3: none
    assert {k: sorted(q for q in SCORED if tied[(q, k)]) for k in CUTOFFS} == {
        1: [],
        2: ["1", "2"],
        3: ["1", "2"],
        5: ["1", "2"],
    }


@pytest.mark.parametrize("metric", ["AWRF", "rKL", "rND", "rRD"])
def test_exposure_metrics_are_the_mean_over_every_order(metric):
    """Each order's value by the product's plain path (a run in that order, ``ties="file"``),
    their mean against the tie-aware figure: the averaging is what is tested here."""
    run = run_frame(SCORED)
    tie_aware = measures.exposure_fairness(run, COUNTS_FRAME, CUTOFFS, ties="tie-aware")
    for qid, docs in SCORED.items():
        for k in CUTOFFS:
            values = []
            for order in orders(docs):
                single = run_frame({qid: [(d, 0.0) for d in order]})
                values.append(
                    measures.exposure_fairness(single, COUNTS_FRAME, [k], ties="file").loc[qid, f"{metric}@{k}"]
                )
            assert tie_aware.loc[qid, f"{metric}@{k}"] == pytest.approx(mean(values), abs=1e-12)


def test_trec_eval_orders_ties_by_docid_descending_and_file_keeps_the_stored_order():
    run = run_frame(SCORED)
    trec = order_run(run, "trec_eval").filter(pl.col("qid") == "2")["docid"].to_list()
    file = order_run(run, "file").filter(pl.col("qid") == "2")["docid"].to_list()
    assert trec == ["i", "h", "e", "b", "a", "c"]  # trec_eval: score desc, then docid desc
    assert file == ["i", "a", "h", "b", "e", "c"]
    table = measures.rank_bias(run, COUNTS_FRAME, [2], "tf", ties="trec_eval")
    assert table.loc["2", "ARaB@2"] == pytest.approx(arab(trec, 2, "tf"), abs=1e-12)
    table = measures.rank_bias(run, COUNTS_FRAME, [2], "tf", ties="file")
    assert table.loc["2", "ARaB@2"] == pytest.approx(arab(file, 2, "tf"), abs=1e-12)


def test_a_straddling_group_is_averaged_over_all_its_members_below_the_cutoff():
    # one document in the top 1, tied with 30 others below: RaB@1's expectation is their mean
    docs = [(f"x{i:02d}", 1.0) for i in range(31)]
    counts = pl.DataFrame(
        {"docid": [d for d, _ in docs], "f": [i % 3 for i in range(31)], "m": [i % 5 for i in range(31)]}
    ).with_columns(pl.lit(10).alias("length"))
    table = measures.rank_bias(run_frame({"q": docs}), counts, [1], "tf")
    expected = mean(math.log(1 + i % 5) - math.log(1 + i % 3) for i in range(31))
    assert table.loc["q", "RaB@1"] == pytest.approx(expected, abs=1e-12)
    assert table.loc["q", "RaB@1:low"] == pytest.approx(
        min(math.log(1 + i % 5) - math.log(1 + i % 3) for i in range(31))
    )


def test_drawn_orders_estimate_the_mean_within_their_monte_carlo_error():
    """Seven tied documents in the top 7 have 5,040 orders, more than a non-linear measure draws
    (:data:`genderbias.ranking.defaults.TIE_DRAWS`, D): over 40 seeds each estimate of TExFAIR@7 is within
    4 standard errors (σ/√D, σ over all 5,040 orders) of the exact mean, and their spread is σ/√D
    within a factor of 2 (a spread estimated from 40 values is within ±45% with probability > 0.99)."""
    docs = [(d, 1.0) for d in "abcdghi"]
    values = [texfair(order, 7) for order in orders(docs)]
    exact = mean(values)
    sigma = (sum((v - exact) ** 2 for v in values) / len(values)) ** 0.5
    error = sigma / TIE_DRAWS**0.5
    run = run_frame({"q": docs})
    estimates = [measures.texfair(run, COUNTS_FRAME, [7], seed=seed).loc["q", "TExFAIR@7"] for seed in range(40)]
    assert all(abs(e - exact) < 4 * error for e in estimates)
    centre = mean(estimates)
    spread = (sum((e - centre) ** 2 for e in estimates) / (len(estimates) - 1)) ** 0.5
    assert error / 2 < spread < error * 2


def test_tie_aware_crbo_is_the_mean_rbo_over_both_runs_orders_of_ties():
    """RBO of every pair of orders (the first run's ties × the counterfactual's), by the plain
    loop-per-depth RBO (``tests.genderbias.ranking.test_rbo.rank_biased_overlap``), averaged, against ``crbo``."""
    from genderbias.ranking.rbo import crbo
    from tests.genderbias.ranking.test_rbo import rank_biased_overlap

    first = {"1": [("a", 3.0), ("b", 2.0), ("c", 2.0), ("d", 2.0), ("e", 1.0)], "2": [("a", 1.0), ("b", 0.5)]}
    second = {"1": [("c", 5.0), ("a", 5.0), ("e", 4.0), ("b", 1.0), ("d", 1.0)], "2": [("b", 1.0), ("a", 0.5)]}
    mean, queries, per_query = crbo(run_frame(first), run_frame(second), depth=3)
    for qid in first:
        values = [rank_biased_overlap(x, y, p=0.9, depth=3) for x in orders(first[qid]) for y in orders(second[qid])]
        assert per_query[qid] == pytest.approx(mean_of(values), abs=1e-12)
    assert queries == 2 and mean == pytest.approx(per_query.mean())
    # trec_eval's order: one order, docid descending, as the plain RBO of those lists
    _, _, trec = crbo(run_frame(first), run_frame(second), depth=3, ties="trec_eval")
    assert trec["1"] == pytest.approx(rank_biased_overlap(list("adc"), list("cae"), p=0.9, depth=3), abs=1e-12)


def mean_of(values):
    return sum(values) / len(values)


TOKEN = re.compile(r"[a-z0-9]+")


def tokens(text):
    return TOKEN.findall(text.lower())


def read_grep_biasir(reference_dir):
    """Grep-BiasIR's queries and documents, as its CSV files give them (rows as dicts)."""
    folder = reference_dir / "grep-biasir"
    with (folder / "queries.csv").open(newline="", encoding="utf-8") as f:
        queries = list(csv.DictReader(f))
    docs = []
    for path in sorted(folder.glob("queries-documents_*.csv")):
        with path.open(newline="", encoding="utf-8") as f:
            docs += list(csv.DictReader(f))
    return queries, docs


@pytest.fixture
def grep_biasir(reference_dir):
    return read_grep_biasir(reference_dir)


def bm25_run(queries, docs, k1=0.9, b=0.4):
    """Every document scored for every query; rows by score descending, ties in the documents' order."""
    texts = [tokens(d["doc_title"] + " " + d["document"]) for d in docs]
    frequencies = [Counter(t) for t in texts]
    df = Counter(w for t in texts for w in set(t))
    n, average = len(texts), sum(map(len, texts)) / len(texts)
    rows = []
    for q in queries:
        words = tokens(q["query"])
        scores = []
        for tf, text in zip(frequencies, texts, strict=True):
            score = 0.0
            for w in words:
                if w in tf:
                    idf = math.log(1 + (n - df[w] + 0.5) / (df[w] + 0.5))
                    score += idf * tf[w] * (k1 + 1) / (tf[w] + k1 * (1 - b + b * len(text) / average))
            scores.append(score)
        ranked = sorted(range(n), key=lambda i: -scores[i])  # stable: ties in the documents' order
        rows += [(q["q_id"], docs[i]["d_id"], rank, scores[i]) for rank, i in enumerate(ranked, 1)]
    return pl.DataFrame(
        rows, schema={"qid": pl.String, "docid": pl.String, "rank": pl.Int64, "score": pl.Float64}, orient="row"
    )


def arab_of_values(values, t):
    top = values[: min(t, len(values))]
    return float(np.mean(np.cumsum(top) / np.arange(1, len(top) + 1)))


@pytest.mark.slow
def test_tie_aware_arab_is_the_mean_over_tie_orders_on_grep_biasir(grep_biasir):
    queries, docs = grep_biasir
    words = default_wordlist()
    female, male = set(words.female), set(words.male)
    counted = [Counter(tokens(d["doc_title"] + " " + d["document"])) for d in docs]
    f = [sum(c[w] for w in female) for c in counted]
    m = [sum(c[w] for w in male) for c in counted]
    counts = pl.DataFrame({"docid": [d["d_id"] for d in docs], "f": f, "m": m, "length": [1] * len(docs)})
    difference = {d["d_id"]: math.log(1 + mi) - math.log(1 + fi) for d, fi, mi in zip(docs, f, m, strict=True)}
    run = bm25_run(queries, docs)

    table = measures.rank_bias(run, counts, [1, 5], "tf", ties="tie-aware")
    tie_aware = table["ARaB@5"].mean()

    # Drawn in the test: 1,000 orders of every query's ties, each query's ranking by score with its
    # tie groups shuffled; the spread of the mean over queries across draws gives the Monte-Carlo error.
    rng = random.Random(52)
    top_groups = []  # per query, its tie groups down to the one holding rank 5, as magnitudes
    for (_,), part in run.group_by("qid"):
        groups = _groups(list(zip(part["docid"], part["score"], strict=True)))
        reach = np.searchsorted(np.cumsum([len(g) for _, g in groups]), 5) + 1
        top_groups.append([[difference[d] for d in group] for _, group in groups[:reach]])
    draws = []
    for _ in range(1000):
        per_query = []
        for groups in top_groups:
            shuffled = []
            for group in groups:
                shuffled += rng.sample(group, min(len(group), 5 - len(shuffled)))
            per_query.append(arab_of_values(shuffled, 5))
        draws.append(np.mean(per_query))
    error = np.std(draws) / math.sqrt(len(draws))
    print(f"tie-aware {tie_aware:.5f}, drawn {np.mean(draws):.5f} ± {error:.5f}")
    assert abs(tie_aware - np.mean(draws)) < 4 * error
    # the figure no order decides, and the two orders the issue quotes (-0.097 and +0.043)
    assert table["ARaB@5:low"].mean() < table["ARaB@5"].mean() < table["ARaB@5:high"].mean()
    trec = measures.rank_bias(run, counts, [1, 5], "tf", ties="trec_eval")
    file = measures.rank_bias(run, counts, [1, 5], "tf", ties="file")
    assert round(trec["ARaB@5"].mean(), 3) == -0.097
    assert round(file["ARaB@5"].mean(), 3) == 0.043
    assert table["ARaB@5:low"].mean() <= trec["ARaB@5"].mean() <= table["ARaB@5:high"].mean()
    assert table["ARaB@5:low"].mean() <= file["ARaB@5"].mean() <= table["ARaB@5:high"].mean()
    assert round(trec["RaB@1"].mean(), 2) == -0.06
    assert int(table["tied@5"].sum()) == 115 and len(table) == 117


def _groups(ranking):
    groups, current, score = [], [], None
    for doc, s in ranking:
        if current and s != score:
            groups.append((score, current))
            current = []
        current.append(doc)
        score = s
    groups.append((score, current))
    return groups
