"""Routing audited against known labels: the share of simulated blind samples on which the certified accepted set
falls short of the target is routing's realised risk (:func:`audit`). Pure numpy.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np

from genderbias.machine.certification import (
    DEFAULT_RISK,
    MAX_CANDIDATES,
    _fixed_sequence,
    _passes,
    candidate_thresholds,
    null_errors,
)
from genderbias.machine.routing_statistics import TOLERANCE, tied

__all__ = ["audit", "oracle_threshold"]


@dataclass(frozen=True)
class Audit:
    """How the certified rule did over redraws of the blind sample, against known labels."""

    redraws: int
    target: float
    risk: float
    violation_rate: float  #: share of redraws whose accepted set's true accuracy is below the target
    violation_rate_unsampled: float  #: the same for the accepted queries outside the sample
    certified_rate: float  #: share of redraws where some threshold was certified
    kept_share: float  #: mean |A_t̂| / batch (0 when nothing is certified)
    machine_labelled_share: float  #: mean |A_t̂ \\ sample| / batch: labels the machine keeps
    oracle_kept_share: float  #: the largest threshold set that truly meets the target, / batch
    oracle_threshold: float | None
    mean_accuracy: float | None  #: true accuracy of the accepted set, mean over certified redraws

    def as_dict(self) -> dict:
        return asdict(self)


def _certify_many(c, ok, samples, thresholds, sizes, target, risk, planned, chunk, progress, extendable=True):
    """Per sample: the index of the chosen candidate (−1: none), and the sample items (right ones) in its set."""
    k0 = null_errors(sizes, target)
    chosen, sampled_in, sampled_right = [], [], []
    for start in range(0, len(samples), chunk):
        block = np.asarray(samples[start : start + chunk], dtype=np.int64)  # [R, n]
        mask = c[block][:, None, :] >= thresholds[None, :, None]  # [R, T, n]
        errors = (~ok[block]).astype(float)
        _, _, passed = _passes(mask, errors, sizes, k0, target, risk, planned, extendable)
        last = _fixed_sequence(passed)
        rows, pick = np.arange(len(block)), np.maximum(last, 0)
        chosen.append(last)
        sampled_in.append(mask[rows, pick].sum(axis=-1))
        sampled_right.append((mask[rows, pick] & ok[block]).sum(axis=-1))
        if progress is not None:
            progress(len(block))
    return (
        np.concatenate(chosen),
        np.concatenate(sampled_in).astype(float),
        np.concatenate(sampled_right).astype(float),
    )


def oracle_threshold(population_confidence: np.ndarray, population_correct: np.ndarray, target: float):
    """The lowest confidence whose accepted set truly meets the target (the largest such set), and its size."""
    confidence = tied(population_confidence)
    order = np.argsort(-confidence, kind="stable")
    c, ok = confidence[order], np.asarray(population_correct)[order].astype(float)
    cumulative = np.cumsum(ok) / np.arange(1, len(c) + 1)
    # Only cut where the confidence changes: ties are accepted together.
    ends = np.append(np.flatnonzero(np.diff(c) != 0), len(c) - 1)
    meets = ends[cumulative[ends] >= target - TOLERANCE]
    if len(meets) == 0:
        return None, 0
    return float(c[meets[-1]]), int(meets[-1] + 1)


def audit(
    population_confidence: Sequence[float],
    population_correct: Sequence[bool],
    samples: Sequence[Sequence[int]],
    *,
    target: float,
    risk: float = DEFAULT_RISK,
    batch_size: int | None = None,
    planned: int | None = None,
    max_candidates: int = MAX_CANDIDATES,
    chunk: int = 50,
    progress=None,
    extendable: bool = True,
) -> Audit:
    """:func:`certify_threshold` on each sample (population indices in draw order), its accepted set compared with
    the known labels; ``progress(k)`` after each chunk of k redraws. Shares are of ``batch_size`` (default: N)."""
    c = tied(population_confidence)
    ok = np.asarray(population_correct, dtype=bool)
    if len(c) != len(ok) or len(c) == 0:
        raise ValueError("population confidence and correctness must be non-empty and of one length")
    if not 0 < target <= 1 or not 0 < risk < 1:
        raise ValueError("target must be in (0, 1] and risk in (0, 1)")
    total = batch_size or len(c)
    planned = planned or len(samples[0])
    thresholds = candidate_thresholds(
        c, planned, target=target, risk=risk, max_candidates=max_candidates, extendable=extendable
    )
    inside = c[None, :] >= thresholds[:, None]  # [T, N]
    sizes = inside.sum(axis=1).astype(float)
    right = (inside & ok[None, :]).sum(axis=1).astype(float)
    oracle_at, oracle_size = oracle_threshold(c, ok, target)
    last, n_in, n_right = _certify_many(
        c, ok, samples, thresholds, sizes, target, risk, planned, chunk, progress, extendable
    )
    certified = last >= 0
    pick = np.maximum(last, 0)
    accuracy = right[pick] / sizes[pick]
    rest = sizes[pick] - n_in
    with np.errstate(divide="ignore", invalid="ignore"):
        rest_accuracy = np.where(rest > 0, (right[pick] - n_right) / rest, 1.0)
    violated = certified & (accuracy < target - TOLERANCE)
    violated_rest = certified & (rest_accuracy < target - TOLERANCE)
    return Audit(
        redraws=len(last),
        target=target,
        risk=risk,
        violation_rate=float(violated.mean()),
        violation_rate_unsampled=float(violated_rest.mean()),
        certified_rate=float(certified.mean()),
        kept_share=float(np.where(certified, sizes[pick], 0).mean() / total),
        machine_labelled_share=float(np.where(certified, rest, 0).mean() / total),
        oracle_kept_share=oracle_size / total,
        oracle_threshold=oracle_at,
        mean_accuracy=float(accuracy[certified].mean()) if certified.any() else None,
    )
