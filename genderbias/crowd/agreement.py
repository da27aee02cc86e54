"""Inter-annotator agreement for crowd gender labels (judgments as in :mod:`.aggregation`).

Krippendorff's nominal alpha is the headline: it copes with workers judging different subsets and
items with different numbers of judgments. Fleiss' kappa is defined (and reported) only when every
item has the same number. Every nominal statistic here derives from per-item label counts, which
makes :func:`bootstrap_alpha` a weighted sum of per-item contributions.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import krippendorff
import numpy as np
import pandas as pd

from genderbias.crowd.aggregation import count_validated, label_counts, majority_of_counts, validate_judgments
from genderbias.labels import LABELS
from genderbias.ranking.defaults import LEVEL
from genderbias.stats.significance import json_safe

__all__ = [
    "agreement_report", "annotator_confusion", "bootstrap_alpha", "fleiss_kappa", "fleiss_kappa_from_counts",
    "gwet_ac1", "krippendorff_alpha", "nominal_alpha_from_counts", "per_category_ac1", "per_category_alpha",
    "percent_agreement", "reliability_matrix", "worker_agreement",
]  # fmt: skip


def reliability_matrix(judgments: pd.DataFrame, labels: Sequence[str] = LABELS) -> tuple[np.ndarray, list, list]:
    """Workers × items matrix of label indices (``nan`` where unjudged), with the sorted worker and item ids."""
    return _reliability_matrix(validate_judgments(judgments, labels), labels)


def _reliability_matrix(frame: pd.DataFrame, labels: Sequence[str]) -> tuple[np.ndarray, list, list]:
    codes = pd.Categorical(frame["label"], categories=list(labels)).codes.astype(float)
    table = (
        frame.assign(code=codes).pivot(index="worker", columns="item", values="code").sort_index().sort_index(axis=1)
    )
    return table.to_numpy(dtype=float), list(table.index), list(table.columns)


def krippendorff_alpha(judgments: pd.DataFrame, labels: Sequence[str] = LABELS) -> float:
    """Nominal alpha by the ``krippendorff`` package; ``nan`` when undefined (fewer than two pairable
    values, or one label only: expected disagreement 0)."""
    frame = validate_judgments(judgments, labels)
    return _krippendorff_alpha(frame, count_validated(frame, labels).to_numpy(), labels)


def _krippendorff_alpha(frame: pd.DataFrame, counts: np.ndarray, labels: Sequence[str]) -> float:
    counts = _pairable_counts(counts)
    if counts.sum() < 2 or np.count_nonzero(counts.sum(axis=0)) < 2:
        return math.nan
    matrix, _, _ = _reliability_matrix(frame, labels)
    value = krippendorff.alpha(
        reliability_data=matrix,
        level_of_measurement="nominal",
        value_domain=np.arange(len(labels), dtype=float),
    )
    return float(value)


def _pairable_counts(counts: np.ndarray) -> np.ndarray:
    """Rows of an items × labels count table with at least two judgments (the only ones alpha uses)."""
    counts = np.asarray(counts)
    return counts[counts.sum(axis=1) >= 2]


def _alpha_parts(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-item contributions to nominal alpha: values ``m_u``, coincidence diagonal, marginals ``n_uc``
    (item ``u`` adds ``n_uc (n_uk - [c == k]) / (m_u - 1)`` to coincidence cell ``(c, k)``)."""
    counts = _pairable_counts(counts).astype(float)
    m = counts.sum(axis=1)
    diagonal = (counts * (counts - 1)).sum(axis=1) / (m - 1)
    return m, diagonal, counts


def _alpha_from_sums(n: np.ndarray, observed_agreement: np.ndarray, marginals: np.ndarray) -> np.ndarray:
    """Nominal alpha = 1 - (n - 1) (n - sum_c o_cc) / (n^2 - sum_c n_c^2); ``nan`` where undefined."""
    expected = n**2 - (marginals**2).sum(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        alpha = 1.0 - (n - 1.0) * (n - observed_agreement) / expected
    return np.where((expected > 0) & (n >= 2), alpha, np.nan)


def nominal_alpha_from_counts(counts: np.ndarray) -> float:
    """:func:`krippendorff_alpha` from an items × labels count table, without a workers × items matrix."""
    m, diagonal, marginals = _alpha_parts(np.asarray(counts))
    return float(_alpha_from_sums(m.sum(), diagonal.sum(), marginals.sum(axis=0)))


def per_category_alpha(judgments: pd.DataFrame, labels: Sequence[str] = LABELS) -> dict[str, float]:
    """Binary alpha of each label against all others: which categories the crowd finds hard ("o" is
    often far less reliable than "n"). ``nan`` for a label nobody (or everybody) used."""
    return _per_category(nominal_alpha_from_counts, label_counts(judgments, labels).to_numpy(), labels)


def _per_category(statistic, counts: np.ndarray, labels: Sequence[str]) -> dict[str, float]:
    """``statistic`` of each label against all others (an items × 2 table per label)."""
    total = counts.sum(axis=1)
    return {label: statistic(np.column_stack([counts[:, i], total - counts[:, i]])) for i, label in enumerate(labels)}


def percent_agreement(judgments: pd.DataFrame, labels: Sequence[str] = LABELS) -> float:
    """Mean share of agreeing judgment pairs over items with two or more judgments (``nan`` if none).
    Not chance-corrected."""
    return _percent_agreement(label_counts(judgments, labels).to_numpy())


def _percent_agreement(counts: np.ndarray) -> float:
    counts = _pairable_counts(counts).astype(float)
    if len(counts) == 0:
        return math.nan
    m = counts.sum(axis=1)
    agreeing = (counts * (counts - 1)).sum(axis=1) / (m * (m - 1))
    return float(agreeing.mean())


def fleiss_kappa_from_counts(counts: np.ndarray) -> float | None:
    """Fleiss' kappa from a subjects × categories count table: ``None`` unless every row has the same
    total ≥ 2; ``nan`` when one category only was used (chance agreement 1)."""
    counts = np.asarray(counts, dtype=float)
    if counts.ndim != 2 or len(counts) == 0:
        return None
    raters = counts.sum(axis=1)
    m = raters[0]
    if m < 2 or not np.all(raters == m):
        return None
    p_item = ((counts**2).sum(axis=1) - m) / (m * (m - 1))
    p_bar = p_item.mean()
    p_category = counts.sum(axis=0) / counts.sum()
    p_expected = (p_category**2).sum()
    if math.isclose(p_expected, 1.0):
        return math.nan
    return float((p_bar - p_expected) / (1.0 - p_expected))


def fleiss_kappa(judgments: pd.DataFrame, labels: Sequence[str] = LABELS) -> float | None:
    """Fleiss' kappa, or ``None`` unless every item has the same number (≥ 2) of judgments."""
    return fleiss_kappa_from_counts(label_counts(judgments, labels).to_numpy())


def bootstrap_alpha(
    judgments: pd.DataFrame,
    n: int = 1000,
    seed: int = 0,
    confidence: float = LEVEL,
    labels: Sequence[str] = LABELS,
) -> tuple[float, float]:
    """Percentile bootstrap interval for nominal alpha, resampling the pairable items (a multinomial
    weight vector each). Undefined resamples are ignored; ``(nan, nan)`` when none is defined."""
    if n < 1:
        raise ValueError("n must be at least 1")
    if not 0 < confidence < 1:
        raise ValueError("confidence must be between 0 and 1")
    return _bootstrap_alpha(label_counts(judgments, labels).to_numpy(), n, seed, confidence)


def _bootstrap_alpha(counts: np.ndarray, n: int, seed: int, confidence: float) -> tuple[float, float]:
    m, diagonal, marginals = _alpha_parts(counts)
    n_items = len(m)
    if n_items == 0:
        return (math.nan, math.nan)
    rng = np.random.default_rng(seed)
    alphas = np.empty(n)
    # Chunks keep the weight matrix small whatever n is.
    chunk = max(1, 2_000_000 // n_items)
    for start in range(0, n, chunk):
        size = min(chunk, n - start)
        weights = rng.multinomial(n_items, np.full(n_items, 1.0 / n_items), size=size).astype(float)
        alphas[start : start + size] = _alpha_from_sums(weights @ m, weights @ diagonal, weights @ marginals)
    alphas = alphas[~np.isnan(alphas)]
    if len(alphas) == 0:
        return (math.nan, math.nan)
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(alphas, [tail, 1.0 - tail])
    return (float(low), float(high))


def worker_agreement(judgments: pd.DataFrame, labels: Sequence[str] = LABELS) -> pd.DataFrame:
    """Per worker: how often its label equals the strict plurality of the *other* workers on the item.

    Leave-one-out, because counting the own vote flatters the spammers the figure is meant to flag
    (docs/metrics.md, "Labels and agreement").
    Columns: ``judgments``, ``compared`` (items where the others have a strict plurality), ``agreed`` and
    ``rate`` (``nan`` when nothing was compared).
    """
    frame = validate_judgments(judgments, labels)
    return _worker_agreement(frame, count_validated(frame, labels), labels)


def _worker_agreement(frame: pd.DataFrame, counts: pd.DataFrame, labels: Sequence[str]) -> pd.DataFrame:
    label_idx = pd.Categorical(frame["label"], categories=list(labels)).codes.astype(np.int64)
    others = counts.loc[frame["item"]].to_numpy().copy()
    others[np.arange(len(frame)), label_idx] -= 1  # leave the worker's own vote out
    top = others.max(axis=1) if len(others) else np.zeros(0, dtype=np.int64)
    comparable = (top > 0) & ((others == top[:, None]).sum(axis=1) == 1)
    agreed = comparable & (others.argmax(axis=1) == label_idx) if len(others) else comparable
    grouped = pd.DataFrame(
        {"worker": frame["worker"], "compared": comparable.astype(int), "agreed": agreed.astype(int)}
    ).groupby("worker", sort=True)
    table = grouped.agg(judgments=("compared", "size"), compared=("compared", "sum"), agreed=("agreed", "sum"))
    table["rate"] = table["agreed"] / table["compared"].where(table["compared"] > 0)
    return table.astype({"judgments": int, "compared": int, "agreed": int, "rate": float})


def gwet_ac1_from_counts(counts: np.ndarray) -> float:
    """Gwet's AC1 (Gwet 2008, multiple raters, nominal) from an items × labels count table.

    Beside α because α and κ collapse when one category is rare or dominant (the prevalence paradox)
    while AC1's chance term shrinks there. ``nan`` when no item has two ratings or there are < 2 labels.
    """
    counts = np.asarray(counts, dtype=float)
    if counts.ndim != 2 or counts.shape[1] < 2:
        return math.nan
    rated = counts[counts.sum(axis=1) >= 1]
    pairable = rated[rated.sum(axis=1) >= 2]
    if len(pairable) == 0:
        return math.nan
    r = pairable.sum(axis=1)
    p_a = ((pairable * (pairable - 1)).sum(axis=1) / (r * (r - 1))).mean()
    pi = (rated / rated.sum(axis=1, keepdims=True)).mean(axis=0)
    p_e = (pi * (1.0 - pi)).sum() / (counts.shape[1] - 1)
    if math.isclose(p_e, 1.0):
        return math.nan
    return float((p_a - p_e) / (1.0 - p_e))


def gwet_ac1(judgments: pd.DataFrame, labels: Sequence[str] = LABELS) -> float:
    """Gwet's AC1 over all labels (see :func:`gwet_ac1_from_counts`)."""
    return gwet_ac1_from_counts(label_counts(judgments, labels).to_numpy())


def per_category_ac1(judgments: pd.DataFrame, labels: Sequence[str] = LABELS) -> dict[str, float]:
    """Binary AC1 of each label against all others, beside :func:`per_category_alpha`."""
    return _per_category(gwet_ac1_from_counts, label_counts(judgments, labels).to_numpy(), labels)


def annotator_confusion(judgments: pd.DataFrame, labels: Sequence[str] = LABELS) -> pd.DataFrame:
    """Label × label counts of ordered pairs of different workers' judgments on an item (symmetric):
    the off-diagonal shows *which* categories get confused."""
    return _confusion(label_counts(judgments, labels).to_numpy(), labels)


def _confusion(counts: np.ndarray, labels: Sequence[str]) -> pd.DataFrame:
    counts = counts.astype(np.int64)
    pairs = counts.T @ counts - np.diag(counts.sum(axis=0))
    return pd.DataFrame(pairs, index=pd.Index(list(labels)), columns=pd.Index(list(labels)))


def agreement_report(
    judgments: pd.DataFrame,
    bootstrap: int = 1000,
    seed: int = 0,
    labels: Sequence[str] = LABELS,
) -> dict[str, Any]:
    """What the annotation dashboard and the dataset card show, JSON-safe (undefined figures ``None``).
    ``bootstrap=0`` skips the interval (``alpha_ci`` ``[None, None]``)."""
    frame = validate_judgments(judgments, labels)
    table = count_validated(frame, labels)  # every figure below reads these counts
    counts = table.to_numpy()
    majority = majority_of_counts(table, labels)
    low, high = _bootstrap_alpha(counts, bootstrap, seed, LEVEL) if bootstrap > 0 else (math.nan, math.nan)
    workers = _worker_agreement(frame, table, labels)
    confusion = _confusion(counts, labels)
    majority_labels = majority["label"].dropna().value_counts()
    return json_safe(
        {
            "krippendorff_alpha": _krippendorff_alpha(frame, counts, labels),
            "alpha_ci": [low, high],
            "bootstrap_resamples": bootstrap,
            "per_category_alpha": _per_category(nominal_alpha_from_counts, counts, labels),
            "gwet_ac1": gwet_ac1_from_counts(counts),
            "per_category_ac1": _per_category(gwet_ac1_from_counts, counts, labels),
            "percent_agreement": _percent_agreement(counts),
            "fleiss_kappa": fleiss_kappa_from_counts(counts),
            "queries": len(majority),
            "judgments": len(frame),
            "workers": frame["worker"].nunique(),
            "judgments_per_query": {str(k): v for k, v in majority["votes"].value_counts().sort_index().items()},
            "labels": {label: majority_labels.get(label, 0) for label in labels},
            "disputed": sorted(str(item) for item in majority.index[majority["disputed"]]),
            "per_worker": [{"worker": str(worker), **row} for worker, row in workers.to_dict("index").items()],
            "confusion": {"labels": list(labels), "matrix": confusion.to_numpy().tolist()},
        }
    )
