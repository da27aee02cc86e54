"""A crowd simulated as the platform runs it, and the reference label routing is held to.

Routing's guarantee (:mod:`.routing_statistics`) is stated against the **reference label**, the calibration
sample's final crowd label after the sample's undecided queries got more votes (:class:`ReferenceRule`; the rule,
and why it reads the votes alone: docs/prelabelling.md, "The reference label: what "right" means").

:func:`simulate_crowd` runs the platform's process on a :class:`.workers.CrowdModel`;
:func:`reference_outcomes` is its exact per-query law; :func:`routing_ceiling` the best agreement with
the reference any machine can expect.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from genderbias.crowd.simulation.answers import deal_hits, pick
from genderbias.crowd.simulation.workers import CrowdModel

__all__ = [
    "DEFAULT_CAP", "ReferenceRule", "ceiling_by_label", "reference_outcomes", "routing_ceiling", "simulate_crowd",
]  # fmt: skip

#: Most assignments a sample HIT gets by default (``Batch.escalation_cap``'s default).
DEFAULT_CAP = 7


@dataclass(frozen=True)
class ReferenceRule:
    """When a query's crowd label is decisive, and how far its HIT is escalated until it is."""

    votes: int = 3  #: assignments per HIT before any escalation
    cap: int = DEFAULT_CAP  #: most assignments a HIT is escalated to (``votes``: no escalation)
    posterior: float | None = None  #: also require the majority label's posterior ≥ this (None: majority alone)

    def __post_init__(self) -> None:
        if self.votes < 1:
            raise ValueError(f"votes must be at least 1, got {self.votes}")
        if self.cap < self.votes:
            raise ValueError(f"the cap ({self.cap}) is below the {self.votes} votes every query gets")
        if self.posterior is not None and not 0.5 < self.posterior < 1:
            raise ValueError(f"the posterior threshold must be in (0.5, 1), got {self.posterior}")

    @property
    def until(self) -> str:
        """The escalation setting's spelling (``annotation.quality.services.escalation.parse_until``)."""
        return "majority" if self.posterior is None else f"posterior:{self.posterior:g}"

    def describe(self) -> str:
        """The rule in one clause, as the page, the command, the API and the card state it."""
        decisive = "a strict majority" + (
            "" if self.posterior is None else f" whose posterior under the crowd model is at least {self.posterior:g}"
        )
        if self.cap == self.votes:
            return (
                f"the sample's crowd label from {self.votes} votes ({decisive}); a query without one counts as the "
                "machine's error"
            )
        return (
            f"the sample's final crowd label: {self.votes} votes, and a query without {decisive} gets more votes "
            f"(one more assignment of its HIT per round, up to {self.cap}); a query still without one counts as "
            "the machine's error"
        )


# --- decisiveness ------------------------------------------------------------------------------


def _decisive(counts: np.ndarray, log_vote: np.ndarray, log_prior: np.ndarray, posterior: float | None):
    """Per row of vote counts [..., L]: the decisive label's index, −1 when undecided."""
    order = np.sort(counts, axis=-1)
    top = np.argmax(counts, axis=-1)
    strict = order[..., -1] > order[..., -2] if counts.shape[-1] > 1 else order[..., -1] > 0
    if posterior is not None:
        log_post = counts @ log_vote.T + log_prior  # [..., T]
        log_post = log_post - log_post.max(axis=-1, keepdims=True)
        post = np.exp(log_post)
        post = post / post.sum(axis=-1, keepdims=True)
        strict = strict & (np.take_along_axis(post, top[..., None], axis=-1)[..., 0] >= posterior - 1e-12)
    return np.where(strict, top, -1)


def _logs(model: CrowdModel) -> tuple[np.ndarray, np.ndarray]:
    with np.errstate(divide="ignore"):
        return np.log(np.clip(model.pooled, 1e-12, 1)), np.log(model.priors())


# --- the exact per-query law --------------------------------------------------------------------


@lru_cache(maxsize=32)
def _compositions(total: int, parts: int) -> tuple[tuple[int, ...], ...]:
    if parts == 1:
        return ((total,),)
    return tuple((first, *rest) for first in range(total + 1) for rest in _compositions(total - first, parts - 1))


def reference_outcomes(model: CrowdModel, rule: ReferenceRule) -> tuple[np.ndarray, np.ndarray]:
    """``(outcome [T, L+1], votes [T])``: P(reference = l | true label t), P(undecided | t) last, and the
    expected votes; exact under the per-query process (pooled votes, one more at a time while undecided)."""
    from math import factorial

    pooled = model.pooled
    size = len(model.labels)
    log_vote, log_prior = _logs(model)
    outcome = np.zeros((size, size + 1))
    expected = np.zeros(size)
    # Start: every composition of `votes` votes, with its multinomial probability per true label.
    states = {}
    for counts in _compositions(rule.votes, size):
        ways = factorial(rule.votes) / np.prod([factorial(x) for x in counts])
        states[counts] = ways * np.prod(pooled ** np.array(counts), axis=1)
    for total in range(rule.votes, rule.cap + 1):
        following: dict[tuple[int, ...], np.ndarray] = {}
        for counts, p in states.items():
            label = int(_decisive(np.array(counts, dtype=float), log_vote, log_prior, rule.posterior))
            if label >= 0 or total == rule.cap:
                outcome[:, label if label >= 0 else size] += p
                expected += p * total
                continue
            for g in range(size):
                more = list(counts)
                more[g] += 1
                key = tuple(more)
                following[key] = following.get(key, 0) + p * pooled[:, g]
        states = following
    return outcome, expected


def ceiling_by_label(
    model: CrowdModel,
    rule: ReferenceRule,
    *,
    queries_per_hit: int = 10,
    queries: int = 20_000,
    seed: int = 0,
    class_shares: np.ndarray | None = None,
) -> np.ndarray:
    """[T]: max_l P(reference = l | t), the best agreement with the reference any machine can expect on
    queries of true label t. Exact without escalation; with it, from :func:`simulate_crowd` on ``queries``
    queries (a HIT's other queries get the round's votes too, beyond the per-query law)."""
    size = len(model.labels)
    if rule.cap == rule.votes:
        outcome, _ = reference_outcomes(model, rule)
        return outcome[:, :-1].max(axis=1)
    shares = model.priors() if class_shares is None else np.asarray(class_shares, float) / np.sum(class_shares)
    rng = np.random.default_rng(seed)
    # Every label at least 500 times, so a rare one's ceiling is measured too (HITs mix labels as the batch does).
    counts = np.maximum(np.round(shares * queries).astype(int), 500)
    truth = rng.permutation(np.repeat(np.arange(size), counts))
    run = simulate_crowd(truth, model, rule, rng, queries_per_hit=queries_per_hit)
    best = np.zeros(size)
    for t in range(size):
        mine = run.reference[truth == t]
        best[t] = np.bincount(np.where(mine < 0, size, mine), minlength=size + 1)[:size].max() / len(mine)
    return best


def routing_ceiling(
    model: CrowdModel,
    rule: ReferenceRule,
    class_shares: np.ndarray | None = None,
    *,
    queries_per_hit: int = 10,
    queries: int = 20_000,
    seed: int = 0,
) -> float:
    """Σ_t π_t ceiling_t (:func:`ceiling_by_label`; π: ``class_shares``, else the model's): a kept set richer
    in the labels the crowd gets right can do better, up to the largest per-label ceiling."""
    shares = model.priors() if class_shares is None else np.asarray(class_shares, float) / np.sum(class_shares)
    best = ceiling_by_label(
        model, rule, queries_per_hit=queries_per_hit, queries=queries, seed=seed, class_shares=shares
    )
    return float(shares @ best)


# --- the platform's process, simulated ------------------------------------------------------------


@dataclass(frozen=True)
class CrowdRun:
    """What :func:`simulate_crowd` gave a batch."""

    reference: np.ndarray  #: [N] label index, −1 undecided
    assignments: int  #: HIT assignments paid (first round and escalations)
    escalations: int  #: of them, added by escalation
    hits: int
    first_round: np.ndarray  #: [N] the label after the first round alone (−1: no strict majority)


def simulate_crowd(
    truth: np.ndarray,
    model: CrowdModel,
    rule: ReferenceRule,
    rng: np.random.Generator,
    *,
    queries_per_hit: int = 10,
) -> CrowdRun:
    """The crowd labels queries of true labels ``truth`` as the platform does (HITs dealt by :func:`.answers.deal_hits`;
    an escalation round takes the HIT's next worker, starting again once every worker has taken it)."""
    truth = np.asarray(truth, dtype=int)
    n, size = len(truth), len(model.labels)
    workers = len(model.shares)
    log_vote, log_prior = _logs(model)
    hit_of, ranking = deal_hits(n, model.shares, rng, queries_per_hit)
    hits = len(ranking)
    given_hits = np.zeros(hits, dtype=int)
    counts = np.zeros((n, size))

    def one_more(chosen_hits: np.ndarray) -> None:
        """Every query of the chosen HITs gets a vote from its HIT's next worker."""
        queries = np.flatnonzero(chosen_hits[hit_of])
        worker = ranking[hit_of[queries], given_hits[hit_of[queries]] % workers]
        given = pick(rng.random(len(queries)), model.confusion[worker, truth[queries]])
        np.add.at(counts, (queries, given), 1)
        given_hits[chosen_hits] += 1

    everyone = np.ones(hits, dtype=bool)
    for _ in range(rule.votes):
        one_more(everyone)
    first = _decisive(counts, log_vote, log_prior, None)
    escalations = 0
    for _ in range(rule.cap - rule.votes):
        undecided = _decisive(counts, log_vote, log_prior, rule.posterior) < 0
        open_hits = np.bincount(hit_of[undecided], minlength=hits) > 0
        if not open_hits.any():
            break
        one_more(open_hits)
        escalations += int(open_hits.sum())
    return CrowdRun(
        reference=_decisive(counts, log_vote, log_prior, rule.posterior),
        assignments=hits * rule.votes + escalations,
        escalations=escalations,
        hits=hits,
        first_round=first,
    )
