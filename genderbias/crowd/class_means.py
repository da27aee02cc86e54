"""The label-corrected class means: the runs' means per true label, from every query's label probabilities
(what :mod:`.label_uncertainty` builds its intervals on). The estimator, β = (PᵀP)⁻¹ Pᵀ v over all judged queries
(P: N × K probabilities, β_n the *corrected* value), and why not π-weighting: docs/metrics.md, "The label-corrected
value". Which labels get a mean of their own: :func:`label_map`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = [
    "DRAW_BLOCK", "MAX_CONDITION", "MIN_DRAW_MASS", "class_means", "contribution_summary", "contributions", "design",
    "design_draws", "label_map",
]  # fmt: skip

#: The label whose class mean is the report's value.
NON_GENDERED = "n"
#: A label other than n gets its own mean only with at least this many queries' worth of probability.
MIN_MASS = 10.0
#: A bootstrap draw is left out when a label's mass in it is below this or the fit is ill-conditioned.
MIN_DRAW_MASS = 0.5
MAX_CONDITION = 1e8


def label_map(probabilities: pd.DataFrame) -> tuple[np.ndarray, bool]:
    """How the labels become the regression's columns: ``(T, weighted)``, P = probabilities · T, column 0 n.

    A label other than n keeps a column with :data:`MIN_MASS` of probability (below it its mean is barely
    identified and its noise spills into μ_n); the others are pooled, or join the largest gendered label if
    the pool is small too. With no gendered column at all, ``weighted``: the π_n-weighted mean.
    """
    labels = list(probabilities.columns)
    mass = probabilities.astype(float).sum(axis=0)
    others = [c for c in labels if c != NON_GENDERED]
    kept = [c for c in others if mass[c] >= MIN_MASS]
    small = [c for c in others if c not in kept]
    pooled = float(sum(mass[c] for c in small))
    width = 1 + len(kept) + (1 if small and pooled >= MIN_MASS else 0)
    if width == 1:
        return np.eye(len(labels), 1, -labels.index(NON_GENDERED)), True
    t = np.zeros((len(labels), width))
    t[labels.index(NON_GENDERED), 0] = 1.0
    for j, c in enumerate(kept, start=1):
        t[labels.index(c), j] = 1.0
    target = width - 1 if pooled >= MIN_MASS else 1 + int(np.argmax([mass[c] for c in kept]))
    for c in small:
        t[labels.index(c), target] = 1.0
    return t, False


def design(probabilities: pd.DataFrame) -> tuple[np.ndarray, int, np.ndarray | None]:
    """The regression's design: ``(P, column of n, row weights)`` (:func:`label_map`)."""
    t, weighted = label_map(probabilities)
    pi = probabilities.astype(float).to_numpy()
    if weighted:
        return np.ones((len(pi), 1)), 0, pi @ t[:, 0]
    return pi @ t, 0, None


def design_draws(probabilities: pd.DataFrame, draws: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """Each draw's design ``([B × N × C], row weights [B × N] or None)`` in the point estimate's columns."""
    t, weighted = label_map(probabilities)
    draws = np.asarray(draws, dtype=np.float64)
    if draws.shape[1:] != probabilities.shape:
        raise ValueError(f"label probability draws of shape {draws.shape[1:]}, expected {probabilities.shape}")
    if weighted:
        return np.ones((*draws.shape[:2], 1)), draws @ t[:, 0]
    return draws @ t, None


#: Draws per block in :func:`class_means` (bounds its temporary arrays: a block × N × K of weighted probabilities).
DRAW_BLOCK = 64


def class_means(
    probabilities: np.ndarray,
    values: np.ndarray,
    weights: np.ndarray | None = None,
    row_weights: np.ndarray | None = None,
) -> np.ndarray:
    """Least-squares class means β (``[K × C]``; ``[B × K × C]`` with ``weights`` ``[B × N]``).

    ``probabilities``: ``[N × K]``, or ``[B × N × K]`` one per draw; ``values``: ``[N × C]``, NaN left out of
    that column's fit; ``row_weights``: ``[N]`` or ``[B × N]``. A draw with a label below
    :data:`MIN_DRAW_MASS` or an ill-conditioned fit gives NaN. Each missing-value pattern's rows are taken
    out of one Pᵀ W P per draw: the same sums as a fit per column, in another order.
    """
    p = np.asarray(probabilities, dtype=np.float64)
    values = np.asarray(values, dtype=np.float64)
    if values.ndim == 1:
        values = values[:, None]
    single = weights is None
    n, k = p.shape[-2], p.shape[-1]
    w = np.ones((1, n)) if single else np.asarray(weights, dtype=np.float64)
    if row_weights is not None:  # weighted least squares (the π_n-weighted mean of :func:`design`)
        w = w * np.asarray(row_weights, dtype=np.float64).reshape(-1, n)
    per_draw = p.ndim == 3
    draws = w.shape[0]
    out = np.full((draws, k, values.shape[1]), np.nan)
    present = ~np.isnan(values)
    filled = np.where(present, values, 0.0)
    patterns: dict[bytes, list[int]] = {}
    for j in range(values.shape[1]):
        patterns.setdefault(present[:, j].tobytes(), []).append(j)
    groups = [(present[:, columns[0]], columns) for columns in patterns.values()]
    for first in range(0, draws, DRAW_BLOCK):
        block = slice(first, min(first + DRAW_BLOCK, draws))
        wb = w[block]  # [b × N]
        pb = p[block] if per_draw else p[None]  # [b × N × K] or [1 × N × K]
        wp = wb[:, :, None] * pb  # [b × N × K]: each query's weighted probabilities
        wpt = wp.transpose(0, 2, 1)  # [b × K × N]
        gram = wpt @ pb  # [b × K × K]
        mass = wp.sum(axis=1)  # [b × K]
        moments = wpt @ filled  # [b × K × C]: a missing value adds nothing
        for rows, columns in groups:
            absent = ~rows
            if not absent.any():
                g, m = gram, mass
            elif absent.sum() * 2 <= n:  # few rows lacking: take them out
                pa = pb[:, absent, :]
                wpa = wp[:, absent, :]
                g, m = gram - wpa.transpose(0, 2, 1) @ pa, mass - wpa.sum(axis=1)
            else:  # most lacking: sum the present ones
                pr, wpr = pb[:, rows, :], wp[:, rows, :]
                g, m = wpr.transpose(0, 2, 1) @ pr, wpr.sum(axis=1)
            # A draw in which a label has (almost) no mass cannot estimate its mean: left out (NaN).
            solvable = (m >= MIN_DRAW_MASS).all(axis=1) & (np.linalg.cond(g) < MAX_CONDITION)
            if solvable.any():
                target = np.arange(block.start, block.stop)[solvable]
                out[np.ix_(target, np.arange(k), columns)] = np.linalg.solve(
                    g[solvable], moments[solvable][:, :, columns]
                )
    return out[0] if single else out


def contributions(
    run_values: pd.Series,
    baseline_values: pd.Series,
    probabilities: pd.DataFrame,
    in_set: set[str] | frozenset[str],
) -> tuple[float | None, pd.DataFrame]:
    """Which queries move the label-corrected paired difference D (run − baseline), and how uncertain
    their labels are: where an adjudication would move the result most.

    Settling q as label c (probability π_qc) and refitting gives D'(q, c); ``expected_shift`` =
    Σ_c π_qc |D'(q, c) − D|, ``if_non_gendered`` = D'(q, n) − D, ``if_gendered`` the expected D' − D given
    q is not n. Returns ``(D, table)`` with ``qid, difference, probability`` (π_n), ``in_set`` and those
    three, sorted by expected shift.
    """
    joined = pd.concat([run_values.rename("a"), baseline_values.rename("b")], axis=1, join="inner").dropna()
    joined.index = joined.index.astype(str)
    probabilities = probabilities.copy()
    probabilities.index = probabilities.index.astype(str)
    qids = [q for q in joined.index if q in probabilities.index]
    columns = ["qid", "difference", "probability", "in_set", "if_non_gendered", "if_gendered", "expected_shift"]
    if not qids:
        return None, pd.DataFrame(columns=columns)
    pi = probabilities.loc[qids].astype(float)
    labels = list(pi.columns)
    n_label = labels.index(NON_GENDERED)
    d = (joined.loc[qids, "a"] - joined.loc[qids, "b"]).to_numpy(dtype=np.float64)
    t, weighted = label_map(pi)
    pis = pi.to_numpy()
    if weighted:
        x, w = np.ones((len(qids), 1)), pis @ t[:, 0]
        settled_x = np.ones((len(labels), 1))
        settled_w = t[:, 0]  # 1 for n, 0 otherwise
    else:
        x, w = pis @ t, np.ones(len(qids))
        settled_x, settled_w = t, np.ones(len(labels))  # one-hot label c → row c of T
    gram = np.einsum("q,qi,qj->ij", w, x, x)
    moment = np.einsum("q,qi,q->i", w, x, d)
    beta = np.linalg.solve(gram, moment) if np.linalg.cond(gram) < MAX_CONDITION else np.full(len(gram), np.nan)
    # Every (query, label): remove the query's row, add the settled one, solve. [Q × L × K × K]
    own = w[:, None, None] * np.einsum("qi,qj->qij", x, x)
    new = settled_w[:, None, None] * np.einsum("ci,cj->cij", settled_x, settled_x)
    grams = gram[None, None] - own[:, None] + new[None, :]
    moments = (
        moment[None, None]
        - (w * d)[:, None, None] * x[:, None, :]
        + (settled_w[:, None] * settled_x)[None] * d[:, None, None]
    )
    solvable = np.linalg.cond(grams) < MAX_CONDITION
    settled = np.full(grams.shape[:2], np.nan)
    if solvable.any():
        settled[solvable] = np.linalg.solve(grams[solvable], moments[solvable][..., None])[..., 0, 0]
    change = settled - beta[0]
    gendered = 1.0 - pis[:, n_label]
    others = np.delete(np.arange(len(labels)), n_label)
    with np.errstate(invalid="ignore", divide="ignore"):
        if_gendered = np.where(gendered > 0, np.nansum(pis[:, others] * change[:, others], axis=1) / gendered, np.nan)
    table = pd.DataFrame(
        {
            "qid": qids,
            "difference": d,
            "probability": pis[:, n_label],
            "in_set": [q in in_set for q in qids],
            "if_non_gendered": change[:, n_label],
            "if_gendered": if_gendered,
            "expected_shift": np.nansum(pis * np.abs(change), axis=1),
        },
        columns=columns,
    )
    table = table.sort_values(["expected_shift", "qid"], ascending=[False, True], kind="stable").reset_index(drop=True)
    return (None if np.isnan(beta[0]) else float(beta[0])), table


def contribution_summary(table: pd.DataFrame, uncertain: tuple[float, float] = (0.05, 0.95)) -> dict:
    """Beside a :func:`contributions` table: the set's plain mean difference (None if empty) and size, the
    queries whose π_n lies strictly inside ``uncertain``, and the total expected shift."""
    in_set = table[table["in_set"].astype(bool)]
    low, high = uncertain
    return {
        "set_difference": float(in_set["difference"].mean()) if len(in_set) else None,
        "queries": len(in_set),
        "uncertain": int(((table["probability"] > low) & (table["probability"] < high)).sum()),
        "expected_shift_total": float(table["expected_shift"].sum()),
    }
