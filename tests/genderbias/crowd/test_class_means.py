"""``class_means`` as matrix products by blocks of draws equals the plain fit, column by column and
draw by draw (issue 57: the label-corrected report's bootstrap was 11 s of einsums at 3,750 queries).

The expected values are computed here, independently: for every draw and every value column, a
weighted least-squares fit on that column's present rows by ``numpy.linalg.lstsq`` (√w-scaled
rows), left out (NaN) when a label's mass in that draw is below ``MIN_DRAW_MASS`` or the normal
matrix's condition number is at least ``MAX_CONDITION`` (the module's documented rule). Inputs are
small and random: few rows missing, most rows missing, none; one design per draw and one for all;
row weights; draws in which a rare label gets no mass; more draws than one block.
"""

from __future__ import annotations

import numpy as np
import pytest

from genderbias.crowd import class_means


def _plain(p: np.ndarray, values: np.ndarray, weights: np.ndarray, row_weights: np.ndarray | None) -> np.ndarray:
    draws, n = weights.shape
    k = p.shape[-1]
    out = np.full((draws, k, values.shape[1]), np.nan)
    rw = np.ones((1, n)) if row_weights is None else np.reshape(row_weights, (-1, n))
    for b in range(draws):
        pb = p[b] if p.ndim == 3 else p
        wb = weights[b] * rw[b if len(rw) > 1 else 0]
        for c in range(values.shape[1]):
            rows = ~np.isnan(values[:, c])
            x, y, wr = pb[rows], values[rows, c], wb[rows]
            mass = (wr[:, None] * x).sum(axis=0)
            normal = x.T @ (wr[:, None] * x)
            if (mass < class_means.MIN_DRAW_MASS).any() or np.linalg.cond(normal) >= class_means.MAX_CONDITION:
                continue
            root = np.sqrt(wr)
            out[b, :, c] = np.linalg.lstsq(x * root[:, None], y * root, rcond=None)[0]
    return out


def _inputs(rng: np.random.Generator, n: int, k: int, draws: int, columns: int, per_draw: bool):
    shape = (draws, n) if per_draw else (n,)
    p = rng.dirichlet(np.full(k, 0.7), size=shape)
    rare = rng.choice(n, 3, replace=False)  # the last label is all but absent outside three queries
    p[..., :, -1] *= 0.001
    p[..., rare, -1] = 0.6
    p /= p.sum(axis=-1, keepdims=True)
    weights = rng.multinomial(n, np.full(n, 1 / n), size=draws).astype(float)
    weights[: draws // 4, rare] = 0.0  # a quarter of the draws leave the rare label out: NaN there
    values = rng.normal(size=(n, columns)) + np.arange(columns)
    values[rng.choice(n, 4, replace=False), 0] = np.nan  # a few rows missing
    values[rng.choice(n, 4, replace=False), 1] = np.nan  # other few rows (another pattern)
    values[:, 2] = np.nan
    values[rng.choice(n, n // 4, replace=False), 2] = rng.normal(size=n // 4)  # most rows missing
    values[:, 3] = values[:, 0]  # the same pattern as column 0: solved together
    return p, weights, values


@pytest.mark.parametrize("per_draw", [True, False])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_equal_to_a_plain_fit_per_draw_and_column(per_draw, seed):
    rng = np.random.default_rng(seed)
    draws = class_means.DRAW_BLOCK + 9  # more than one block, the last one short
    p, weights, values = _inputs(rng, n=60, k=3, draws=draws, columns=6, per_draw=per_draw)
    fitted = class_means.class_means(p, values, weights)
    expected = _plain(p, values, weights, None)
    assert np.array_equal(np.isnan(fitted), np.isnan(expected))
    assert np.isnan(expected[: draws // 4]).any() and not np.isnan(expected[draws // 4 :, :, :2]).all()
    np.testing.assert_allclose(fitted, expected, rtol=1e-9, atol=1e-9, equal_nan=True)


def test_row_weights_and_the_single_fit():
    rng = np.random.default_rng(7)
    p, weights, values = _inputs(rng, n=50, k=2, draws=20, columns=4, per_draw=True)
    row_weights = rng.uniform(0.1, 1.0, size=(20, 50))
    np.testing.assert_allclose(
        class_means.class_means(p, values, weights, row_weights),
        _plain(p, values, weights, row_weights),
        rtol=1e-9,
        atol=1e-9,
        equal_nan=True,
    )
    single = rng.dirichlet(np.ones(3), size=40)
    vals = rng.normal(size=(40, 3))
    vals[:5, 1] = np.nan
    rw = rng.uniform(0.2, 1, size=40)
    expected = _plain(single, vals, np.ones((1, 40)), rw)[0]
    np.testing.assert_allclose(class_means.class_means(single, vals, row_weights=rw), expected, rtol=1e-9, atol=1e-9)
