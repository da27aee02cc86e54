"""What routing will keep and cost, forecast on the real path (docs/prelabelling.md, "Forecasts on the real
path"), and how large a first draw to make. Pure numpy.

:func:`simulate_path` redraws the whole machine path against known true labels: the crowd labels the blind sample
with its reference rule, routing certifies on it, the rest goes to the crowd. :func:`size_first_draw`: at an
accuracy profile (:func:`observed_profile` or assumed), per candidate size the share of draws that certify and the
share kept outside the sample; the crowd labels every sample query anyway, so the best size keeps the most.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

import numpy as np

from genderbias.crowd.simulation.escalation import ReferenceRule, simulate_crowd
from genderbias.crowd.simulation.workers import CrowdModel
from genderbias.machine.cascade_statistics import certify_cascade
from genderbias.machine.certification import certify_threshold
from genderbias.machine.routing_statistics import TOLERANCE, tied

__all__ = ["observed_profile", "profile_at", "simulate_path", "size_first_draw"]


@dataclass(frozen=True)
class Forecast:
    """Means over the redraws (shares are of the routable queries), with Monte-Carlo errors."""

    redraws: int
    target: float
    risk: float
    certified_rate: float  #: redraws where some machine kept something
    kept_share: float  #: machine-labelled outside the sample, / queries
    kept_share_se: float
    kept_with_sample: float  #: kept sets with their sample items, / queries
    violation_rate: float  #: a kept set below the target against the reference (the guarantee: ≤ δ)
    violation_rate_truth: float  #: the machine-kept labels below the target against the true labels
    violation_se: float  #: √(δ(1 − δ)/R): the Monte-Carlo s.e. of a rate at δ
    machine_accuracy_truth: float | None  #: of the machine-kept labels, mean over redraws that kept some
    reference_accuracy: float  #: the sample's reference labels against the truth (undecided: wrong)
    undecided_share: float  #: sample queries left without a reference label
    first_round_split: float  #: sample queries without a strict majority after the first round
    export_accuracy: float  #: every query's final label against the truth (none: wrong)
    crowd_only_accuracy: float  #: the crowd alone labelling every query with the same rule
    assignments: float  #: HIT assignments paid on the machine path (sample and routed)
    sample_assignments: float
    sample_escalations: float  #: of them, added by the sample's escalation
    crowd_only_assignments: float
    per_stage_kept: list[float]  #: per labeller, machine-labelled outside the sample / queries

    def as_dict(self) -> dict:
        return asdict(self)


def simulate_path(
    truth: Sequence[int],
    machine_labels: Sequence[Sequence[int]],
    machine_confidence: Sequence[Sequence[float]],
    *,
    crowd: CrowdModel | None,
    rule: ReferenceRule,
    sample_of: Callable[[int], Sequence[int]],
    redraws: int,
    target: float,
    risk: float,
    extendable: bool = False,
    queries_per_hit: int = 10,
    seed: int = 0,
    progress: Callable[[int], None] | None = None,
    floors: Sequence[float | None] | None = None,
) -> Forecast:
    """Redraw the machine path. ``truth`` ``[N]``: the routable queries' label indices; ``machine_labels`` and
    ``machine_confidence`` ``[m, N]``, a row per labeller in cascade order (−1 and NaN: no label); ``sample_of(r)``:
    redraw r's blind sample in draw order (as ``calibrate --seed r``). ``extendable`` applies to one labeller;
    ``crowd`` None: the true labels are the crowd's; ``floors``: :func:`.cascade_statistics.certify_cascade`'s.
    """
    truth = np.asarray(truth, dtype=int)
    labels = np.atleast_2d(np.asarray(machine_labels, dtype=int))
    confidence = np.atleast_2d(np.asarray(machine_confidence, dtype=float))
    size, stages = len(truth), len(labels)
    if labels.shape != (stages, size) or confidence.shape != labels.shape:
        raise ValueError("machine labels and confidences must be labellers × queries, one per true label")
    rng = np.random.default_rng(seed)
    rows = []
    for r in range(redraws):
        sample = np.asarray(sample_of(r), dtype=int)
        rows.append(
            _one_path(
                truth, labels, confidence, crowd, rule, sample, rng, target, risk, extendable, queries_per_hit, floors
            )
        )
        if progress is not None:
            progress(1)
    column = {key: np.array([row[key] for row in rows], dtype=float) for key in rows[0] if key != "per_stage"}
    kept_accuracy = column.pop("machine_accuracy_truth")
    return Forecast(
        redraws=redraws,
        target=target,
        risk=risk,
        **{key: float(values.mean()) for key, values in column.items()},
        kept_share_se=float(column["kept_share"].std(ddof=1) / np.sqrt(redraws)) if redraws > 1 else 0.0,
        violation_se=float(np.sqrt(risk * (1 - risk) / redraws)),
        machine_accuracy_truth=float(np.nanmean(kept_accuracy)) if np.isfinite(kept_accuracy).any() else None,
        per_stage_kept=[float(np.mean([row["per_stage"][i] for row in rows])) for i in range(stages)],
    )


def _crowd(truth, crowd, rule, rng, queries_per_hit):
    """(reference labels, assignments, escalations, first-round labels) of a batch of ``truth``."""
    if crowd is None:
        return truth.copy(), -(-len(truth) // queries_per_hit) * rule.votes, 0, truth.copy()
    if len(truth) == 0:
        return truth.copy(), 0, 0, truth.copy()
    run = simulate_crowd(truth, crowd, rule, rng, queries_per_hit=queries_per_hit)
    return run.reference, run.assignments, run.escalations, run.first_round


def _one_path(truth, labels, confidence, crowd, rule, sample, rng, target, risk, extendable, queries_per_hit, floors):
    size, stages = len(truth), len(labels)
    in_sample = np.zeros(size, dtype=bool)
    in_sample[sample] = True
    rest = np.flatnonzero(~in_sample)
    reference = np.empty(size, dtype=int)
    reference[sample], sample_paid, sample_escalated, first_round = _crowd(
        truth[sample], crowd, rule, rng, queries_per_hit
    )
    reference[rest], _, _, _ = _crowd(truth[rest], crowd, rule, rng, queries_per_hit)  # what the crowd would give
    correct = labels == reference[None, :]
    if stages == 1 and extendable:
        c = np.where(labels[0] >= 0, confidence[0], np.nan)
        routable = np.flatnonzero(~np.isnan(c))
        position = {q: i for i, q in enumerate(routable)}
        items = [q for q in sample if q in position]
        result = certify_threshold(
            c[items], correct[0, items], c[routable], target=target, risk=risk, planned=len(items), extendable=True
        )
        kept_by = np.full(size, -1)
        if result.threshold is not None:
            kept_by[routable[tied(c[routable]) >= result.threshold]] = 0
    else:
        cascade = certify_cascade(
            np.where(labels >= 0, confidence, np.nan), correct, sample, target=target, risk=risk, floors=floors
        )
        kept_by = cascade.kept_by
    kept = kept_by >= 0
    machine = np.where(kept, labels[np.maximum(kept_by, 0), np.arange(size)], -1)
    violation = False
    for i in range(stages):
        mine = kept_by == i
        if mine.any() and (machine[mine] == reference[mine]).mean() < target - TOLERANCE:
            violation = True
    outside = kept & ~in_sample
    routed = np.flatnonzero(~kept & ~in_sample)
    final = reference.copy()  # the sample's reference labels; the kept and routed set below
    final[outside] = machine[outside]
    final[routed], routed_paid, _, _ = _crowd(truth[routed], crowd, rule, rng, queries_per_hit)
    crowd_only, crowd_only_paid, _, _ = _crowd(truth, crowd, rule, rng, queries_per_hit)
    kept_truth = (machine[outside] == truth[outside]).mean() if outside.any() else np.nan
    return {
        "certified_rate": float(kept.any()),
        "kept_share": outside.sum() / size,
        "kept_with_sample": kept.sum() / size,
        "violation_rate": float(violation),
        "violation_rate_truth": float(outside.any() and kept_truth < target - TOLERANCE),
        "machine_accuracy_truth": kept_truth,
        "reference_accuracy": float((reference[sample] == truth[sample]).mean()),
        "undecided_share": float((reference[sample] < 0).mean()),
        "first_round_split": float((first_round < 0).mean()),
        "export_accuracy": float((final == truth).mean()),
        "crowd_only_accuracy": float((crowd_only == truth).mean()),
        "assignments": float(sample_paid + routed_paid),
        "sample_assignments": float(sample_paid),
        "sample_escalations": float(sample_escalated),
        "crowd_only_assignments": float(crowd_only_paid),
        "per_stage": [float(((kept_by == i) & ~in_sample).sum() / size) for i in range(stages)],
    }


# --- sizing the first draw -------------------------------------------------------------------------


def observed_profile(confidence: Sequence[float], correct: Sequence[bool]) -> tuple[np.ndarray, np.ndarray]:
    """The machine's agreement with the reference as a non-decreasing step function of its confidence,
    fitted to a sample by isotonic regression (pool adjacent violators): ``(confidence levels,
    agreement at each)``. Non-decreasing because routing assumes higher confidence is no worse."""
    c = tied(confidence)
    ok = np.asarray(correct, dtype=float)
    if len(c) == 0:
        raise ValueError("no sample items to fit an accuracy profile to")
    levels = np.unique(c)
    index = np.searchsorted(levels, c)
    means = np.bincount(index, weights=ok, minlength=len(levels))
    weights = np.bincount(index, minlength=len(levels)).astype(float)
    blocks = [[means[0] / weights[0], weights[0], 1]]
    for j in range(1, len(levels)):
        blocks.append([means[j] / weights[j], weights[j], 1])
        while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
            value, weight, span = blocks.pop()
            previous = blocks[-1]
            previous[0] = (previous[0] * previous[1] + value * weight) / (previous[1] + weight)
            previous[1] += weight
            previous[2] += span
    fitted = np.concatenate([[value] * span for value, _, span in blocks])
    return levels, fitted


def profile_at(levels: np.ndarray, agreement: np.ndarray, confidence: Sequence[float]) -> np.ndarray:
    """The profile's agreement at each confidence (the level at or below it; below the lowest: the lowest)."""
    where = np.searchsorted(levels, tied(confidence), side="right") - 1
    return agreement[np.clip(where, 0, len(levels) - 1)]


@dataclass(frozen=True)
class SizeRow:
    sample: int
    certified_rate: float  #: share of draws that certify some threshold
    kept_share: float  #: machine-labelled outside the sample, / queries (0 when none is certified)


def size_first_draw(
    population_confidence: Sequence[float],
    agreement: Sequence[float],
    *,
    target: float,
    risk: float,
    sizes: Sequence[int] | None = None,
    redraws: int = 200,
    seed: int = 0,
) -> list[SizeRow]:
    """Per first-draw size, drawn whole (all of δ on the exact test): the share of draws that certify and the mean
    kept share, when each query's machine label agrees with the reference with probability ``agreement`` (e.g.
    :func:`profile_at` of a fitted profile); agreements redrawn every 50 redraws."""
    from genderbias.machine.routing_audit import audit

    c = tied(population_confidence)
    p = np.clip(np.asarray(agreement, dtype=float), 0, 1)
    size = len(c)
    if len(p) != size or size == 0:
        raise ValueError("one agreement per query of a non-empty population")
    if sizes is None:
        sizes = [n for n in (50, 100, 150, 200, 300, 400, 500, 600, 800, 1000, 1500, 2000) if n < size]
    rng = np.random.default_rng(seed)
    rows = []
    for n in sizes:
        certified, kept, done = 0.0, 0.0, 0
        while done < redraws:
            block = min(50, redraws - done)
            right = rng.random(size) < p
            samples = [rng.choice(size, n, replace=False) for _ in range(block)]
            result = audit(c, right, samples, target=target, risk=risk, planned=n, extendable=False)
            certified += result.certified_rate * block
            kept += result.machine_labelled_share * block
            done += block
        rows.append(SizeRow(int(n), certified / redraws, kept / redraws))
    return rows
