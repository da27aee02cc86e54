"""Each machine-accepted label's probabilities from the blind sample (genderbias.crowd.label_probabilities)."""

import numpy as np
import pytest

from genderbias.crowd import label_probabilities as lp

LABELS = ["n", "f", "m", "o"]


def test_a_band_is_the_crowds_label_distribution_smoothed():
    """Twelve sample queries the machine called n (too few for 4 bands of 10: one band); the crowd
    said n 9 times, f twice, o once. With 0.5 added to each label: (9.5, 2.5, 0.5, 1.5) / 14."""
    human = ["n"] * 9 + ["f"] * 2 + ["o"]
    got = lp.band_distributions(LABELS, ["n"] * 12, np.linspace(0.6, 0.99, 12), human, [1.0] * 12, ["n"], [0.95])
    assert got[0] == pytest.approx(np.array([9.5, 2.5, 0.5, 1.5]) / 14)


def test_bands_follow_the_confidence_and_the_design_weights():
    """40 sample queries called f: the 20 least confident were all crowd n, the 20 most confident
    crowd f. Two bands of 20 (BANDS = 4 quantile bands, each ≥ 10); weights double the first half."""
    conf = np.linspace(0.5, 0.99, 40)
    human = ["n"] * 20 + ["f"] * 20
    weights = [2.0] * 20 + [1.0] * 20
    unsure, sure = lp.band_distributions(LABELS, ["f"] * 40, conf, human, weights, ["f", "f"], [0.52, 0.98])
    # A band of 10 crowd-n queries (weights rescaled to its 10 queries): (10.5, 0.5, 0.5, 0.5) / 12.
    assert unsure == pytest.approx(np.array([10.5, 0.5, 0.5, 0.5]) / 12)
    assert sure == pytest.approx(np.array([0.5, 10.5, 0.5, 0.5]) / 12)


def test_a_label_the_sample_never_shows_takes_the_machines_confidence():
    got = lp.band_distributions(LABELS, ["n"] * 12, [0.9] * 12, ["n"] * 12, [1.0] * 12, ["o"], [0.7])
    assert got[0] == pytest.approx([0.1, 0.1, 0.1, 0.7])
    assert lp.confidence_rows(LABELS, ["o"], [0.7])[0] == pytest.approx(got[0])
