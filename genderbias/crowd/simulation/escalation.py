"""A crowd simulated as the platform runs it, and the reference label routing is held to.

Pure numpy, no Django. Routing's guarantee (:mod:`.routing_statistics`) is stated against the
**reference label**: the label the crowd process gives a query, the calibration sample's
final crowd label. With a noisy crowd (a few spammers, a lazy worker) a three-vote majority
often splits, and a split counts against any machine; so the sample's queries without a
decisive label get more votes before routing certifies (:class:`ReferenceRule`):

    a query is *decisive* when its votes have a strict majority and, with ``posterior`` P, the
    posterior of the majority label under the crowd model is at least P; an undecided query's
    HIT gets one more assignment per round, until every query of the HIT is decisive or the HIT
    has ``cap`` assignments. What is still undecided then has no reference label (an error for
    any machine).

The rule depends on the votes alone, never on the machine's label or on which queries were
sampled, so every query has its reference label whether or not it is sampled: the sample's
reference labels are a simple random sample of the population's, which is all the guarantee
needs. The routed queries get the same rule, so the crowd that labels them is the one the
machine was measured against.

:class:`CrowdModel` is a set of workers, each with a share of the work and a confusion matrix
(true label → vote). :func:`simulate_crowd` runs the platform's process on a batch:
queries grouped into HITs of ``queries_per_hit``, ``votes`` assignments per HIT by distinct
workers drawn by their shares, each worker voting on every query of the HIT, then the rounds
of escalation above (a HIT's decisive queries get the round's vote too, as on the platform).
:func:`reference_outcomes` is its exact per-query law (one vote per round to the undecided
query alone; the pooled vote distribution), enumerated over the vote counts; from it
:func:`routing_ceiling`, the best agreement with the reference any machine can expect, counted
as routing counts it: an undecided query is an error.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

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


@dataclass(frozen=True)
class CrowdModel:
    """Workers with a share of the work each and a confusion matrix (true label → their vote)."""

    labels: tuple[str, ...]
    confusion: np.ndarray = field(repr=False)  #: [W, T, L]: worker w's vote given true label t
    shares: np.ndarray = field(repr=False)  #: [W]: relative share of the assignments each takes
    names: tuple[str, ...] = ()
    class_shares: np.ndarray | None = field(default=None, repr=False)  #: [T]: the batch's true-label shares

    def __post_init__(self) -> None:
        confusion = np.asarray(self.confusion, dtype=float)
        if confusion.ndim != 3 or confusion.shape[1:] != (len(self.labels), len(self.labels)):
            raise ValueError(f"confusion must be workers × {len(self.labels)} × {len(self.labels)}")
        if not np.allclose(confusion.sum(axis=2), 1) or (confusion < 0).any():
            raise ValueError("each worker's confusion rows must be probabilities summing to 1")
        shares = np.asarray(self.shares, dtype=float)
        if shares.shape != (confusion.shape[0],) or not (shares > 0).all():
            raise ValueError("every worker needs a positive share of the work")
        object.__setattr__(self, "confusion", confusion)
        object.__setattr__(self, "shares", shares / shares.sum())

    @property
    def pooled(self) -> np.ndarray:
        """[T, L]: a vote by a worker drawn by share, given the true label."""
        return np.einsum("w,wtl->tl", self.shares, self.confusion)

    def priors(self) -> np.ndarray:
        """The true-label shares the posterior rule weighs with (uniform when unknown)."""
        if self.class_shares is None:
            return np.full(len(self.labels), 1 / len(self.labels))
        shares = np.asarray(self.class_shares, dtype=float)
        return shares / shares.sum()


def worker_confusion(labels: tuple[str, ...], accuracy: float, lean: str | None = None, lean_share: float = 0.0):
    """[T, L]: right with probability ``accuracy``; of the errors a share ``lean_share`` goes to
    ``lean`` (a worker who calls gendered queries non-gendered), the rest evenly to the others."""
    size = len(labels)
    matrix = np.zeros((size, size))
    for t in range(size):
        wrong = [g for g in range(size) if g != t]
        matrix[t, t] = accuracy
        leaning = labels.index(lean) if lean in labels and lean != labels[t] else None
        for g in wrong:
            even = (1 - accuracy) * (1 - (lean_share if leaning is not None else 0)) / len(wrong)
            matrix[t, g] = even + ((1 - accuracy) * lean_share if g == leaning else 0.0)
    return matrix


def noisy_crowd(
    labels: tuple[str, ...],
    *,
    honest: int = 12,
    accuracy: float = 0.9,
    spammers: int = 2,
    lazy: int = 1,
    lazy_label: str = "n",
    lazy_share: float = 2.0,
    class_shares: np.ndarray | None = None,
) -> CrowdModel:
    """A paid platform's crowd: ``honest`` workers right ``accuracy`` of the time (their errors
    leaning a third towards ``lazy_label``), ``spammers`` answering uniformly at random and
    ``lazy`` workers always answering ``lazy_label``, each lazy one taking ``lazy_share`` times an
    honest worker's share of the work (they are fast)."""
    size = len(labels)
    matrices = [worker_confusion(labels, accuracy, lazy_label, 1 / 3)] * honest
    matrices += [np.full((size, size), 1 / size)] * spammers
    always = np.zeros((size, size))
    always[:, labels.index(lazy_label)] = 1.0
    matrices += [always] * lazy
    shares = [1.0] * (honest + spammers) + [lazy_share] * lazy
    names = tuple([f"honest-{i}" for i in range(honest)] + [f"spammer-{i}" for i in range(spammers)])
    names += tuple(f"lazy-{i}" for i in range(lazy))
    return CrowdModel(labels, np.array(matrices), np.array(shares), names, class_shares)


def pooled_crowd(labels: tuple[str, ...], vote: np.ndarray, class_shares: np.ndarray | None = None) -> CrowdModel:
    """A crowd known only by its pooled vote distribution ([T, L]): one 'worker' of the whole crowd
    (a fitted Dawid–Skene model's pooled vote: the calibration report's ``against_truth``)."""
    return CrowdModel(labels, np.asarray(vote, dtype=float)[None], np.ones(1), ("pooled",), class_shares)


def crowd_from_figures(figures: dict) -> CrowdModel:
    """The pooled crowd of a calibration report's ``against_truth`` (``vote``: true → given →
    probability, ``class_shares``): the fitted crowd model route_audit simulates."""
    vote = figures.get("vote") or {}
    labels = tuple(vote)
    if not labels:
        raise ValueError("the report has no fitted crowd model (no votes on the sample yet)")
    matrix = np.array([[float(vote[t].get(g, 0.0)) for g in labels] for t in labels])
    matrix = matrix / matrix.sum(axis=1, keepdims=True)
    shares = figures.get("class_shares") or {}
    priors = np.array([float(shares.get(t, 0.0)) for t in labels]) if shares else None
    if priors is not None and priors.sum() <= 0:
        priors = None
    return pooled_crowd(labels, matrix, priors)


def crowd_from_dict(data: dict, labels: tuple[str, ...]) -> CrowdModel:
    """A crowd model written as JSON (``route_audit --crowd FILE``): either ``{"workers": [{"name",
    "share", "accuracy", "always"?: label, "spam"?: true}], "class_shares"?: {label: share}}`` or
    ``{"vote": {true: {given: p}}, "class_shares"?: ...}``. ValueError naming what is wrong."""
    if "vote" in data:
        return crowd_from_figures(data)
    workers = data.get("workers")
    if not isinstance(workers, list) or not workers:
        raise ValueError('a crowd model needs "workers" (a non-empty list) or "vote"')
    size = len(labels)
    matrices, shares, names = [], [], []
    for i, worker in enumerate(workers):
        if not isinstance(worker, dict):
            raise ValueError(f"workers[{i}] must be an object")
        share = worker.get("share", 1.0)
        if not isinstance(share, int | float) or share <= 0:
            raise ValueError(f"workers[{i}].share must be a positive number")
        if worker.get("always") is not None:
            if worker["always"] not in labels:
                raise ValueError(f"workers[{i}].always must be one of {', '.join(labels)}")
            matrix = np.zeros((size, size))
            matrix[:, labels.index(worker["always"])] = 1.0
        elif worker.get("spam"):
            matrix = np.full((size, size), 1 / size)
        else:
            accuracy = worker.get("accuracy")
            if not isinstance(accuracy, int | float) or not 0 <= accuracy <= 1:
                raise ValueError(f"workers[{i}].accuracy must be in [0, 1] (or give always or spam)")
            matrix = worker_confusion(labels, float(accuracy), worker.get("lean"), float(worker.get("lean_share", 0)))
        matrices.append(matrix)
        shares.append(float(share))
        names.append(str(worker.get("name", f"worker-{i}")))
    priors = data.get("class_shares")
    class_shares = np.array([float(priors.get(t, 0.0)) for t in labels]) if isinstance(priors, dict) else None
    return CrowdModel(labels, np.array(matrices), np.array(shares), tuple(names), class_shares)


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
    """``(outcome [T, L+1], votes [T])``: P(reference label = l | true label t), P(undecided | t)
    in the last column, and the expected votes a query of true label t gets.

    Exact under the per-query process: ``rule.votes`` votes from the pooled distribution, then one
    more at a time while undecided, up to ``rule.cap`` (enumerating the vote counts)."""
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
    """[T]: max_l P(reference = l | true label t), the best agreement with the reference any machine can
    expect on queries of true label t, an undecided query being an error for every machine.

    Without escalation (``cap`` = ``votes``) exact (:func:`reference_outcomes`); with it, from
    :func:`simulate_crowd` on ``queries`` queries drawn by the class shares, in HITs of
    ``queries_per_hit`` (a HIT's other queries get the round's votes too, which raises the
    reference's accuracy well above the per-query law's; Monte-Carlo s.e. below 0.005 per label
    with 20,000 queries, except for a rare label)."""
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
    """The best agreement with the reference any machine can expect on a set like the batch, as routing
    counts it: Σ_t π_t·max_l P(reference = l | t) (:func:`ceiling_by_label`; π: ``class_shares``, else
    the model's). A kept set richer in the labels the crowd gets right can do better, up to the
    largest per-label ceiling; none can beyond it."""
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
    """The crowd labels the queries of true labels ``truth`` (indices into ``model.labels``) as the
    platform does; see the module docstring.

    The workers of one HIT are distinct, drawn by share without replacement (successive
    sampling, as the Gumbel-top-k order of log share + Gumbel noise draws it); an escalation
    round takes the HIT's next worker in that order (once every worker has taken the HIT, the
    order starts again). Vectorised over HITs."""
    truth = np.asarray(truth, dtype=int)
    n, size = len(truth), len(model.labels)
    workers = len(model.shares)
    log_vote, log_prior = _logs(model)
    hit_of = np.empty(n, dtype=int)
    hit_of[rng.permutation(n)] = np.arange(n) // queries_per_hit
    hits = int(hit_of.max()) + 1 if n else 0
    ranking = np.argsort(-(np.log(model.shares)[None, :] + rng.gumbel(size=(hits, workers))), axis=1)
    given_hits = np.zeros(hits, dtype=int)
    counts = np.zeros((n, size))
    cumulative = np.cumsum(model.confusion, axis=2)  # [W, T, L]

    def one_more(chosen_hits: np.ndarray) -> None:
        """Every query of the chosen HITs gets a vote from its HIT's next worker."""
        queries = np.flatnonzero(chosen_hits[hit_of])
        worker = ranking[hit_of[queries], given_hits[hit_of[queries]] % workers]
        given = (rng.random(len(queries))[:, None] > cumulative[worker, truth[queries]]).sum(axis=1)
        np.add.at(counts, (queries, np.minimum(given, size - 1)), 1)
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
