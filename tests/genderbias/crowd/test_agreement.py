"""Agreement statistics against published examples and brute-force reference computations."""

from __future__ import annotations

import itertools
import json
import math

import krippendorff
import numpy as np
import pandas as pd
import pytest

from genderbias.crowd.aggregation import label_counts, majority_vote
from genderbias.crowd.agreement import (
    _alpha_from_sums,
    _alpha_parts,
    agreement_report,
    annotator_confusion,
    bootstrap_alpha,
    fleiss_kappa,
    fleiss_kappa_from_counts,
    gwet_ac1,
    krippendorff_alpha,
    nominal_alpha_from_counts,
    per_category_ac1,
    per_category_alpha,
    percent_agreement,
    reliability_matrix,
    worker_agreement,
)
from genderbias.labels import LABELS

nan = np.nan

# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", section C: nominal data,
# 4 observers (A-D) × 12 units, with missing values. The paper derives n = 40 pairable values,
# value totals n_c = 9, 13, 10, 5, 3 and coincidence diagonal o_cc = 7, 10, 8, 4, 3 (sum 32), so
# alpha = 1 - (n - 1)(n - sum o_cc) / (n^2 - sum n_c^2) = 1 - 39 * 8 / (1600 - 384) = 0.743.
KRIPPENDORFF_2011 = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, nan, nan, nan],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, nan, 3],
    [nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, nan],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, nan],
]
KRIPPENDORFF_VALUES = ("1", "2", "3", "4", "5")

# Wikipedia, "Fleiss' kappa", worked example: 10 subjects, 14 raters, 5 categories.
# P-bar = 0.378, P_e = 0.213, kappa = (0.378 - 0.213) / (1 - 0.213) = 0.210.
FLEISS_WIKIPEDIA = [
    [0, 0, 0, 0, 14],
    [0, 2, 6, 4, 2],
    [0, 0, 3, 5, 6],
    [0, 3, 9, 2, 0],
    [2, 2, 8, 1, 1],
    [7, 7, 0, 0, 0],
    [3, 2, 6, 3, 0],
    [2, 5, 3, 2, 2],
    [6, 5, 2, 1, 0],
    [0, 2, 2, 3, 7],
]


def judgments(rows) -> pd.DataFrame:
    return pd.DataFrame(list(rows), columns=["item", "worker", "label"])


def from_reliability_data(data) -> pd.DataFrame:
    """Observers × units matrix (nan = missing) to a judgments frame with string labels."""
    return judgments(
        (f"u{unit:02d}", f"obs{observer}", str(int(value)))
        for observer, row in enumerate(data)
        for unit, value in enumerate(row)
        if not math.isnan(value)
    )


def from_count_table(table) -> pd.DataFrame:
    """Subjects × categories counts to judgments (categories '1'.., raters r0.. assigned in order)."""
    rows = []
    for subject, counts in enumerate(table):
        labels = [str(c + 1) for c, k in enumerate(counts) for _ in range(k)]
        rows += [(f"s{subject:02d}", f"r{r}", label) for r, label in enumerate(labels)]
    return judgments(rows)


def random_crowd(seed: int, items: int = 300, workers: int = 25, per_item=(1, 2, 3, 4)) -> pd.DataFrame:
    """Workers agree with a hidden label with some probability; items get varying numbers of judgments."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(items):
        hidden = rng.choice(LABELS, p=[0.5, 0.2, 0.25, 0.05])
        for w in rng.choice(workers, size=rng.choice(per_item), replace=False):
            label = hidden if rng.random() < 0.7 else rng.choice(LABELS)
            rows.append((f"q{i:04d}", f"w{w:02d}", label))
    return judgments(rows)


def brute_force_pairs(frame: pd.DataFrame) -> list[tuple[str, str]]:
    """All ordered pairs of labels from different workers on the same item, by plain iteration."""
    pairs = []
    for _, group in frame.groupby("item"):
        pairs += list(itertools.permutations(group["label"].tolist(), 2))
    return pairs


# --- Krippendorff's alpha ------------------------------------------------------------------------


def test_krippendorff_2011_example_package_path():
    frame = from_reliability_data(KRIPPENDORFF_2011)
    alpha = krippendorff_alpha(frame, labels=KRIPPENDORFF_VALUES)
    assert round(alpha, 3) == 0.743
    assert alpha == pytest.approx(1 - 39 * 8 / (1600 - 384))


def test_krippendorff_2011_example_fast_path():
    frame = from_reliability_data(KRIPPENDORFF_2011)
    counts = label_counts(frame, KRIPPENDORFF_VALUES).to_numpy()
    assert counts.sum() == 41  # unit 12 has a single value and is not pairable: n = 40
    alpha = nominal_alpha_from_counts(counts)
    assert round(alpha, 3) == 0.743
    assert alpha == pytest.approx(1 - 39 * 8 / (1600 - 384))


def test_reliability_matrix_is_workers_by_items_with_nan_for_missing():
    frame = judgments([("a", "w2", "f"), ("a", "w1", "n"), ("b", "w1", "o")])
    matrix, workers, items = reliability_matrix(frame)
    assert workers == ["w1", "w2"] and items == ["a", "b"]
    np.testing.assert_array_equal(matrix, [[0, 3], [1, nan]])


@pytest.mark.parametrize("seed", range(5))
def test_fast_alpha_equals_the_package_on_random_crowds(seed):
    frame = random_crowd(seed)
    matrix, _, _ = reliability_matrix(frame)
    package = krippendorff.alpha(reliability_data=matrix, level_of_measurement="nominal")
    fast = nominal_alpha_from_counts(label_counts(frame).to_numpy())
    assert fast == pytest.approx(package, abs=1e-12)
    assert krippendorff_alpha(frame) == pytest.approx(package, abs=1e-12)


def test_alpha_is_one_for_perfect_agreement_and_nan_without_variation():
    perfect = judgments([("a", "w1", "n"), ("a", "w2", "n"), ("b", "w1", "f"), ("b", "w2", "f")])
    assert krippendorff_alpha(perfect) == pytest.approx(1.0)
    single_label = judgments([("a", "w1", "n"), ("a", "w2", "n"), ("b", "w1", "n"), ("b", "w2", "n")])
    assert math.isnan(krippendorff_alpha(single_label))
    assert math.isnan(nominal_alpha_from_counts(label_counts(single_label).to_numpy()))


def test_per_category_alpha_is_binary_alpha_of_one_label_against_the_rest():
    frame = random_crowd(11)
    result = per_category_alpha(frame)
    assert list(result) == list(LABELS)
    matrix, _, _ = reliability_matrix(frame)
    for k, label in enumerate(LABELS):
        binary = np.where(np.isnan(matrix), np.nan, (matrix == k).astype(float))
        expected = krippendorff.alpha(reliability_data=binary, level_of_measurement="nominal")
        assert result[label] == pytest.approx(expected, abs=1e-12), label


def test_per_category_alpha_hand_example():
    # "o" is always agreed on, "n" and "f" are confused with each other: n-vs-rest alpha < 1, o-vs-rest = 1.
    rows = [("a", "w1", "o"), ("a", "w2", "o"), ("b", "w1", "n"), ("b", "w2", "f"), ("c", "w1", "n"), ("c", "w2", "n")]
    result = per_category_alpha(judgments(rows))
    assert result["o"] == pytest.approx(1.0)
    # n-vs-rest: units (R,R), (N,R), (N,N); D_o = 2/6, D_e = 2·3·3/(6·5): alpha = 1 - (1/3)/(3/5) = 4/9.
    assert result["n"] == pytest.approx(4 / 9, abs=1e-12)
    assert math.isnan(result["m"]), "nobody used m: alpha of m-vs-rest is undefined"


# --- percent agreement, Fleiss' kappa ------------------------------------------------------------


def test_percent_agreement_hand_computed():
    rows = [
        ("a", "w1", "n"),
        ("a", "w2", "n"),
        ("a", "w3", "f"),  # pairs: (n,n) agrees, (n,f) twice disagrees -> 1/3
        ("b", "w1", "m"),
        ("b", "w2", "m"),  # 1
        ("c", "w1", "o"),  # single judgment: excluded
    ]
    assert percent_agreement(judgments(rows)) == pytest.approx((1 / 3 + 1) / 2)


def test_percent_agreement_matches_brute_force_pairs():
    frame = random_crowd(5)
    per_item = []
    for _, group in frame.groupby("item"):
        pairs = list(itertools.combinations(group["label"].tolist(), 2))
        if pairs:
            per_item.append(sum(a == b for a, b in pairs) / len(pairs))
    assert percent_agreement(frame) == pytest.approx(np.mean(per_item))


def test_fleiss_kappa_wikipedia_example():
    assert round(fleiss_kappa_from_counts(np.array(FLEISS_WIKIPEDIA)), 3) == 0.210
    frame = from_count_table(FLEISS_WIKIPEDIA)
    assert round(fleiss_kappa(frame, labels=("1", "2", "3", "4", "5")), 3) == 0.210


def test_fleiss_kappa_hand_computed_on_gender_labels():
    # Two raters, items: (n,n) (n,f) (m,m) (f,f). P_i = 1, 0, 1, 1 -> P-bar = 3/4.
    # Shares: n 3/8, f 3/8, m 2/8 -> P_e = (9 + 9 + 4) / 64 = 22/64. kappa = (3/4 - 22/64) / (1 - 22/64) = 26/42.
    rows = [("a", "w1", "n"), ("a", "w2", "n"), ("b", "w1", "n"), ("b", "w2", "f")]
    rows += [("c", "w1", "m"), ("c", "w2", "m"), ("d", "w1", "f"), ("d", "w2", "f")]
    assert fleiss_kappa(judgments(rows)) == pytest.approx(26 / 42)


def test_fleiss_kappa_is_none_for_unbalanced_or_single_judgments():
    unbalanced = [("a", "w1", "n"), ("a", "w2", "n"), ("b", "w1", "f"), ("b", "w2", "f"), ("b", "w3", "m")]
    assert fleiss_kappa(judgments(unbalanced)) is None
    singles = [("a", "w1", "n"), ("b", "w1", "f")]
    assert fleiss_kappa(judgments(singles)) is None


# --- bootstrap -----------------------------------------------------------------------------------


def test_bootstrap_interval_brackets_alpha_and_is_reproducible():
    frame = random_crowd(2, items=1000, per_item=(3,))
    alpha = krippendorff_alpha(frame)
    low, high = bootstrap_alpha(frame, n=500, seed=1)
    assert low < alpha < high
    assert bootstrap_alpha(frame, n=500, seed=1) == (low, high)
    assert bootstrap_alpha(frame, n=500, seed=2) != (low, high)
    inner_low, inner_high = bootstrap_alpha(frame, n=500, seed=1, confidence=0.5)
    assert low <= inner_low < inner_high <= high


def test_bootstrap_interval_narrows_with_more_items():
    small = bootstrap_alpha(random_crowd(4, items=200, per_item=(3,)), n=400)
    large = bootstrap_alpha(random_crowd(4, items=3200, per_item=(3,)), n=400)
    assert (large[1] - large[0]) < 0.5 * (small[1] - small[0])  # roughly 1/sqrt(16) of the width


def test_bootstrap_resample_equals_alpha_of_the_duplicated_items():
    """An item drawn k times must count k times: check one resample against the package on duplicated data."""
    frame = random_crowd(8, items=60, per_item=(2, 3))
    items = sorted(frame["item"].unique())
    rng = np.random.default_rng(0)
    drawn = rng.choice(items, size=len(items), replace=True)
    copies = [frame[frame["item"] == item].assign(item=f"{item}#{k}") for k, item in enumerate(drawn)]
    resampled = pd.concat(copies, ignore_index=True)
    matrix, _, _ = reliability_matrix(resampled)
    expected = krippendorff.alpha(reliability_data=matrix, level_of_measurement="nominal")
    weights = pd.Series(drawn).value_counts().reindex(items, fill_value=0).to_numpy().astype(float)
    m, diagonal, marginals = _alpha_parts(label_counts(frame).to_numpy())  # what bootstrap_alpha weights
    assert len(m) == len(items), "every item here is pairable"
    weighted = _alpha_from_sums(weights @ m, weights @ diagonal, weights @ marginals)
    assert float(weighted) == pytest.approx(expected, abs=1e-12)


def test_bootstrap_on_a_full_sized_random_crowd_brackets_chance_agreement():
    # Speed is measured by benchmarks, not here; this checks the fast path at full size.
    rng = np.random.default_rng(0)
    items = np.repeat([f"q{i}" for i in range(4000)], 3)
    workers = rng.integers(0, 300, size=len(items))
    workers = [f"w{w}-{k % 3}" for k, w in enumerate(workers)]  # distinct workers within an item
    frame = judgments(zip(items, workers, rng.choice(LABELS, size=len(items)), strict=True))
    low, high = bootstrap_alpha(frame, n=1000, seed=0)
    alpha = krippendorff_alpha(frame)
    assert abs(alpha) < 0.05  # random labels: agreement at chance level
    assert low < alpha < high and low < 0 < high


# --- per worker, confusion, report ---------------------------------------------------------------


def test_worker_agreement_leaves_the_workers_own_vote_out():
    rows = [
        ("A", "s", "n"),
        ("A", "x", "n"),
        ("A", "y", "f"),
        ("B", "s", "n"),
        ("B", "x", "f"),
        ("B", "y", "f"),
        ("C", "s", "n"),
        ("C", "x", "n"),
        ("C", "y", "n"),
        ("D", "s", "n"),
        ("D", "x", "f"),
        ("D", "y", "m"),
        ("E", "x", "m"),  # nobody else voted: skipped
    ]
    table = worker_agreement(judgments(rows))
    # s (always "n"): A others n-f tie (skip), B others f-f (disagree), C n-n (agree), D f-m tie (skip).
    # Counting s's own vote would give 2/3 (A's majority n includes s's vote).
    assert table.loc["s", ["judgments", "compared", "agreed"]].tolist() == [4, 2, 1]
    assert table.loc["s", "rate"] == pytest.approx(0.5)
    # x: A others n-f tie, B n-f tie, C n-n agree, D n-m tie, E nobody else.
    assert table.loc["x", ["judgments", "compared", "agreed"]].tolist() == [5, 1, 1]
    # y: A others n-n (disagree), B n-f tie, C agree, D n-f tie.
    assert table.loc["y", ["judgments", "compared", "agreed"]].tolist() == [4, 2, 1]


def test_worker_agreement_of_a_spammer_in_a_reliable_crowd():
    # Two perfect workers and one always-"n" spammer on 9 items, 3 of them truly "n".
    truth = ["n"] * 3 + ["f"] * 3 + ["m"] * 3
    rows = [(str(i), w, label) for i, label in enumerate(truth) for w in ("g1", "g2")]
    rows += [(str(i), "spam", "n") for i in range(9)]
    table = worker_agreement(judgments(rows))
    assert table.loc["spam", "rate"] == pytest.approx(3 / 9)
    # g1's others are g2 and spam: on the 6 non-"n" items they tie (skipped); on the "n" ones both say n.
    assert table.loc["g1", ["compared", "agreed"]].tolist() == [3, 3]


def test_gwet_ac1_hand_computed():
    # A: n n f; B: f f; C: n n n; D: m (one rating: in the prevalences, not in p_a).
    rows = [("A", "1", "n"), ("A", "2", "n"), ("A", "3", "f"), ("B", "1", "f"), ("B", "2", "f")]
    rows += [("C", "1", "n"), ("C", "2", "n"), ("C", "3", "n"), ("D", "1", "m")]
    frame = judgments(rows)
    # p_a = (1/3 + 1 + 1)/3 = 7/9; pi = (5/12, 1/3, 1/4, 0); p_e = (35 + 32 + 27)/144/3 = 47/216.
    assert gwet_ac1(frame) == pytest.approx((7 / 9 - 47 / 216) / (1 - 47 / 216))
    assert gwet_ac1(frame) == pytest.approx(121 / 169)
    per_category = per_category_ac1(frame)
    # "n" against the rest: p_a = 7/9, pi_n = 5/12, p_e = 2 * 5/12 * 7/12 = 35/72.
    assert per_category["n"] == pytest.approx(21 / 37)
    report = agreement_report(frame, bootstrap=0)
    assert report["gwet_ac1"] == pytest.approx(121 / 169)
    assert report["per_category_ac1"]["n"] == pytest.approx(21 / 37)


def test_gwet_ac1_stays_high_where_alpha_collapses_on_a_rare_category():
    # 20 items all "n" by both raters, one item n/o: alpha for "o" is at or below 0, AC1 stays near 1.
    rows = [(str(i), w, "n") for i in range(20) for w in ("1", "2")] + [("x", "1", "n"), ("x", "2", "o")]
    frame = judgments(rows)
    assert per_category_alpha(frame)["o"] <= 0
    assert per_category_ac1(frame)["o"] > 0.9


def test_annotator_confusion_hand_computed():
    rows = [("a", "w1", "n"), ("a", "w2", "n"), ("a", "w3", "f"), ("b", "w1", "m"), ("b", "w2", "m"), ("c", "w1", "o")]
    matrix = annotator_confusion(judgments(rows))
    assert list(matrix.index) == list(LABELS) and list(matrix.columns) == list(LABELS)
    expected = pd.DataFrame(0, index=list(LABELS), columns=list(LABELS))
    expected.loc["n", "n"] = 2  # (w1,w2) and (w2,w1)
    expected.loc["n", "f"] = expected.loc["f", "n"] = 2  # w1/w2 against w3, both orders
    expected.loc["m", "m"] = 2
    pd.testing.assert_frame_equal(matrix, expected, check_dtype=False)


def test_annotator_confusion_matches_brute_force_and_is_symmetric():
    frame = random_crowd(9)
    matrix = annotator_confusion(frame)
    expected = pd.DataFrame(0, index=list(LABELS), columns=list(LABELS))
    for a, b in brute_force_pairs(frame):
        expected.loc[a, b] += 1
    pd.testing.assert_frame_equal(matrix, expected, check_dtype=False)
    assert (matrix.to_numpy() == matrix.to_numpy().T).all()


def test_agreement_report_is_plain_json():
    crowd = random_crowd(1, items=200, per_item=(3,))
    # A worker's second answer to an item: the report, read off one count of the crowd, keeps the latest, as
    # each figure's own function does when given the crowd alone.
    first = crowd.iloc[0]
    other = next(label for label in LABELS if label != first["label"])
    frame = pd.concat([crowd, pd.DataFrame([{**first.to_dict(), "label": other}])], ignore_index=True)
    report = agreement_report(frame, bootstrap=200, seed=0)
    text = json.dumps(report, allow_nan=False)  # raises on NaN; numpy types would raise TypeError
    assert json.loads(text) == report

    for key in (
        "krippendorff_alpha",
        "alpha_ci",
        "per_category_alpha",
        "percent_agreement",
        "fleiss_kappa",
        "queries",
        "judgments",
        "workers",
        "labels",
        "disputed",
        "per_worker",
        "confusion",
    ):
        assert key in report, key
    majority = majority_vote(frame)
    assert report["queries"] == 200 and report["judgments"] == 600
    assert report["workers"] == frame["worker"].nunique()
    assert report["krippendorff_alpha"] == pytest.approx(krippendorff_alpha(frame))
    assert report["alpha_ci"][0] <= report["krippendorff_alpha"] <= report["alpha_ci"][1]
    assert report["fleiss_kappa"] == pytest.approx(fleiss_kappa(frame))
    assert report["labels"] == {label: int((majority["label"] == label).sum()) for label in LABELS}
    assert sum(report["labels"].values()) + len(report["disputed"]) == report["queries"]
    assert report["disputed"] == sorted(majority.index[majority["disputed"]])
    assert sum(w["judgments"] for w in report["per_worker"]) == 600
    assert report["confusion"]["labels"] == list(LABELS)
    assert report["confusion"]["matrix"] == annotator_confusion(frame).to_numpy().tolist()
    assert report["alpha_ci"] == pytest.approx(list(bootstrap_alpha(frame, n=200, seed=0)))
    assert report["per_category_alpha"] == pytest.approx(per_category_alpha(frame))
    assert report["gwet_ac1"] == pytest.approx(gwet_ac1(frame))
    assert report["per_category_ac1"] == pytest.approx(per_category_ac1(frame))
    assert report["percent_agreement"] == pytest.approx(percent_agreement(frame))
    workers = worker_agreement(frame)
    assert [(w["worker"], w["judgments"], w["agreed"]) for w in report["per_worker"]] == [
        (worker, row.judgments, row.agreed) for worker, row in workers.iterrows()
    ]


def test_agreement_report_uses_none_for_undefined_statistics():
    rows = [("a", "w1", "n"), ("a", "w2", "n"), ("b", "w1", "n"), ("b", "w3", "n"), ("b", "w2", "n")]
    report = agreement_report(judgments(rows), bootstrap=50)
    json.dumps(report, allow_nan=False)
    assert report["krippendorff_alpha"] is None
    assert report["alpha_ci"] == [None, None]
    assert report["fleiss_kappa"] is None  # unbalanced: 2 and 3 judgments
    assert report["per_category_alpha"]["f"] is None
    assert report["percent_agreement"] == 1.0
