"""Simulated blind samples with workers who copy the machine's label (the echo check's simulation).

The crowd is the library's (:func:`genderbias.crowd.simulation.workers.noisy_crowd`: its workers'
confusion matrices set their error rates) with *copiers*, who answer the machine's label; the votes
are per-worker votes (:class:`HitVotes`, drawn by :mod:`genderbias.crowd.simulation.answers`: HITs
handed out as the platform does, each vote kept per worker) so that the echo check
(:mod:`genderbias.machine.echo`) can read them. The machine is calibrated: right with probability
its confidence. Routing certifies a threshold on the sample (the platform's
:func:`genderbias.machine.certification.certify_threshold`) against the sample's reference label
(a strict majority of the votes kept, at least two: a query without one counts against the machine),
and the accepted machine labels are scored against the simulation's truth.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

import numpy as np

from genderbias.crowd.simulation.answers import deal_hits, pick, tilt_errors
from genderbias.crowd.simulation.workers import CrowdModel, noisy_crowd
from genderbias.machine.certification import certify_threshold
from genderbias.machine.echo import echo_check

LABELS = ("n", "f", "m", "o")
CLASS_SHARES = np.array([0.6, 0.15, 0.15, 0.1])


def with_copiers(model: CrowdModel, copiers: int, share: float = 1.0) -> np.ndarray:
    """``model``'s shares then ``copiers`` copiers' (``share`` × the average worker's), normalised."""
    shares = np.concatenate([model.shares, np.full(copiers, share * model.shares.mean())])
    return shares / shares.sum()


def majority(counts: np.ndarray, least: int = 2) -> np.ndarray:
    """Per row of vote counts, the strict majority's label with at least ``least`` votes, else −1."""
    top = counts.max(axis=1)
    decisive = (counts.sum(axis=1) >= least) & ((counts == top[:, None]).sum(axis=1) == 1)
    return np.where(decisive, counts.argmax(axis=1), -1)


class HitVotes:
    """The votes on queries of true labels ``truth`` as the platform collects them, kept per worker.

    ``votes`` workers a HIT, then escalation to ``cap`` (:meth:`escalate`). ``shares``: every worker's, the
    copiers last (default: the model's, no copier); a copier answers ``copied`` [N] (the machine's labels);
    ``difficulty`` [N] tilts the others' error odds."""

    def __init__(
        self,
        truth: np.ndarray,
        model: CrowdModel,
        rng: np.random.Generator,
        *,
        shares: np.ndarray | None = None,
        copied: np.ndarray | None = None,
        difficulty: np.ndarray | None = None,
        votes: int = 3,
        cap: int = 7,
        queries_per_hit: int = 10,
    ) -> None:
        self.truth = np.asarray(truth, dtype=int)
        self.model, self.rng, self.cap = model, rng, cap
        self.copied, self.difficulty = copied, difficulty
        shares = model.shares if shares is None else np.asarray(shares, dtype=float)
        if len(shares) > len(model.shares) and copied is None:
            raise ValueError("copiers need the labels they copy (copied)")
        self.hit_of, self.ranking = deal_hits(len(self.truth), shares, rng, queries_per_hit)
        hits = len(self.ranking)
        self.queries_of = [np.flatnonzero(self.hit_of == h) for h in range(hits)]
        self.taken = np.zeros(hits, dtype=int)  # how far down its ranking each HIT went
        size = len(model.labels)
        self.by_worker = np.zeros((len(shares), len(self.truth), size), dtype=int)  # worker × query × label
        for _ in range(votes):
            self._round(np.ones(hits, dtype=bool), set())
        self.escalate(set())

    def _answers(self, worker: int, queries: np.ndarray) -> np.ndarray:
        if worker >= len(self.model.shares):
            return self.copied[queries]
        truth = self.truth[queries]
        rows = self.model.confusion[worker, truth]
        if self.difficulty is not None:
            rows = tilt_errors(rows, truth, self.difficulty[queries])
        return pick(self.rng.random(len(queries)), rows)

    def _round(self, open_hits: np.ndarray, held: Collection[int]) -> bool:
        workers = self.ranking.shape[1]
        voted = False
        for h in np.flatnonzero(open_hits):
            while self.taken[h] < workers and int(self.ranking[h, self.taken[h]]) in held:
                self.taken[h] += 1
            if self.taken[h] >= workers:
                continue
            w = int(self.ranking[h, self.taken[h]])
            self.taken[h] += 1
            queries = self.queries_of[h]
            self.by_worker[w, queries, self._answers(w, queries)] += 1
            voted = True
        return voted

    def counts(self, held: Collection[int] = ()) -> np.ndarray:
        """Votes per query and label, the workers ``held`` out left out."""
        kept = [w for w in range(len(self.by_worker)) if w not in held]
        return self.by_worker[kept].sum(axis=0)

    def escalate(self, held: Collection[int]) -> None:
        """The reference rule on the votes not ``held`` out: a held-out worker's places offered again."""
        while True:
            counts = self.counts(held)
            undecided = majority(counts) < 0
            per_hit = np.bincount(self.hit_of, weights=counts.sum(axis=1)) / np.bincount(self.hit_of)
            open_hits = (np.bincount(self.hit_of[undecided], minlength=len(per_hit)) > 0) & (per_hit < self.cap)
            if not open_hits.any() or not self._round(open_hits, held):
                return

    @property
    def votes(self) -> list[tuple[int, int, int]]:
        """``(query, worker, label)`` of every vote."""
        w, i, label = np.nonzero(self.by_worker)
        return list(zip(i.tolist(), w.tolist(), label.tolist(), strict=True))


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
