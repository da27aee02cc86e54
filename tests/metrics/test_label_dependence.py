"""The sensitivity check for ranking-dependent labelling errors (issue 40, item 2):
:func:`metrics.label_uncertainty.dependence_table` on hand-computed cases, and the reading of a batch's
answers as erring with D (:func:`metrics.label_uncertainty.dependent_posteriors`) against a computation written out."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from metrics import label_uncertainty as lu

KEY = ("ARaB", "tf", 10)


def _case():
    """Two queries, both 90% non-gendered (the gendered mass, 0.2, is below MIN_MASS: the corrected
    value is the π_n-weighted mean). Baseline A = (0, 1), so z = (−1, +1); B = (0, 2), so the paired
    differences are d = (0, 1). Plain corrected difference: (0.9·0 + 0.9·1)/(0.9 + 0.9) = 0.5."""
    probabilities = pd.DataFrame(
        [[0.9, 0.05, 0.05, 0.0], [0.9, 0.05, 0.05, 0.0]], index=["q1", "q2"], columns=["n", "f", "m", "o"]
    )
    columns = pd.MultiIndex.from_tuples([KEY], names=["metric", "variant", "cutoff"])
    wide = {
        "A": pd.DataFrame([[0.0], [1.0]], index=["q1", "q2"], columns=columns),
        "B": pd.DataFrame([[0.0], [2.0]], index=["q1", "q2"], columns=columns),
    }
    combined = pd.DataFrame(
        [{"run": "B", "metric": KEY[0], "variant": KEY[1], "cutoff": KEY[2], "difference_corrected": 0.5,
          "difference_combined_low": 0.1, "difference_combined_high": 0.9}]
    )  # fmt: skip
    return wide, probabilities, combined


def test_zero_dependence_gives_the_report_figure_exactly():
    wide, probabilities, combined = _case()
    table = lu.dependence_table(wide, probabilities, combined, "A", [0.0])
    row = table.iloc[0]
    assert row["shift"] == 0.0
    assert (row["difference_corrected"], row["difference_combined_low"], row["difference_combined_high"]) == (
        0.5,
        0.1,
        0.9,
    )
    assert bool(row["significant"])


def test_hand_computed_shift_at_log_nine():
    """D = ln 9: q1 (z = −1) has error odds (0.1/0.9)·e^(−ln 9) = 1/81, so π_n = 81/82; q2 (z = +1) has
    odds (1/9)·9 = 1, so π_n = 1/2. Corrected difference (1/2·1)/(81/82 + 1/2) = 41/122."""
    wide, probabilities, combined = _case()
    row = lu.dependence_table(wide, probabilities, combined, "A", [math.log(9)]).iloc[0]
    assert row["shift"] == pytest.approx(41 / 122 - 0.5, abs=1e-12)
    assert row["difference_corrected"] == pytest.approx(41 / 122, abs=1e-12)
    assert row["difference_combined_low"] == pytest.approx(0.1 + 41 / 122 - 0.5, abs=1e-12)


def test_the_shift_is_monotone_in_the_stated_direction():
    """D > 0 trusts the labels less where the baseline's value is high (q2, d = 1): the corrected
    difference falls as D grows, and rises for D < 0; at D = 3 the moved interval still excludes 0, and
    with a narrower margin (low 0.3) a larger D makes it lose significance."""
    wide, probabilities, combined = _case()
    grid = [-3.0, -1.0, 0.0, 0.5, 1.0, 2.0, 3.0, 6.0]
    table = lu.dependence_table(wide, probabilities, combined, "A", grid)
    values = table["difference_corrected"].to_numpy()
    assert np.all(np.diff(values) < 0), values
    assert values[grid.index(0.0)] == 0.5
    combined.loc[0, "difference_combined_low"] = 0.3
    moved = lu.dependence_table(wide, probabilities, combined, "A", [0.0, 6.0])
    assert moved["significant"].tolist() == [True, False]


def test_tilt_keeps_rows_summing_to_one_and_certain_rows_certain():
    probabilities = pd.DataFrame([[0.6, 0.3, 0.1, 0.0], [0.0, 0.0, 1.0, 0.0]], columns=["n", "f", "m", "o"])
    out = lu.tilted(probabilities, np.array([1.0, 1.0]), 1.0)
    assert np.allclose(out.sum(axis=1), 1.0)
    assert out.iloc[1].tolist() == [0.0, 0.0, 1.0, 0.0]
    # the top label's error odds (0.4/0.6) times e: the others keep their 3:1 proportion
    top = 1 / (1 + 0.4 / 0.6 * math.e)
    assert out.iloc[0, 0] == pytest.approx(top)
    assert out.iloc[0, 1] / out.iloc[0, 2] == pytest.approx(3.0)


def test_dependent_posteriors_read_each_answer_through_its_tilted_row_with_shares_per_band():
    """:func:`lu.dependent_posteriors` against a computation written out here: each answer's probability under
    true label t is θ_w(t, t) with its error odds × exp(D·z) when the answer is t, else the rest in θ_w's
    proportions of the wrong answers (D's definition); 120 queries make two bands (under and over the median
    z, at least MIN_BAND_QUERIES each), whose shares are the unique maximum of the likelihood with half a query
    per label (concave: found here by plain fixed-point iteration from uniform shares, not the code's start).
    A ruled row outside ``fitted`` and the answers on a gold item are left as they are."""
    labels = ["n", "f", "m", "o"]
    rng = np.random.default_rng(7)
    n, k, d = 120, len(labels), 1.3
    qids = [f"q{i}" for i in range(n)]
    rows = {}
    for w in ("w1", "w2", "w3"):
        raw = rng.dirichlet(np.ones(k), size=k) + 3 * np.eye(k)
        rows[w] = pd.DataFrame(raw / raw.sum(axis=1, keepdims=True), index=labels, columns=labels)
    z = rng.normal(size=n)
    answers = pd.DataFrame(
        [(q, w, labels[rng.integers(k)]) for q in qids[:-1] for w in rows] + [("g0", "w1", "f")],
        columns=["item", "worker", "label"],
    )
    probabilities = pd.DataFrame(rng.dirichlet(np.ones(k), size=n), index=qids, columns=labels)
    probabilities.loc[qids[-1]] = [0.0, 1.0, 0.0, 0.0]  # a ruling, no answers, not fitted
    fitted = qids[:-1]

    likelihood = np.ones((n - 1, k))
    for item, worker, given in answers.itertuples(index=False):
        if item not in fitted:
            continue
        q, g, theta = qids.index(item), labels.index(given), rows[worker].to_numpy()
        for t in range(k):
            odds = (1 - theta[t, t]) / theta[t, t] * math.exp(d * z[q])
            right = 1 / (1 + odds)
            likelihood[q, t] *= right if g == t else (1 - right) * theta[t, g] / (1 - theta[t, t])
    band = (z[: n - 1] > np.median(z[: n - 1])).astype(int)
    assert np.bincount(band).tolist() == [60, 59]
    shares = np.full((2, k), 1 / k)
    for _ in range(20_000):
        post = likelihood * shares[band]
        post /= post.sum(axis=1, keepdims=True)
        new = np.stack([post[band == b].sum(axis=0) + 0.5 for b in (0, 1)])
        new /= new.sum(axis=1, keepdims=True)
        if np.abs(new - shares).max() < 1e-14:
            break
        shares = new
    got = lu.dependent_posteriors(answers, rows, probabilities, z, d, fitted=fitted)
    np.testing.assert_allclose(got.loc[fitted].to_numpy(), post, atol=1e-6)
    assert got.loc[qids[-1]].tolist() == [0.0, 1.0, 0.0, 0.0]
    assert list(got.index) == qids and list(got.columns) == labels
