"""Majority vote and Dawid-Skene on hand-made judgments and on a simulated crowd over the reference queries."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from genderbias.crowd.aggregation import (
    DawidSkeneResult,
    compare_methods,
    dawid_skene,
    majority_vote,
    validate_judgments,
    wawa,
)
from genderbias.labels import CATEGORY_SLUGS, LABEL_NAMES, LABELS


def judgments(rows: list[tuple[str, str, str]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["item", "worker", "label"])


def votes(item: str, labels: str) -> list[tuple[str, str, str]]:
    """One judgment per letter, from workers w0, w1, ..."""
    return [(item, f"w{i}", label) for i, label in enumerate(labels)]


def read_reference(path) -> pd.Series:
    """qid -> label from the published file: no quoting, the label is the last comma field."""
    truth = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        qid, rest = line.split(",", 1)
        _query, label = rest.rsplit(",", 1)
        truth[qid] = label
    return pd.Series(truth, name="label")


def test_label_constants_agree_with_each_other():
    assert LABELS == ("n", "f", "m", "o")
    assert set(LABEL_NAMES) == set(LABELS)
    assert sorted(CATEGORY_SLUGS.values()) == sorted(LABELS)


# --- majority vote -----------------------------------------------------------------------------


def test_majority_vote_hand_computed_examples():
    rows = (
        votes("a_two_one", "nnf")  # 2-1: n wins
        + votes("b_three_way", "nfm")  # 1-1-1: disputed
        + votes("c_two_two", "mmff")  # 2-2: disputed
        + votes("d_unanimous", "ooo")
        + votes("e_three_two", "fffmm")  # 3-2: strict majority, f wins
        + votes("f_single", "m")
        + votes("g_two_two_one", "nnmmo")  # tie at the top despite a third label
    )
    result = majority_vote(judgments(rows))

    assert list(result.index) == sorted(result.index)
    assert list(result.columns[:4]) == ["label", "votes", "top_votes", "disputed"]
    expected = {
        "a_two_one": ("n", 3, 2, False),
        "b_three_way": (None, 3, 1, True),
        "c_two_two": (None, 4, 2, True),
        "d_unanimous": ("o", 3, 3, False),
        "e_three_two": ("f", 5, 3, False),
        "f_single": ("m", 1, 1, False),
        "g_two_two_one": (None, 5, 2, True),
    }
    for item, (label, n_votes, top, disputed) in expected.items():
        row = result.loc[item]
        assert row["label"] == label if label else row["label"] is None, item
        assert (row["votes"], row["top_votes"], bool(row["disputed"])) == (n_votes, top, disputed), item

    counts = result.loc["g_two_two_one", list(LABELS)].tolist()
    assert counts == [2, 0, 2, 1]
    assert result.loc["c_two_two", ["n", "f", "m", "o"]].tolist() == [0, 2, 2, 0]


def test_majority_vote_counts_sum_to_votes():
    rng = np.random.default_rng(3)
    rows = [(f"q{i}", f"w{w}", rng.choice(LABELS)) for i in range(200) for w in rng.choice(20, 3, replace=False)]
    result = majority_vote(judgments(rows))
    assert (result[list(LABELS)].sum(axis=1) == result["votes"]).all()
    assert (result[list(LABELS)].max(axis=1) == result["top_votes"]).all()
    assert result.loc[~result["disputed"], "label"].notna().all()
    assert result.loc[result["disputed"], "label"].isna().all()


def test_unknown_label_is_named_in_the_error():
    with pytest.raises(ValueError, match="'x'"):
        majority_vote(judgments([("a", "w1", "n"), ("a", "w2", "x")]))


def test_missing_column_is_rejected_and_a_repeated_answer_counts_once_the_latest():
    with pytest.raises(ValueError, match="worker"):
        majority_vote(pd.DataFrame({"item": ["a"], "label": ["n"]}))
    clean = validate_judgments(judgments([("a", "w1", "n"), ("b", "w1", "m"), ("a", "w1", "f")]))
    assert sorted(map(tuple, clean.to_numpy().tolist())) == [("a", "w1", "f"), ("b", "w1", "m")]
    # w1's two answers on "a" are one vote: f against w2's n is a tie, not a 2-1 for anyone.
    votes = majority_vote(judgments([("a", "w1", "n"), ("a", "w2", "n"), ("a", "w1", "f")]))
    assert votes.loc["a", "votes"] == 2 and bool(votes.loc["a", "disputed"])


def test_every_answer_to_a_gold_question_seeds_dawid_skene():
    """A worker who met gold item g several times: each answer is one more observation of how the
    worker answers a query whose label is known, so every one moves the confusion matrix (on a real
    query only the latest would count)."""
    others = [("q", "w2", "n"), ("q", "w3", "n")]

    def row(answers):
        rows = [("g", "w1", a) for a in answers] + others
        return dawid_skene(judgments(rows), gold={"g": "f"}).confusion["w1"].loc["f"]

    once, twice, thrice = row("f"), row("ff"), row("ffn")
    assert twice["f"] > once["f"]  # the second f counts
    assert thrice["n"] > twice["n"] and thrice["f"] < twice["f"]  # and so does the later n


# --- Dawid-Skene --------------------------------------------------------------------------------


def test_dawid_skene_result_is_consistent():
    rows = votes("a", "nnf") + votes("b", "mmm") + votes("c", "ffn") + votes("d", "nfm") + votes("e", "oon")
    result = dawid_skene(judgments(rows))

    assert isinstance(result, DawidSkeneResult)
    assert list(result.posteriors.columns) == list(LABELS)
    assert list(result.posteriors.index) == ["a", "b", "c", "d", "e"]
    np.testing.assert_allclose(result.posteriors.sum(axis=1), 1.0)
    assert result.priors.sum() == pytest.approx(1.0)
    assert set(result.confusion) == {"w0", "w1", "w2"}
    for matrix in result.confusion.values():
        assert list(matrix.index) == list(LABELS) and list(matrix.columns) == list(LABELS)
        np.testing.assert_allclose(matrix.sum(axis=1), 1.0)
        assert (matrix.to_numpy() > 0).all(), "smoothing keeps unseen cells above zero"
    assert (result.labels == result.posteriors.idxmax(axis=1)).all()
    assert 1 <= result.iterations <= 100


def test_dawid_skene_agrees_with_unanimous_workers():
    rows = votes("a", "nnn") + votes("b", "fff") + votes("c", "mmm") + votes("d", "ooo") + votes("e", "nnn")
    result = dawid_skene(judgments(rows))
    assert result.labels.to_dict() == {"a": "n", "b": "f", "c": "m", "d": "o", "e": "n"}
    assert result.converged


def test_dawid_skene_rejects_unknown_labels():
    with pytest.raises(ValueError, match="'female'"):
        dawid_skene(judgments([("a", "w1", "female")]))


def test_compare_methods_lists_disagreements_and_disputes():
    rows = votes("agree", "nnf") + votes("differ", "mmf") + votes("tie", "nf")
    majority = majority_vote(judgments(rows))
    items = pd.Index(["agree", "differ", "tie"], name="item")
    posteriors = pd.DataFrame(
        [[0.9, 0.1, 0.0, 0.0], [0.0, 0.8, 0.2, 0.0], [0.6, 0.4, 0.0, 0.0]], index=items, columns=list(LABELS)
    )
    ds = DawidSkeneResult(
        labels=pd.Series(["n", "f", "n"], index=items),
        posteriors=posteriors,
        confusion={},
        priors=pd.Series([0.25] * 4, index=list(LABELS)),
        iterations=1,
        converged=True,
    )
    diff = compare_methods(majority, ds)
    assert list(diff.index) == ["differ", "tie"]
    assert diff.loc["differ", "majority"] == "m" and diff.loc["differ", "dawid_skene"] == "f"
    assert diff.loc["tie", "majority"] is None and diff.loc["tie", "dawid_skene"] == "n"
    assert bool(diff.loc["tie", "disputed"])
    assert diff.loc["differ", "ds_posterior"] == pytest.approx(0.8)


def spammer_score(confusion: pd.DataFrame) -> float:
    """Distance of a confusion matrix from rank one (Raykar & Yu 2011): ~0 when answers ignore the truth."""
    matrix = confusion.to_numpy()
    return float(np.linalg.norm(matrix - matrix.mean(axis=0), "fro"))


def simulate_crowd(truth: pd.Series, seed: int = 0) -> tuple[pd.DataFrame, list[str], list[str]]:
    """Three 90%-accurate workers and four spammers (three uniform-random, one always 'n').

    Each query is judged by five of the seven workers, chosen at random, so
    spammers often hold the majority and majority vote is misled.
    """
    rng = np.random.default_rng(seed)
    good = ["good1", "good2", "good3"]
    spammers = ["spam1", "spam2", "spam3", "lazy_n"]
    workers = good + spammers
    labels = np.array(LABELS)
    true_idx = truth.map({label: k for k, label in enumerate(LABELS)}).to_numpy()
    rows = []
    for item, t in zip(truth.index, true_idx, strict=True):
        for worker in rng.choice(workers, size=5, replace=False):
            if worker in good:
                wrong = [k for k in range(len(labels)) if k != t]
                given = t if rng.random() < 0.9 else rng.choice(wrong)
            elif worker == "lazy_n":
                given = 0
            else:
                given = rng.integers(len(labels))
            rows.append((item, worker, labels[given]))
    return judgments(rows), good, spammers


def oracle_labels(crowd: pd.DataFrame, good: list[str], priors: pd.Series) -> pd.Series:
    """Bayes-optimal labels given the simulation's true parameters: spammers carry no information,
    a good worker is right with probability 0.9 and otherwise picks one of the three wrong labels."""
    good_votes = crowd[crowd["worker"].isin(good)]
    counts = pd.crosstab(good_votes["item"], good_votes["label"]).reindex(
        index=sorted(crowd["item"].unique()), columns=list(LABELS), fill_value=0
    )
    m = counts.sum(axis=1).to_numpy()[:, None]
    log_post = (
        np.log(priors.reindex(list(LABELS)).to_numpy())
        + counts.to_numpy() * np.log(0.9)
        + (m - counts.to_numpy()) * np.log(0.1 / 3)
    )
    return pd.Series(np.array(LABELS)[log_post.argmax(axis=1)], index=counts.index)


def test_dawid_skene_beats_majority_vote_on_a_crowd_with_spammers(reference_dir):
    truth = read_reference(reference_dir / "queries_gender_annotated.csv")
    assert len(truth) == 3750 and set(truth) <= set(LABELS)
    crowd, good, spammers = simulate_crowd(truth, seed=7)

    majority = majority_vote(crowd)
    ds = dawid_skene(crowd)
    assert ds.converged

    aligned_truth = truth.reindex(majority.index)
    majority_accuracy = (majority["label"] == aligned_truth).mean()  # disputed items count as wrong
    ds_accuracy = (ds.labels.reindex(majority.index) == aligned_truth).mean()
    assert ds_accuracy >= majority_accuracy + 0.1, "spammers often outvote the good workers"
    oracle = oracle_labels(crowd, good, truth.value_counts(normalize=True)).reindex(majority.index)
    oracle_accuracy = (oracle == aligned_truth).mean()
    assert ds_accuracy >= oracle_accuracy - 0.015, "EM nearly matches knowing every worker's real accuracy"

    # Learnt class priors are close to the real label distribution.
    real_priors = truth.value_counts(normalize=True).reindex(list(LABELS))
    np.testing.assert_allclose(ds.priors.to_numpy(), real_priors.to_numpy(), atol=0.02)

    # Good workers' confusion matrices have a heavy diagonal, spammers' rows ignore the truth.
    for worker in good:
        diagonal = np.diag(ds.confusion[worker].to_numpy())
        assert (diagonal[:3] > 0.8).all(), worker  # "o" has only 41 items, so leave it out
    good_scores = [spammer_score(ds.confusion[w]) for w in good]
    spam_scores = [spammer_score(ds.confusion[w]) for w in spammers]
    assert max(spam_scores) < 0.5 * min(good_scores)
    # The lazy worker answers n whatever the truth: so read on the rows the data determine; the "o"
    # row (about 29 of its answers) is shrunk towards its one-coin row (estimation.SHRINKAGE
    # answers' worth) and still puts most of its weight on n.
    lazy = ds.confusion["lazy_n"]
    assert lazy.loc[["n", "f", "m"], "n"].min() > 0.9, "the lazy worker answers n whatever the truth"
    assert lazy.loc["o"].idxmax() == "n" and lazy.loc["o", "n"] > 0.6

    # compare_methods lists exactly the items where the two labels differ (or majority is disputed).
    diff = compare_methods(majority, ds)
    differs = majority["label"].isna() | (majority["label"] != ds.labels.reindex(majority.index))
    assert set(diff.index) == set(majority.index[differs])


# --- seeded Dawid-Skene, posteriors, Wawa --------------------------------------------------------


def _frame(rows):
    return pd.DataFrame(rows, columns=["item", "worker", "label"])


def test_seeded_dawid_skene_learns_a_worker_who_swaps_labels_from_gold():
    # A answers "f" where the truth (gold, via B) is "m"; on x0..x2 only A answered "f".
    rows = [(f"g{i}", "A", "f") for i in range(4)] + [(f"g{i}", "B", "m") for i in range(4)]
    rows += [(f"x{i}", "A", "f") for i in range(3)]
    unseeded = dawid_skene(_frame(rows))
    assert set(unseeded.labels) == {"f"}  # without gold, A and B look alike and "f" wins
    seeded = dawid_skene(_frame(rows), gold={f"g{i}": "m" for i in range(4)})
    table = seeded.label_table()
    assert (table.loc[[f"g{i}" for i in range(4)], "posterior"] == 1.0).all()  # gold labels fixed
    assert (table.loc[[f"g{i}" for i in range(4)], "label"] == "m").all()
    # A's "f" now reads as evidence of "m"
    assert (table.loc[["x0", "x1", "x2"], "label"] == "m").all()
    # Four gold answers are evidence, not certainty: A's row is shrunk towards the pooled crowd's
    # (coins.SKILL_PRIOR and estimation.SHRINKAGE answers' worth), so the posterior is high but below 0.99
    # (0.82 since the crowd's accuracy is read by true label: A's four wrong answers on m weigh on m's).
    assert (table.loc[["x0", "x1", "x2"], "posterior"] > 0.8).all()
    assert (table.loc[["x0", "x1", "x2"], "posterior"] < 0.99).all()
    # A's row for m puts its weight on f (a prior worth coins.SKILL_PRIOR answers holds it near ½).
    assert seeded.confusion["A"].loc["m"].idxmax() == "f" and seeded.confusion["A"].loc["m", "f"] > 0.5


def test_seeded_dawid_skene_rejects_unknown_gold_labels():
    with pytest.raises(ValueError, match="gold label"):
        dawid_skene(_frame([("a", "1", "n")]), gold={"a": "x"})


def test_label_table_carries_each_labels_posterior():
    table = dawid_skene(_frame([("a", "1", "n"), ("a", "2", "n"), ("b", "1", "f")])).label_table()
    assert list(table.columns) == ["label", "posterior"]
    assert ((table["posterior"] > 0.5) & (table["posterior"] <= 1.0)).all()


def test_wawa_by_hand():
    rows = [("a", "1", "n"), ("a", "2", "n"), ("a", "3", "f"), ("b", "1", "f"), ("b", "2", "f"), ("b", "3", "f")]
    rows += [("c", "1", "m"), ("c", "2", "f"), ("d", "3", "o"), ("d", "1", "n")]
    table = wawa(_frame(rows))
    # Majority: a n, b f (c, d tied). Skills: 1 → 2/2, 2 → 2/2, 3 → 1/2.
    assert table.loc["a", "label"] == "n" and table.loc["a", "confidence"] == pytest.approx(2 / 2.5)
    assert table.loc["b", "label"] == "f" and table.loc["b", "confidence"] == pytest.approx(1.0)
    assert table.loc["c", "label"] is None and bool(table.loc["c", "disputed"])  # 1 vs 1: still a tie
    # d: worker 1 (skill 1) says n, worker 3 (skill 1/2) says o -> n with 1/1.5
    assert table.loc["d", "label"] == "n" and table.loc["d", "confidence"] == pytest.approx(1 / 1.5)


def test_label_counts_equal_the_crosstab_definition_on_random_crowds():
    """The bincount in label_counts is the items × labels crosstab it replaced, cell for cell."""
    from genderbias.crowd.aggregation import LABELS, label_counts

    rng = np.random.default_rng(7)
    for size in (0, 1, 5, 200):
        items = [f"q{rng.integers(0, max(1, size // 3))}" for _ in range(size)]
        frame = pd.DataFrame(
            {"item": items, "worker": [f"w{i}" for i in range(size)], "label": rng.choice(list(LABELS), size)}
        )
        expected = pd.crosstab(frame["item"], pd.Categorical(frame["label"], categories=list(LABELS)), dropna=False)
        expected = expected.reindex(columns=list(LABELS), fill_value=0).sort_index().astype(np.int64)
        counts = label_counts(frame)
        assert counts.index.tolist() == expected.index.tolist()
        assert counts.columns.tolist() == list(LABELS)
        assert (counts.to_numpy() == expected.to_numpy()).all()
