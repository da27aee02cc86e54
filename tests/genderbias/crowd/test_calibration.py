"""How sure the crowd model is right to be (:func:`genderbias.crowd.calibration.posterior_temperature`,
:func:`genderbias.crowd.calibration.tempered`), checked against posteriors whose miscalibration is
made, not fitted: labels drawn from calibrated probabilities, then the probabilities sharpened or
flattened by a known temperature."""

from __future__ import annotations

import numpy as np
import pytest

from genderbias.crowd import calibration


def _calibrated(rng: np.random.Generator, n: int, k: int = 4) -> tuple[np.ndarray, np.ndarray]:
    """Probabilities (Dirichlet, skewed like a crowd's posteriors) and labels drawn from them."""
    p = rng.dirichlet(np.full(k, 0.4), size=n)
    truth = (rng.random(n)[:, None] > p.cumsum(axis=1)).sum(axis=1)
    return p, np.minimum(truth, k - 1)


def test_tempered_is_the_power_renormalised_and_keeps_zeros():
    p = np.array([[0.7, 0.2, 0.1, 0.0], [0.25, 0.25, 0.25, 0.25]])
    out = calibration.tempered(p, 2.0)
    expected = np.sqrt(p) / np.sqrt(p).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(out, expected, rtol=1e-12)
    assert out[0, 3] == 0.0
    np.testing.assert_allclose(calibration.tempered(p, 1.0), p, rtol=1e-12)


@pytest.mark.parametrize("made", [0.7, 1.0, 1.5, 2.5])
def test_the_temperature_made_is_the_temperature_found(made):
    """20,000 labels per draw, 5 draws: the temperature found is the one that made the posteriors too
    sure (``made`` > 1) or too unsure (< 1), within 0.05 (its sampling s.d. at this size is about 0.01,
    measured over the draws here); tempering by it leaves them calibrated: in each of ten bins of the
    largest probability with 500 labels or more, the share right within 4 binomial s.e. of the bin's mean
    probability (a one-in-16,000 chance per bin when calibrated)."""
    found = []
    for seed in range(5):
        rng = np.random.default_rng([58, seed])
        p, truth = _calibrated(rng, 20_000)
        miscalibrated = calibration.tempered(p, 1.0 / made)
        temperature = calibration.posterior_temperature(truth[None], miscalibrated[None])
        found.append(temperature)
        mended = calibration.tempered(miscalibrated, temperature)
        top = mended.max(axis=1)
        right = mended.argmax(axis=1) == truth
        bins = np.minimum((top * 10).astype(int), 9)
        for b in np.unique(bins):
            inside = bins == b
            if inside.sum() >= 500:
                mean = top[inside].mean()
                se = np.sqrt(mean * (1 - mean) / inside.sum())
                assert abs(right[inside].mean() - mean) < 4 * se, (made, b, right[inside].mean(), mean)
    assert np.mean(found) == pytest.approx(made, abs=0.05)
    assert np.std(found, ddof=1) < 0.05


def test_the_temperature_stays_within_its_bounds():
    """Posteriors that say nothing (every label equally likely) are no calibration's: the bound holds."""
    rng = np.random.default_rng(3)
    truth = rng.integers(0, 4, 1000)
    certain_and_wrong = np.eye(4)[(truth + 1) % 4] * 0.98 + 0.005
    assert calibration.posterior_temperature(truth[None], certain_and_wrong[None]) == pytest.approx(
        calibration.TEMPERATURES[1], rel=1e-3
    )
