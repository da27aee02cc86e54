"""genderbias.machine.calibration_statistics: stratum weights and the machine-vs-human calibration figures.

Expected numbers are worked out by hand in comments, or come from scikit-learn.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from genderbias.labels import LABELS
from genderbias.machine.calibration_sample import Stratum, stratum_weights
from genderbias.machine.calibration_statistics import _bootstrap_indices, calibration_figures

# --- stratum_weights ----------------------------------------------------------------------


def test_stratum_weights_are_inverse_inclusion_probabilities():
    # n: 120 queries, 12 sampled → each stands for 10; f: 5/2 = 2.5; o: nothing sampled → left out.
    strata = [Stratum("n", 120, 12), Stratum("f", 5, 2), Stratum("o", 3, 0)]
    assert stratum_weights(strata) == {"n": 10.0, "f": 2.5}


# --- calibration_figures: a hand-computed example ---------------------------------------

#: (machine, human, confidence)
TINY = [
    ("n", "n", 0.9),
    ("n", "n", 0.8),
    ("n", "f", 0.6),
    ("f", "f", 0.7),
    ("f", "m", 0.4),
    ("m", "m", 0.95),
]


def _tiny(**kwargs):
    machine, human, confidence = zip(*TINY, strict=True)
    return calibration_figures(list(machine), list(confidence), list(human), **kwargs)


def test_figures_by_hand_unweighted():
    figures = _tiny(bootstrap=0)
    # Confusion (rows human, columns machine): n→n 2; f→n 1, f→f 1; m→f 1, m→m 1.
    assert figures.confusion == [[2, 0, 0, 0], [1, 1, 0, 0], [0, 1, 1, 0], [0, 0, 0, 0]]
    # accuracy = trace / W = 4 / 6
    assert figures.accuracy == pytest.approx(4 / 6, abs=1e-15)
    # rows (human) 2, 2, 2, 0; columns (machine) 3, 2, 1, 0; p_e = (2·3 + 2·2 + 2·1) / 36 = 1/3;
    # p_o = 2/3; κ = (2/3 − 1/3) / (1 − 1/3) = 1/2.
    assert figures.kappa == pytest.approx(0.5, abs=1e-15)
    # precision: n 2/3, f 1/2, m 1/1, o never predicted; recall: n 2/2, f 1/2, m 1/2, o never true.
    assert figures.per_category == {
        "n": {"precision": pytest.approx(2 / 3), "recall": 1.0, "support": 2},
        "f": {"precision": 0.5, "recall": 0.5, "support": 2},
        "m": {"precision": 1.0, "recall": 0.5, "support": 2},
        "o": {"precision": None, "recall": None, "support": 0},
    }
    # Bins of 0.1: [0.9, 1] holds 0.9 and 0.95, both right: gap |1 − 0.925| = 0.075, weight 2;
    # 0.8 right: 0.2; 0.7 right: 0.3; 0.6 wrong: 0.6; 0.4 wrong: 0.4.
    # ECE = (2·0.075 + 0.2 + 0.3 + 0.6 + 0.4) / 6 = 1.65 / 6 = 0.275
    assert figures.ece == pytest.approx(0.275, abs=1e-12)
    # Brier = (0.1² + 0.2² + 0.6² + 0.3² + 0.4² + 0.05²) / 6 = (.01 + .04 + .36 + .09 + .16 + .0025) / 6
    assert figures.brier == pytest.approx(0.6625 / 6, abs=1e-12)
    assert figures.reliability == [
        {"low": 0.4, "high": 0.5, "count": 1, "confidence": 0.4, "accuracy": 0.0},
        {"low": 0.6, "high": 0.7, "count": 1, "confidence": 0.6, "accuracy": 0.0},
        {"low": 0.7, "high": 0.8, "count": 1, "confidence": 0.7, "accuracy": 1.0},
        {"low": 0.8, "high": 0.9, "count": 1, "confidence": 0.8, "accuracy": 1.0},
        {"low": 0.9, "high": 1.0, "count": 2, "confidence": pytest.approx(0.925), "accuracy": 1.0},
    ]
    assert figures.n == 6
    assert figures.weighted is False


def test_figures_by_hand_weighted():
    # Stratum weights: machine n → 2, f → 1, m → 3; W = 3·2 + 2·1 + 1·3 = 11.
    weights = [{"n": 2.0, "f": 1.0, "m": 3.0}[machine] for machine, _, _ in TINY]
    figures = _tiny(weights=weights, bootstrap=0)
    assert figures.confusion == [[4, 0, 0, 0], [2, 1, 0, 0], [0, 1, 3, 0], [0, 0, 0, 0]]
    # accuracy = (4 + 1 + 3) / 11
    assert figures.accuracy == pytest.approx(8 / 11, abs=1e-15)
    # rows 4, 3, 4; columns 6, 2, 3; p_e = (24 + 6 + 12) / 121 = 42/121, p_o = 88/121;
    # κ = (88 − 42) / (121 − 42) = 46/79.
    assert figures.kappa == pytest.approx(46 / 79, abs=1e-15)
    # precision n 4/6, f 1/2, m 3/3; recall n 4/4, f 1/3, m 3/4; support stays unweighted.
    assert figures.per_category["n"] == {"precision": pytest.approx(2 / 3), "recall": 1.0, "support": 2}
    assert figures.per_category["f"] == {"precision": 0.5, "recall": pytest.approx(1 / 3), "support": 2}
    assert figures.per_category["m"] == {"precision": 1.0, "recall": 0.75, "support": 2}
    # Top bin: 0.9 (w 2) and 0.95 (w 3): conf (1.8 + 2.85) / 5 = 0.93, gap 0.07, weight 5.
    # ECE = (5·0.07 + 2·0.2 + 1·0.3 + 2·0.6 + 1·0.4) / 11 = 2.65 / 11
    assert figures.ece == pytest.approx(2.65 / 11, abs=1e-12)
    # Brier = (2·(.01 + .04 + .36) + 1·(.09 + .16) + 3·.0025) / 11 = 1.0775 / 11
    assert figures.brier == pytest.approx(1.0775 / 11, abs=1e-12)
    assert figures.reliability[-1]["confidence"] == pytest.approx(0.93)
    assert figures.reliability[-1]["count"] == 2
    assert figures.weighted is True


def test_confidence_one_and_bin_edges():
    # 1.0 belongs to the last bin; 0.3 sits on an edge and goes to [0.3, 0.4), not [0.2, 0.3).
    figures = calibration_figures(["n", "n"], [1.0, 0.3], ["n", "f"], bootstrap=0)
    assert [(b["low"], b["high"]) for b in figures.reliability] == [(0.3, 0.4), (0.9, 1.0)]
    # ECE = (|0 − 0.3| + |1 − 1|) / 2
    assert figures.ece == pytest.approx(0.15)


# --- calibration_figures against scikit-learn -------------------------------------------


def _random_sample(seed: int, size: int = 150):
    rng = np.random.default_rng(seed)
    machine = rng.choice(list(LABELS), size=size, p=[0.5, 0.25, 0.2, 0.05])
    noise = rng.choice(list(LABELS), size=size)
    human = np.where(rng.random(size) < 0.7, machine, noise)
    confidence = rng.random(size)
    weights = rng.uniform(0.5, 20, size=size)
    return list(machine), confidence, list(human), weights


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("weighted", [False, True])
def test_figures_match_scikit_learn(seed, weighted):
    from sklearn.metrics import (
        brier_score_loss,
        cohen_kappa_score,
        confusion_matrix,
        precision_recall_fscore_support,
    )

    machine, confidence, human, weights = _random_sample(seed)
    w = weights if weighted else None
    figures = calibration_figures(machine, confidence, human, weights=w, bootstrap=0)
    labels = list(LABELS)
    assert figures.kappa == pytest.approx(
        cohen_kappa_score(human, machine, labels=labels, sample_weight=w), abs=1e-12, rel=0
    )
    np.testing.assert_allclose(
        figures.confusion, confusion_matrix(human, machine, labels=labels, sample_weight=w), rtol=1e-12
    )
    precision, recall, _, _ = precision_recall_fscore_support(
        human, machine, labels=labels, sample_weight=w, zero_division=np.nan
    )
    _, _, _, support = precision_recall_fscore_support(human, machine, labels=labels, zero_division=np.nan)
    for k, label in enumerate(labels):
        assert figures.per_category[label]["precision"] == pytest.approx(precision[k], abs=1e-12)
        assert figures.per_category[label]["recall"] == pytest.approx(recall[k], abs=1e-12)
        assert figures.per_category[label]["support"] == support[k]
    correct = np.array(machine) == np.array(human)
    assert figures.brier == pytest.approx(brier_score_loss(correct, confidence, sample_weight=w), abs=1e-12)
    assert figures.accuracy == pytest.approx(np.average(correct, weights=w), abs=1e-12)


def test_ece_matches_a_loop_over_bins():
    # An independent, unvectorised ECE: for each bin, the items with low ≤ c < high (1.0 in the last).
    machine, confidence, human, weights = _random_sample(11, size=400)
    correct = (np.array(machine) == np.array(human)).astype(float)
    expected = 0.0
    for b in range(15):
        low, high = b / 15, (b + 1) / 15
        inside = (confidence >= low) & ((confidence < high) | (b == 14))
        if inside.any():
            w = weights[inside]
            gap = abs(np.average(correct[inside], weights=w) - np.average(confidence[inside], weights=w))
            expected += w.sum() / weights.sum() * gap
    figures = calibration_figures(machine, confidence, human, weights=weights, bins=15, bootstrap=0)
    assert figures.ece == pytest.approx(expected, abs=1e-12)
    assert sum(b["count"] for b in figures.reliability) == 400


def test_kappa_when_chance_agreement_is_perfect():
    # Both said n every time: p_e = 1, κ = 0/0 → nan; sklearn agrees it is undefined.
    from sklearn.exceptions import UndefinedMetricWarning
    from sklearn.metrics import cohen_kappa_score

    with pytest.warns(UndefinedMetricWarning):
        assert math.isnan(cohen_kappa_score(["n"] * 3, ["n"] * 3, labels=list(LABELS)))
    figures = calibration_figures(["n", "n", "n"], [0.9, 0.8, 0.7], ["n", "n", "n"])
    assert math.isnan(figures.kappa)
    assert figures.accuracy == 1.0
    assert figures.as_dict()["kappa"] is None
    assert figures.as_dict()["kappa_ci"] == [None, None]


def test_kappa_zero_when_one_rater_uses_a_single_label():
    # machine always n, human n or f: p_o = 1/2, p_e = (1·2 + 1·0)/4 = 1/2 → κ = 0, well defined.
    figures = calibration_figures(["n", "n"], [0.9, 0.8], ["n", "f"], bootstrap=0)
    assert figures.kappa == 0.0


# --- bootstrap --------------------------------------------------------------------------


@pytest.mark.parametrize("weighted", [False, True])
def test_bootstrap_interval_contains_the_estimate_and_narrows_with_more_data(weighted):
    small = _random_sample(1, size=80)
    large = _random_sample(1, size=2000)
    widths = []
    for machine, confidence, human, weights in (small, large):
        figures = calibration_figures(
            machine, confidence, human, weights=weights if weighted else None, bootstrap=500, seed=5
        )
        low, high = figures.kappa_ci
        assert low < figures.kappa < high
        widths.append(high - low)
    assert widths[1] < widths[0] / 2  # 25 times the data: about 1/5 of the width


def test_bootstrap_is_seeded():
    machine, confidence, human, _ = _random_sample(2)
    first = calibration_figures(machine, confidence, human, bootstrap=300, seed=1).kappa_ci
    assert calibration_figures(machine, confidence, human, bootstrap=300, seed=1).kappa_ci == first
    assert calibration_figures(machine, confidence, human, bootstrap=300, seed=2).kappa_ci != first


def test_a_wider_level_gives_a_narrower_interval_inside():
    machine, confidence, human, _ = _random_sample(3)
    wide = calibration_figures(machine, confidence, human, bootstrap=400, seed=1, alpha=0.05).kappa_ci
    narrow = calibration_figures(machine, confidence, human, bootstrap=400, seed=1, alpha=0.5).kappa_ci
    assert wide[0] < narrow[0] < narrow[1] < wide[1]


@pytest.mark.parametrize("weighted", [False, True])
def test_bootstrap_matches_a_loop_with_scikit_learn(weighted):
    """Replays the same draws (per stratum in label order, or over all items) one resample at a
    time with sklearn's κ, and takes the percentiles: checks the vectorised confusion matrices."""
    from sklearn.metrics import cohen_kappa_score

    machine, confidence, human, weights = _random_sample(4, size=60)
    machine, human = np.array(machine), np.array(human)
    rng = np.random.default_rng(9)
    if weighted:
        strata = [np.flatnonzero(machine == label) for label in LABELS if np.any(machine == label)]
    else:
        strata = [np.arange(60)]
    draws = [positions[rng.integers(0, len(positions), size=(200, len(positions)))] for positions in strata]
    indices = np.hstack(draws)
    w = weights if weighted else np.ones(60)
    kappas = [cohen_kappa_score(human[row], machine[row], labels=list(LABELS), sample_weight=w[row]) for row in indices]
    expected = np.quantile(kappas, [0.05, 0.95])
    figures = calibration_figures(
        list(machine), confidence, list(human), weights=weights if weighted else None, bootstrap=200, seed=9, alpha=0.1
    )
    np.testing.assert_allclose(figures.kappa_ci, expected, rtol=0, atol=1e-12)


def test_stratified_bootstrap_resamples_within_strata():
    rng = np.random.default_rng(0)
    strata = [np.array([0, 3, 5]), np.array([1, 2]), np.array([4])]
    indices = _bootstrap_indices(rng, strata, rows=200, n=6)
    # Columns 0-2 draw from stratum 0, 3-4 from stratum 1, 5 from stratum 2: sizes are kept.
    assert set(indices[:, :3].ravel()) == {0, 3, 5}
    assert set(indices[:, 3:5].ravel()) == {1, 2}
    assert set(indices[:, 5]) == {4}


# --- as_dict and errors -----------------------------------------------------------------


def test_as_dict_is_json_ready():
    figures = _tiny(bootstrap=50)
    data = json.loads(json.dumps(figures.as_dict(), allow_nan=False))
    assert data["kappa"] == pytest.approx(0.5)
    assert isinstance(data["kappa_ci"], list) and len(data["kappa_ci"]) == 2
    assert data["per_category"]["o"] == {"precision": None, "recall": None, "support": 0}
    assert data["confusion"][0] == [2, 0, 0, 0]


@pytest.mark.parametrize(
    ("machine", "confidence", "human", "weights", "message"),
    [
        ([], [], [], None, "no items"),
        (["n"], [0.5, 0.6], ["n"], None, "lengths differ"),
        (["n", "f"], [0.5, 0.6], ["n", "f"], [1.0], "lengths differ"),
        (["n", "x"], [0.5, 0.6], ["n", "f"], None, r"machine labels not in .*\['x'\]"),
        (["n", "f"], [0.5, 0.6], ["n", "F"], None, r"human labels not in .*\['F'\]"),
        (["n"], [1.5], ["n"], None, r"confidences must be in \[0, 1\]"),
        (["n"], [-0.1], ["n"], None, r"confidences must be in \[0, 1\]"),
        (["n"], [float("nan")], ["n"], None, r"confidences must be in \[0, 1\]"),
        (["n", "f"], [0.5, 0.6], ["n", "f"], [1.0, 0.0], "weights must be positive"),
        (["n", "f"], [0.5, 0.6], ["n", "f"], [1.0, -2.0], "weights must be positive"),
    ],
)
def test_bad_input_is_rejected(machine, confidence, human, weights, message):
    with pytest.raises(ValueError, match=message):
        calibration_figures(machine, confidence, human, weights=weights)
