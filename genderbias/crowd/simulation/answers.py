"""A simulated crowd's answers: who answers which query, and what they say. The one place a simulated
answer is drawn, so every simulation (escalation, studies, replicates, the dependence check, the echo
check's copiers) reads a worker the same way.
"""

from __future__ import annotations

from collections.abc import Collection

import numpy as np

from genderbias.crowd.simulation.workers import CrowdModel


def pick(uniforms: np.ndarray, chances: np.ndarray) -> np.ndarray:
    """Per row of ``chances`` [..., K], the label its uniform falls on (given, so paired draws can share them)."""
    k = chances.shape[-1]
    return np.minimum((uniforms[..., None] > np.cumsum(chances, axis=-1)).sum(axis=-1), k - 1)


def tilt_errors(rows: np.ndarray, truth: np.ndarray, factor: np.ndarray | float) -> np.ndarray:
    """``rows`` [..., K] (answer probabilities given ``truth`` [...]) with the odds of a wrong answer × ``factor``
    (an item's difficulty, or D's exp(D·z)), the wrong answers keeping their proportions."""
    k = rows.shape[-1]
    onehot = np.eye(k)[truth]
    right = np.clip((rows * onehot).sum(axis=-1), 1e-12, 1 - 1e-12)
    wrong = rows * (1 - onehot)
    wrong /= np.maximum(wrong.sum(axis=-1, keepdims=True), 1e-300)
    p_right = 1.0 / (1.0 + (1.0 - right) / right * factor)
    return (1.0 - p_right)[..., None] * wrong + p_right[..., None] * onehot


def deal_hits(
    n: int, shares: np.ndarray, rng: np.random.Generator, queries_per_hit: int = 10
) -> tuple[np.ndarray, np.ndarray]:
    """``(hit_of, ranking)``: each query's HIT (random order) and per HIT its workers in the order they take
    it (distinct, by ``shares`` without replacement: the Gumbel-top-k order)."""
    hit_of = np.empty(n, dtype=int)
    hit_of[rng.permutation(n)] = np.arange(n) // queries_per_hit
    hits = int(hit_of.max()) + 1 if n else 0
    ranking = np.argsort(-(np.log(shares)[None, :] + rng.gumbel(size=(hits, len(shares)))), axis=1)
    return hit_of, ranking


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
