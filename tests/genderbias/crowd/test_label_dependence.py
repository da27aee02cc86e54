"""The sensitivity check for ranking-dependent labelling errors (issue 40, item 2):
:func:`genderbias.crowd.label_dependence.dependence_table` on hand-computed cases, and the reading of a batch's
answers as erring with D (:func:`genderbias.crowd.label_dependence.dependent_fit`) against the model written out."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from genderbias.crowd import label_dependence

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
    table = label_dependence.dependence_table(wide, probabilities, combined, "A", [0.0])
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
    row = label_dependence.dependence_table(wide, probabilities, combined, "A", [math.log(9)]).iloc[0]
    assert row["shift"] == pytest.approx(41 / 122 - 0.5, abs=1e-12)
    assert row["difference_corrected"] == pytest.approx(41 / 122, abs=1e-12)
    assert row["difference_combined_low"] == pytest.approx(0.1 + 41 / 122 - 0.5, abs=1e-12)


def test_the_shift_is_monotone_in_the_stated_direction():
    """D > 0 trusts the labels less where the baseline's value is high (q2, d = 1): the corrected
    difference falls as D grows, and rises for D < 0; at D = 3 the moved interval still excludes 0, and
    with a narrower margin (low 0.3) a larger D makes it lose significance."""
    wide, probabilities, combined = _case()
    grid = [-3.0, -1.0, 0.0, 0.5, 1.0, 2.0, 3.0, 6.0]
    table = label_dependence.dependence_table(wide, probabilities, combined, "A", grid)
    values = table["difference_corrected"].to_numpy()
    assert np.all(np.diff(values) < 0), values
    assert values[grid.index(0.0)] == 0.5
    combined.loc[0, "difference_combined_low"] = 0.3
    moved = label_dependence.dependence_table(wide, probabilities, combined, "A", [0.0, 6.0])
    assert moved["significant"].tolist() == [True, False]


def test_progress_counts_each_column_and_dependence_it_simulates():
    """A large batch's check is a simulation per metric column and D (minutes): ``progress`` is told each one as
    it ends, from 0 to their number, the columns no report row asks for left out of the count."""
    wide, probabilities, combined = _case()
    other = ("RaB", "tf", 10)  # a column of the runs with no row in the report: not checked
    for run, table in wide.items():
        wide[run] = table.assign(**{"other": table.iloc[:, 0]}).set_axis(
            pd.MultiIndex.from_tuples([KEY, other], names=table.columns.names), axis=1
        )
    simulated, told = [], []

    def simulate(z, differences, d):
        simulated.append(d)
        return np.zeros(differences.shape[1])

    label_dependence.dependence_table(
        wide, probabilities, combined, "A", [0.0, 1.0, 2.0], simulate=simulate, progress=lambda *args: told.append(args)
    )
    assert len(simulated) == 3
    assert told == [(label_dependence.CHECKING, done, 3) for done in range(4)]


def test_tilt_keeps_rows_summing_to_one_and_certain_rows_certain():
    probabilities = pd.DataFrame([[0.6, 0.3, 0.1, 0.0], [0.0, 0.0, 1.0, 0.0]], columns=["n", "f", "m", "o"])
    out = label_dependence.tilted(probabilities, np.array([1.0, 1.0]), 1.0)
    assert np.allclose(out.sum(axis=1), 1.0)
    assert out.iloc[1].tolist() == [0.0, 0.0, 1.0, 0.0]
    # the top label's error odds (0.4/0.6) times e: the others keep their 3:1 proportion
    top = 1 / (1 + 0.4 / 0.6 * math.e)
    assert out.iloc[0, 0] == pytest.approx(top)
    assert out.iloc[0, 1] / out.iloc[0, 2] == pytest.approx(3.0)


def test_dependent_fit_is_the_fixed_point_of_the_tilted_model_written_out():
    """:func:`label_dependence.dependent_fit` checked at its answer against the model written out here: (1) each band's class
    shares are its queries' probabilities plus half a query per label (120 queries: two bands, under and over
    the median z); (2) each query's probabilities are Bayes' rule with those shares and every answer's
    probability under true label t: the returned row's θ(t, t) with its error odds × exp(D·z) when the answer
    is t, the rest in the row's proportions of the wrong answers (D's definition); (3) each row is the MAP of
    the tilted likelihood (score of its log odds 0 with 2 right and 1 wrong pseudo-answers; wrong proportions
    = the expected wrong counts plus 1 per cell). A gold question is read untilted with its label, a ruled row
    outside ``fitted`` keeps its probabilities and its answers count for the rows."""
    labels = ["n", "f", "m", "o"]
    rng = np.random.default_rng(7)
    n, k, d = 120, len(labels), 1.3
    qids = [f"q{i}" for i in range(n)]
    truth = rng.integers(k, size=n)
    z = rng.normal(size=n) + 0.5 * truth
    answers = []
    for w, accuracy in (("w1", 0.9), ("w2", 0.75), ("w3", 0.6)):
        for q in range(n):
            wrong_odds = (1 - accuracy) / accuracy * math.exp(d * z[q])
            ok = rng.random() < 1 / (1 + wrong_odds)
            answers.append((qids[q], w, labels[truth[q] if ok else (truth[q] + rng.integers(1, k)) % k]))
        answers.append(("g0", w, "f" if w != "w3" else "m"))
    answers = pd.DataFrame(answers, columns=["item", "worker", "label"])
    gold = {"g0": "f"}
    probabilities = pd.DataFrame(np.full((n, k), 1 / k), index=qids, columns=labels)
    probabilities.loc[qids[-1]] = np.eye(k)[truth[-1]]  # a ruling, not fitted
    fitted = qids[:-1]

    got, rows = label_dependence.dependent_fit(answers, gold, probabilities, z, d, fitted=fitted)
    post = got.to_numpy()
    assert got.loc[qids[-1]].tolist() == np.eye(k)[truth[-1]].tolist()
    band = (z[: n - 1] > np.median(z[: n - 1])).astype(int)
    shares = np.stack([post[: n - 1][band == b].sum(axis=0) + 0.5 for b in (0, 1)])
    shares /= shares.sum(axis=1, keepdims=True)
    likelihood = np.ones((n - 1, k))
    score = {w: np.full(k, 1.0) - 3.0 * (1 - rows[w].to_numpy().diagonal()) for w in rows}
    wrong_counts = {w: np.ones((k, k)) - np.eye(k) for w in rows}
    for item, worker, given in answers.itertuples(index=False):
        theta, g = rows[worker].to_numpy(), labels.index(given)
        weights = np.eye(k)[labels.index(gold[item])] if item in gold else post[qids.index(item)]
        factor = 1.0 if item in gold else math.exp(d * z[qids.index(item)])
        for t in range(k):
            odds = (1 - theta[t, t]) / theta[t, t] * factor
            right = 1 / (1 + odds)
            p = right if g == t else (1 - right) * theta[t, g] / (1 - theta[t, t])
            score[worker][t] += weights[t] * ((g != t) - (1 - right))
            if g != t:
                wrong_counts[worker][t, g] += weights[t]
            if item in fitted:
                likelihood[qids.index(item), t] *= p
    expected = likelihood * shares[band]
    expected /= expected.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(post[: n - 1], expected, atol=1e-4)
    for w, theta in rows.items():
        np.testing.assert_allclose(score[w], 0.0, atol=1e-3)
        pattern = theta.to_numpy() * (1 - np.eye(k))
        np.testing.assert_allclose(
            pattern / pattern.sum(axis=1, keepdims=True), wrong_counts[w] / wrong_counts[w].sum(axis=1, keepdims=True),
            atol=1e-4,
        )  # fmt: skip
