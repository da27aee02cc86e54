"""Category shares of a whole batch from machine labels and a human-labelled sample (PPI++).

Pure numpy plus ``ppi_py`` (imported inside the function: it takes seconds), no Django.

A machine pre-labeller labels every query of a batch; humans label a sample. The machine's
share of a category is precise but biased (its errors are not symmetric: gendered names
called non-gendered, say); the sample's share is unbiased but noisy. Prediction-powered
inference (Angelopoulos, Bates, Fannjiang, Jordan & Zrnic, "Prediction-powered inference",
Science 2023) combines them, and PPI++ (Angelopoulos, Duchi & Zrnic, "PPI++: Efficient
Prediction-Powered Inference", arXiv 2311.01453, 2023) tunes how much to trust the machine.

For a category ``k``, per query ``Y = 1[human == k]`` (known on the sample, n queries) and
``Ŷ = 1[machine == k]`` (known on all N queries of the batch)::

    θ̂_λ = mean_batch(λ Ŷ) + mean_w(Y − λ Ŷ)
    se² = var(λ Ŷ over the batch) / N + var(w̃ (Y − λ Ŷ) over the sample) / n
    CI  = θ̂_λ ± z_{1−α/2} · se          (clamped to [0, 1], as is θ̂)

with population variances (ddof 0) and ``w̃ = w · n / Σw``, exactly as ``ppi_py.ppi_mean_ci``
computes them. ``λ = 1`` is classic PPI, ``λ = 0`` the sample alone; by default ``ppi_py``
picks the λ in [0, 1] that minimises the estimated variance (PPI++), so the interval is not
wider than the sample's own, up to estimation noise, and the machine cannot make it worse.

The unlabelled set given to ``ppi_py`` is the machine labels of the *whole* batch (sample and
rest), not only the rest: the estimand is the share in this batch, whose machine share is
then known exactly, and it stays right when the sample was not drawn proportionally (if a
rare stratum were sampled in full, the rest would hold none of it and its machine share
would be biased). The ``var/N`` term is therefore a small conservative extra.

Sample weights. A sample stratified by machine label (stratum ``s``, ``N_s`` batch queries,
``n_s`` sampled) has inclusion probability ``n_s/N_s``; passing ``w = N_s/n_s`` as
``ppi_py``'s ``w`` turns the rectifier into the stratified (Horvitz–Thompson/Hájek) mean
``Σ_s (N_s/N) mean_s(Y − λŶ)``, unbiased for the batch mean of ``Y − λŶ`` because the
strata partition the batch (Σ N_s = N). Since ``Ŷ`` is constant within a machine-label
stratum, θ̂ is then the classical stratified estimator ``Σ_s (N_s/N) mean_s(Y)`` for every λ.
``ppi_py``'s standard error treats the n weighted terms as independent draws; under
stratified sampling without replacement that over-states the variance (it adds the spread
between strata and leaves out the finite-population correction), so the interval is
conservative. :func:`stratified_weights` computes the weights.

Rare categories (``o``, about 1 %): the interval is a normal approximation, unreliable when
the sample holds only a few queries of the category, and of zero width when it holds none
and the machine adds nothing (λ = 0). Read it as "rare", not as a precise zero.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

import numpy as np

from genderbias.labels import LABELS


def category_proportions(
    human: Sequence[str],
    machine_sample: Sequence[str],
    machine_rest: Sequence[str],
    *,
    weights: Sequence[float] | None = None,
    labels: Sequence[str] = LABELS,
    alpha: float = 0.05,
    lam: float | None = None,
) -> dict[str, dict]:
    """Share of each category in the whole batch, with a (1 − alpha) confidence interval.

    human / machine_sample: the labelled sample, in the same order; machine_rest: the machine
    labels of the batch's other queries. weights: per sample query, its inverse inclusion
    probability (``N_s/n_s`` for a sample stratified by machine label, see
    :func:`stratified_weights`); ``None`` for a simple random sample. lam: ``None`` tunes λ
    per category (PPI++); 1 is classic PPI; 0 ignores the machine.

    Returns label -> {"estimate", "ci": [lo, hi], "machine_only": machine share over the
    batch, "sample_only": (weighted) human share in the sample, "sample_ci": its classical
    CLT interval}.
    """
    from ppi_py import classical_mean_ci, ppi_mean_ci, ppi_mean_pointestimate

    labels = _validate_labels(labels)
    _validate(human, machine_sample, machine_rest, labels, alpha, lam)
    w = _validate_weights(weights, len(human))
    human_codes = _codes(human, labels)
    sample_codes = _codes(machine_sample, labels)
    batch_codes = np.concatenate([sample_codes, _codes(machine_rest, labels)])

    result = {}
    for k, label in enumerate(labels):
        y = (human_codes == k).astype(float)
        yhat = (sample_codes == k).astype(float)
        yhat_batch = (batch_codes == k).astype(float)
        lam_k = _lam(lam, yhat_batch)
        estimate = ppi_mean_pointestimate(y, yhat, yhat_batch, lam=lam_k, w=w)
        lo, hi = ppi_mean_ci(y, yhat, yhat_batch, alpha=alpha, lam=lam_k, w=w)
        sample_lo, sample_hi = classical_mean_ci(y, w=w, alpha=alpha)
        result[label] = {
            "estimate": _clamp(estimate),
            "ci": [_clamp(lo), _clamp(hi)],
            "machine_only": float(yhat_batch.mean()),
            "sample_only": float(np.average(y, weights=w)),
            "sample_ci": [_clamp(sample_lo), _clamp(sample_hi)],
        }
    return result


def stratified_weights(machine_sample: Sequence[str], machine_rest: Sequence[str]) -> list[float]:
    """Inverse inclusion probability ``N_s/n_s`` of each sample query, stratum = its machine label.

    Right only when the sample was drawn at random *within* each machine-label stratum, and
    every stratum of the batch has a sampled query (otherwise its queries are represented by
    nobody and no weighting can recover them: ValueError).
    """
    sampled = Counter(machine_sample)
    batch = sampled + Counter(machine_rest)
    missing = sorted(label for label in batch if label not in sampled)
    if missing:
        raise ValueError(
            "Every machine label of the batch needs a sampled query for stratified weights; "
            + ", ".join(f"{label!r} has {batch[label]} queries and none sampled" for label in missing)
            + "."
        )
    return [batch[label] / sampled[label] for label in machine_sample]


def _lam(lam: float | None, yhat_batch: np.ndarray) -> float | None:
    """λ to pass to ``ppi_py``: as given, or ``None`` to tune it.

    When the machine gives (or withholds) the category for every query its indicator is a
    constant, carries no information and ``ppi_py``'s λ would be 0/0: use the sample alone.
    """
    if lam is None and np.ptp(yhat_batch) == 0:
        return 0.0
    return lam


def _clamp(value) -> float:
    """A share as a plain float in [0, 1] (``ppi_py`` returns 1-element arrays)."""
    return float(np.clip(np.asarray(value, dtype=float).squeeze(), 0.0, 1.0))


def _codes(values: Sequence[str], labels: tuple[str, ...]) -> np.ndarray:
    index = {label: k for k, label in enumerate(labels)}
    return np.fromiter((index[v] for v in values), dtype=int, count=len(values))


def _validate_labels(labels: Sequence[str]) -> tuple[str, ...]:
    labels = tuple(labels)
    if not labels:
        raise ValueError("labels is empty.")
    if len(set(labels)) != len(labels):
        raise ValueError(f"labels has duplicates: {labels!r}.")
    return labels


def _validate(
    human: Sequence[str],
    machine_sample: Sequence[str],
    machine_rest: Sequence[str],
    labels: tuple[str, ...],
    alpha: float,
    lam: float | None,
) -> None:
    if len(human) != len(machine_sample):
        raise ValueError(
            f"human and machine_sample must label the same queries in the same order: "
            f"{len(human)} human labels, {len(machine_sample)} machine labels."
        )
    if len(human) < 2:
        raise ValueError(f"The labelled sample needs at least 2 queries for a variance, got {len(human)}.")
    for name, values in (("human", human), ("machine_sample", machine_sample), ("machine_rest", machine_rest)):
        unknown = sorted({str(v) for v in values} - set(labels))
        if unknown:
            raise ValueError(f"{name} has labels outside {list(labels)}: {unknown}.")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}.")
    if lam is not None and not math.isfinite(lam):
        raise ValueError(f"lam must be a finite number or None, got {lam!r}.")


def _validate_weights(weights: Sequence[float] | None, n: int) -> np.ndarray | None:
    if weights is None:
        return None
    w = np.asarray(weights, dtype=float)
    if w.shape != (n,):
        raise ValueError(f"weights needs one value per sample query: {n} queries, {w.size} weights.")
    if not (np.isfinite(w).all() and (w > 0).all()):
        raise ValueError("weights must be finite and positive (inverse inclusion probabilities).")
    return w
