"""Simulated blind samples with workers who copy the machine's label (the echo check's simulation).

The crowd is the library's (:func:`genderbias.crowd.simulation.workers.noisy_crowd`: its workers'
confusion matrices set their error rates) with *copiers*, who answer the machine's label; the votes
are the library simulator's per-worker votes (:class:`genderbias.crowd.simulation.answers.HitVotes`:
HITs handed out as the platform does, each vote kept per worker) so that the echo check
(:mod:`genderbias.machine.echo`) can read them. The machine is calibrated: right with probability
its confidence. Routing certifies a threshold on the sample (the platform's
:func:`genderbias.machine.certification.certify_threshold`) against the sample's reference label
(a strict majority of the votes kept, at least two: a query without one counts against the machine),
and the accepted machine labels are scored against the simulation's truth.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from genderbias.crowd.simulation.answers import HitVotes, majority, with_copiers
from genderbias.crowd.simulation.workers import noisy_crowd
from genderbias.machine.certification import certify_threshold
from genderbias.machine.echo import echo_check

LABELS = ("n", "f", "m", "o")
CLASS_SHARES = np.array([0.6, 0.15, 0.15, 0.1])


@dataclass(frozen=True)
class Study:
    accuracy: float | None  #: the accepted machine labels' accuracy against the truth (None: nothing accepted)
    accepted: int
    flagged_copiers: int
    flagged_honest: int
    held_out_votes: int


def crowd_with_copiers(copiers: int, *, honest: int = 13, copier_share: float = 2.0):
    """noisy_crowd's workers (honest, 2 spammers, 1 lazy), then ``copiers`` workers who answer the
    machine's label, each taking ``copier_share`` of an honest worker's work (copying is fast)."""
    crowd = noisy_crowd(LABELS, honest=honest, class_shares=CLASS_SHARES)
    shares = with_copiers(crowd, copiers, copier_share * len(crowd.shares) / (honest + 2 + 2.0))
    names = crowd.names + tuple(f"copier-{i}" for i in range(copiers))
    return crowd, shares, names


def one_study(
    rng: np.random.Generator,
    *,
    check: bool,
    copiers: int = 4,
    population: int = 3000,
    sample: int = 300,
    target: float = 0.9,
    risk: float = 0.05,
    confidence_shape: float = 4.0,
) -> Study:
    crowd, shares, names = crowd_with_copiers(copiers)
    truth = rng.choice(len(LABELS), size=population, p=CLASS_SHARES)
    confidence = 0.5 + 0.5 * rng.beta(confidence_shape, 1.0, size=population)
    right = rng.random(population) < confidence
    wrong = (truth + rng.integers(1, len(LABELS), size=population)) % len(LABELS)
    machine = np.where(right, truth, wrong)
    drawn = rng.permutation(population)[:sample]  # a simple random sample, in draw order
    collected = HitVotes(truth[drawn], crowd, rng, shares=shares, copied=machine[drawn])
    votes = collected.votes
    held: set[int] = set()
    if check:
        echoes = echo_check(
            [(str(i), names[w], LABELS[label]) for i, w, label in votes],
            {str(i): LABELS[machine[drawn][i]] for i in range(sample)},
        )
        held = {names.index(e.worker) for e in echoes if e.flagged}
        collected.escalate(held)
        votes = collected.votes
    ref = majority(collected.counts(held))
    correct = machine[drawn] == ref
    result = certify_threshold(confidence[drawn], correct, confidence, target=target, risk=risk, extendable=False)
    copier_ids = set(range(len(crowd.confusion), len(names)))
    if result.threshold is None:
        accuracy, accepted = None, 0
    else:
        mask = confidence >= result.threshold
        accuracy, accepted = float((machine[mask] == truth[mask]).mean()), int(mask.sum())
    return Study(
        accuracy=accuracy,
        accepted=accepted,
        flagged_copiers=len(held & copier_ids),
        flagged_honest=len(held - copier_ids),
        held_out_votes=sum(1 for _, w, _ in votes if w in held),
    )


def run_studies(studies: int, *, check: bool, seed: int, **options) -> dict:
    """``studies`` simulated studies: the accepted labels' mean accuracy against the truth with its
    Monte-Carlo standard error, and the share of studies meeting the target (with its s.e.)."""
    rng = np.random.default_rng(seed)
    runs = [one_study(rng, check=check, **options) for _ in range(studies)]
    target = options.get("target", 0.9)
    scored = np.array([r.accuracy for r in runs if r.accuracy is not None])
    met = np.array([r.accuracy is None or r.accuracy >= target for r in runs], dtype=float)
    return {
        "studies": studies,
        "certified": len(scored),
        "mean_accuracy": float(scored.mean()) if len(scored) else None,
        "mean_accuracy_se": float(scored.std(ddof=1) / np.sqrt(len(scored))) if len(scored) > 1 else None,
        "met_share": float(met.mean()),
        "met_share_se": float(np.sqrt(met.mean() * (1 - met.mean()) / studies)),
        "copiers_flagged": float(np.mean([r.flagged_copiers for r in runs])),
        "honest_flagged": float(np.mean([r.flagged_honest for r in runs])),
        "accepted": float(np.mean([r.accepted for r in runs])),
    }
