"""A simulated crowd's answers, worker by worker: who answers which query, and what they say.

Pure numpy, no Django. The one place the simulator draws an answer, so that every simulation of the
project (the escalation simulator's vote counts, the studies' and replicates' answers, the label
dependence check's replicate crowds, the echo check's copiers, the in-house demo annotators) reads a
worker the same way:

- :func:`pick` draws a label from each row of probabilities by the inverse of its cumulative sum
  (given the uniforms, so that paired draws can share them);
- :func:`tilt_errors` multiplies each answer's odds of being wrong by a factor, the wrong answers
  keeping their proportions: an item's **difficulty** (exp(spread·d), d ~ N(0, 1)) or D, the
  ranking dependence of the label-corrected figures (exp(D·z));
- :func:`deal_hits` hands a batch out as the platform does: queries in random order in HITs of
  ``queries_per_hit``, each HIT's workers distinct, drawn by share (the Gumbel-top-k order of
  log share + Gumbel noise; the next worker in that order takes an escalation round);
- :class:`HitVotes` keeps every vote per worker: a worker of the :class:`~.workers.CrowdModel` answers
  from its confusion matrix (its error odds × the query's difficulty, when given); a **copier**
  answers a given label (the machine's, which the echo check looks for); workers can be held out and
  their places offered again (:meth:`HitVotes.escalate`).
"""

from __future__ import annotations

from collections.abc import Collection

import numpy as np

from genderbias.crowd.simulation.workers import CrowdModel


def pick(uniforms: np.ndarray, chances: np.ndarray) -> np.ndarray:
    """Per row of ``chances`` [..., K] (probabilities over K labels), the label index its uniform
    (``uniforms`` [...]) falls on: the number of cumulative sums it exceeds, at most K − 1."""
    k = chances.shape[-1]
    return np.minimum((uniforms[..., None] > np.cumsum(chances, axis=-1)).sum(axis=-1), k - 1)


def tilt_errors(rows: np.ndarray, truth: np.ndarray, factor: np.ndarray | float) -> np.ndarray:
    """``rows`` [..., K] (each answer's probabilities given its true label ``truth`` [...]) with each
    answer's odds of being wrong × ``factor`` (broadcast to ``truth``), the wrong answers keeping their
    proportions. A factor of 1 leaves the rows as they are (up to rounding)."""
    k = rows.shape[-1]
    onehot = np.eye(k)[truth]
    right = np.clip((rows * onehot).sum(axis=-1), 1e-12, 1 - 1e-12)
    wrong = rows * (1 - onehot)
    wrong /= np.maximum(wrong.sum(axis=-1, keepdims=True), 1e-300)
    p_right = 1.0 / (1.0 + (1.0 - right) / right * factor)
    return (1.0 - p_right)[..., None] * wrong + p_right[..., None] * onehot


def draw_answers(confusion: np.ndarray, truth: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One worker's answers (label indices) to queries of true labels ``truth``, from its ``confusion``
    [T, L] (true label → answer)."""
    truth = np.asarray(truth, dtype=int)
    return pick(rng.random(len(truth)), np.asarray(confusion, dtype=float)[truth])


def deal_hits(
    n: int, shares: np.ndarray, rng: np.random.Generator, queries_per_hit: int = 10
) -> tuple[np.ndarray, np.ndarray]:
    """``(hit_of, ranking)``: each of ``n`` queries' HIT (random order, ``queries_per_hit`` a HIT) and,
    per HIT, the workers in the order they take it (distinct, drawn by ``shares`` without replacement)."""
    hit_of = np.empty(n, dtype=int)
    hit_of[rng.permutation(n)] = np.arange(n) // queries_per_hit
    hits = int(hit_of.max()) + 1 if n else 0
    ranking = np.argsort(-(np.log(shares)[None, :] + rng.gumbel(size=(hits, len(shares)))), axis=1)
    return hit_of, ranking


def with_copiers(model: CrowdModel, copiers: int, share: float = 1.0) -> np.ndarray:
    """The shares of ``model``'s workers followed by ``copiers`` copiers, each taking ``share`` times the
    model's average worker's share (copying is fast: more than 1), normalised."""
    shares = np.concatenate([model.shares, np.full(copiers, share * model.shares.mean())])
    return shares / shares.sum()


def majority(counts: np.ndarray, least: int = 2) -> np.ndarray:
    """Per row of vote counts (query × label), the strict majority's label if the row has at least
    ``least`` votes; −1 otherwise."""
    top = counts.max(axis=1)
    decisive = (counts.sum(axis=1) >= least) & ((counts == top[:, None]).sum(axis=1) == 1)
    return np.where(decisive, counts.argmax(axis=1), -1)


class HitVotes:
    """The votes on queries of true labels ``truth`` as the platform collects them, kept per worker.

    :func:`deal_hits` hands the queries out to ``model``'s workers and the copiers (``shares``: every
    worker's, the copiers last; default the model's own, no copier); ``votes`` workers take each HIT,
    then every HIT holding a query without a strict majority (of at least two votes) gets one more
    worker per round until it has ``cap`` (:meth:`escalate`). A model's worker answers from its confusion
    matrix, its error odds × ``difficulty`` [N] when given (:func:`tilt_errors`); a copier answers
    ``copied`` [N] (the machine's labels)."""

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
