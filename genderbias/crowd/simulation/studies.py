"""Simulated studies with a realistic crowd, for the coverage of the label-based intervals.

A study: N queries whose true labels follow the SIGIR 2020 study's class shares; per query the values of
runs A and B (gendered queries more biased: the case label noise distorts); a crowd of workers answering
HITs of :attr:`Crowd.per_hit` queries plus one gold question, three workers a query, each right with
probability a and erring along the study's lines (:data:`ERRORS`); unequal workers, spammers, lazy workers,
gold and the optional departures from that crowd (ranking-dependent errors, item difficulty, gold selection,
class-asymmetric confusion, escalation, fatigue) are :class:`Crowd`'s fields; the crowds offered: :data:`CROWDS`
and :data:`SIZED`. The machine labels every query with its own confusion of accuracy :data:`MACHINE_ACCURACY`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from genderbias.crowd.simulation.answers import pick, tilt_errors

__all__ = [
    "CROWDS", "HEAVY", "LABELS", "MACHINE_ACCURACY", "MEAN_A", "MEAN_DIFFERENCE", "MODERATE", "SD_DIFFERENCE", "SIZED",
    "Crowd", "answered", "crowd_judgments", "crowd_named", "machine_labels", "prolific", "study", "synthetic_truth",
    "values", "with_dependence",
]  # fmt: skip

LABELS = ("n", "f", "m", "o")
#: The SIGIR 2020 study's shares (1,765 n, 742 f, 1,202 m, 41 o of 3,750).
SHARES = np.array([1765, 742, 1202, 41]) / 3750
#: Where a worker's errors go, by true label (rows: n, f, m, o; the diagonal unused).
ERRORS = np.array(
    [
        [0.0, 0.30, 0.55, 0.15],
        [0.60, 0.0, 0.30, 0.10],
        [0.65, 0.25, 0.0, 0.10],
        [0.30, 0.35, 0.35, 0.0],
    ]
)
#: Class means of run A and of the paired difference B − A (gendered queries lean harder).
MEAN_A = np.array([0.05, 0.40, 0.50, 0.10])
MEAN_DIFFERENCE = np.array([0.02, 0.15, 0.25, 0.05])
SD_A, SD_DIFFERENCE = 0.2, 0.1
#: Where errors go in the class-asymmetric crowd (issue 66): f, m ↔ o, n read as m far more than as f.
ASYMMETRIC_ERRORS = (
    (0.0, 0.20, 0.75, 0.05),
    (0.20, 0.0, 0.10, 0.70),
    (0.20, 0.10, 0.0, 0.70),
    (0.10, 0.45, 0.45, 0.0),
)
#: The class-asymmetric crowd's accuracy by true label: logit shifts of each worker's accuracy.
ASYMMETRIC_SKILL = (0.6, -0.5, -0.4, -1.0)
#: Fatigue multiplies a worker's error odds by at most this much.
FATIGUE_CAP = 4.0
MACHINE_ACCURACY = 0.905


@dataclass(frozen=True)
class Crowd:
    """How the crowd is made (see the module docstring)."""

    workers: int = 40
    votes: int = 3
    accuracy: tuple[float, float] = (0.70, 0.95)
    spammers: float = 0.10
    lazy: int = 1
    gold: int = 10
    per_hit: int = 10
    zipf: float = 1.0
    dependence: float = 0.0  #: error odds multiplied by exp(dependence · z), z = run A's standardised value
    difficulty: float = 0.0  #: error odds multiplied by exp(difficulty · d), d ~ N(0, 1) per query
    discard_failed_gold: bool = False  #: an assignment with a wrong gold answer loses its other answers
    #: The true labels' shares (default :data:`SHARES`, the SIGIR 2020 study's).
    shares: tuple[float, ...] | None = None
    #: A good worker's errors spread evenly over the other labels, not along :data:`ERRORS`.
    even_errors: bool = False
    #: Where a good worker's errors go by true label (rows), in place of :data:`ERRORS`.
    errors: tuple[tuple[float, ...], ...] | None = None
    #: Logit shift of every good worker's accuracy by true label (class-asymmetric accuracy).
    class_skill: tuple[float, ...] | None = None
    #: Escalation by disagreement: a query without a majority gets another worker, up to this many votes.
    escalate_to: int = 0
    #: Error odds × (1 + fatigue · answers given / 100), at most :data:`FATIGUE_CAP`.
    fatigue: float = 0.0
    #: Who deals the queries and draws the answers: this module, or ``"peerannot"``, a simulator this
    #: project did not write (:func:`_peerannot_answers`).
    generator: str = "own"
    #: peerannot: between 1 and ``votes`` votes a query (its ``imbalance_votes``), not ``votes`` each.
    uneven_votes: bool = False

    @property
    def label_shares(self) -> np.ndarray:
        return SHARES if self.shares is None else np.asarray(self.shares, dtype=float)


MODERATE = Crowd()
HEAVY = Crowd(accuracy=(0.55, 0.85), spammers=0.35)
#: The demo's crowd (``simulate_annotations --annotators 5 --accuracy 0.7``): 5 annotators right 0.7 of the
#: time, erring evenly, on a pool nearly all non-gendered; no gold, no spammer.
DEMO = Crowd(
    workers=5, accuracy=(0.7, 0.7), spammers=0.0, lazy=0, gold=0, zipf=0.0,
    shares=(0.97, 0.015, 0.014, 0.001), even_errors=True,
)  # fmt: skip
#: The crowds ``crowd_coverage --crowd`` offers (``prolific``: :func:`prolific`, sized to the queries).
CROWDS = {
    "moderate": MODERATE,
    "heavy": HEAVY,
    "difficulty": replace(MODERATE, difficulty=1.0),
    "gold-selected": replace(MODERATE, discard_failed_gold=True),
    "demo": DEMO,
    # Issue 66's crowds, each the moderate crowd with one thing real crowds do:
    "zipf": replace(MODERATE, workers=300, zipf=1.2),  # a few do most of the work, most answer one HIT
    "escalation": replace(MODERATE, votes=2, escalate_to=5),
    "colluders": replace(MODERATE, lazy=8),  # a fifth of the crowd answers "n" to everything
    "fatigue": replace(MODERATE, accuracy=(0.8, 0.97), fatigue=0.5),
    # peerannot's simulator deals the queries: 100 workers, between 1 and 3 votes a query, class-asymmetric
    # errors, a tenth spammers and two colluders; no gold.
    "peerannot": replace(
        MODERATE,
        workers=100,
        lazy=2,
        gold=0,
        accuracy=(0.65, 0.95),
        errors=ASYMMETRIC_ERRORS,
        class_skill=ASYMMETRIC_SKILL,
        generator="peerannot",
        uneven_votes=True,
    ),
}
#: Issue 66's crowd kinds (with ``gold-selected``): coverage and width against the oracle are measured on each.
KINDS = ("zipf", "asymmetric", "escalation", "colluders", "fatigue", "gold-selected", "peerannot")


def prolific(queries: int) -> Crowd:
    """A Prolific-like crowd: participants of equal activity taking 1.5 HITs of ten queries on average."""
    return Crowd(workers=max(20, round(queries * 3 / 10 / 1.52)), zipf=0.0, per_hit=10)


def asymmetric(queries: int) -> Crowd:
    """:func:`prolific` with accuracy by true label and errors of their own (:data:`ASYMMETRIC_ERRORS`,
    :data:`ASYMMETRIC_SKILL`): every worker answers too little for a confusion matrix of its own."""
    return replace(prolific(queries), accuracy=(0.75, 0.9), errors=ASYMMETRIC_ERRORS, class_skill=ASYMMETRIC_SKILL)


#: The crowds sized to the queries (``crowd_coverage --crowd``, :func:`crowd_named`).
SIZED = {"prolific": prolific, "asymmetric": asymmetric}


def crowd_named(name: str, queries: int) -> Crowd:
    return SIZED[name](queries) if name in SIZED else CROWDS[name]


def synthetic_truth(rng: np.random.Generator, n: int, shares: np.ndarray = SHARES) -> np.ndarray:
    """n labels with ``shares`` (default the study's), exactly (rounded), in random order."""
    counts = np.floor(np.asarray(shares) * n).astype(int)
    counts[0] += n - counts.sum()
    return rng.permutation(np.repeat(np.arange(len(LABELS)), counts))


def values(rng: np.random.Generator, truth: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-query values of runs A and B."""
    a = MEAN_A[truth] + rng.normal(0, SD_A, len(truth))
    b = a + MEAN_DIFFERENCE[truth] + rng.normal(0, SD_DIFFERENCE, len(truth))
    return a, b


#: Errors spread evenly over the other labels (:attr:`Crowd.even_errors`).
EVEN_ERRORS = (1 - np.eye(len(LABELS))) / (len(LABELS) - 1)


def _confusion(accuracy: float, errors: np.ndarray = ERRORS) -> np.ndarray:
    return accuracy * np.eye(len(LABELS)) + (1 - accuracy) * errors


def crowd_judgments(
    rng: np.random.Generator, truth: np.ndarray, crowd: Crowd, a: np.ndarray | None = None
) -> tuple[pd.DataFrame, dict[str, str]]:
    """The crowd's answers (``item, worker, label`` in answer order; gold items ``g<i>``) and the gold labels.
    ``attrs["discarded"]``: assignments gold selection emptied; ``attrs["confusions"]``: each worker's true
    confusion matrix before difficulty or fatigue tilts it (the known-confusion floor's)."""
    n, k = len(truth), len(LABELS)
    kinds = np.zeros(crowd.workers, dtype=np.int64)  # 0 good, 1 spammer, 2 lazy
    spam = round(crowd.spammers * crowd.workers)
    kinds[:spam] = 1
    kinds[spam : spam + crowd.lazy] = 2
    kinds = rng.permutation(kinds)
    accuracy = rng.uniform(*crowd.accuracy, crowd.workers)
    activity = 1.0 / np.arange(1, crowd.workers + 1) ** crowd.zipf
    activity = rng.permutation(activity / activity.sum())
    gold_truth = rng.choice(k - 1, size=crowd.gold, p=SHARES[:3] / SHARES[:3].sum())
    errors = np.asarray(crowd.errors) if crowd.errors else EVEN_ERRORS if crowd.even_errors else ERRORS
    confusions = np.stack([_confusion(x, errors) for x in accuracy])
    if crowd.class_skill is not None:
        right = 1 / (1 + np.exp(-(np.log(accuracy / (1 - accuracy))[:, None] + np.asarray(crowd.class_skill))))
        confusions = right[:, :, None] * np.eye(k) + (1 - right)[:, :, None] * errors[None]
    true_rows = confusions.copy()
    true_rows[kinds == 1] = np.full((k, k), 1 / k)
    true_rows[kinds == 2] = np.eye(k)[np.zeros(k, dtype=int)]
    if crowd.generator == "peerannot":
        frame = _peerannot_answers(rng, truth, crowd, true_rows.copy())
        frame.attrs["confusions"] = _as_rows(true_rows)
        return frame, {}
    given_so_far = np.zeros(crowd.workers)
    z = np.zeros(n) if a is None or crowd.dependence == 0 else (a - a.mean()) / a.std()
    # Hardness of each query and gold question (drawn only when asked: same seeds, same crowds).
    hardness = rng.standard_normal(n + crowd.gold) if crowd.difficulty else np.zeros(n + crowd.gold)
    odds_factor = np.exp(np.concatenate([crowd.dependence * z, np.zeros(crowd.gold)]) + crowd.difficulty * hardness)
    order = rng.permutation(n)
    hits = [order[i : i + crowd.per_hit] for i in range(0, n, crowd.per_hit)]
    rows: list[tuple[str, str, str]] = []
    for hit_number, hit in enumerate(hits):
        chosen = rng.choice(crowd.workers, size=crowd.votes, replace=False, p=activity)
        gold_items = (-1 - hit_number % crowd.gold,) if crowd.gold else ()
        for w in chosen:
            worker = f"w{w}"
            for q in (*hit, *gold_items):
                t = gold_truth[-1 - q] if q < 0 else truth[q]
                given = _answer(rng, crowd, kinds[w], confusions[w, t], t, odds_factor, q, n, given_so_far[w])
                given_so_far[w] += 1
                rows.append((f"g{-1 - q}" if q < 0 else f"q{q}", worker, LABELS[given]))
    if crowd.escalate_to:
        _escalate(rng, crowd, truth, rows, kinds, confusions, activity, odds_factor, given_so_far)
    frame = pd.DataFrame(rows, columns=["item", "worker", "label"])
    frame.attrs["confusions"] = _as_rows(true_rows)
    gold = {f"g{i}": LABELS[t] for i, t in enumerate(gold_truth)}
    if crowd.discard_failed_gold:
        is_gold = frame["item"].str.startswith("g").to_numpy()
        assignment = np.concatenate([[0], np.cumsum(is_gold)[:-1]])  # each assignment ends with its gold row
        wrong = is_gold & (frame["label"].to_numpy() != frame["item"].map(gold).to_numpy())
        failed = np.zeros(assignment.max() + 1, dtype=bool)
        failed[assignment[wrong]] = True
        frame = frame.loc[~(failed[assignment] & ~is_gold)].reset_index(drop=True)
        frame.attrs["discarded"] = int(failed.sum())
    return frame, gold


def _as_rows(confusions: np.ndarray) -> dict[str, tuple[tuple[float, ...], ...]]:
    """Worker → its confusion matrix as tuples (attrs are compared and copied with the frame)."""
    return {f"w{w}": tuple(map(tuple, matrix.tolist())) for w, matrix in enumerate(confusions)}


def _answer(rng, crowd: Crowd, kind: int, row, t: int, odds_factor, q: int, n: int, given: float) -> int:
    """A worker's answer to query ``q`` (gold: q < 0) of true label t: ``kind`` 1 (spammer) at random, 2 (lazy)
    "n", 0 from its confusion ``row``."""
    if kind == 1:
        return int(rng.integers(len(row)))
    if kind == 2:
        return 0
    factor = 1.0
    if (q >= 0 and crowd.dependence) or crowd.difficulty:
        factor = odds_factor[q if q >= 0 else n - 1 - q]
    if crowd.fatigue:
        factor *= min(1.0 + crowd.fatigue * given / 100.0, FATIGUE_CAP)
    if factor != 1.0:
        row = tilt_errors(row, t, factor)
    return int(pick(np.asarray(rng.random()), row))


def _peerannot_answers(rng, truth, crowd: Crowd, matrix: np.ndarray) -> pd.DataFrame:
    """The answers as peerannot's ``with_confusion`` deals and draws them (requirements-no-deps.txt) from each
    worker's confusion ``matrix``: each query to ``crowd.votes`` workers (1 to ``votes`` with ``uneven_votes``)
    under a load of twice the mean."""
    try:
        from peerannot.helpers.simulations_strategies import with_confusion
    except ImportError as exc:  # a test and benchmark dependency, not the product's
        raise RuntimeError("the peerannot crowd needs peerannot (requirements-no-deps.txt, --no-deps)") from exc
    n, k = len(truth), len(LABELS)
    load = int(np.ceil(2 * n * crowd.votes / crowd.workers))
    answers = with_confusion(
        crowd.workers, [int(t) for t in truth], k, matrix, rng,
        workerload=load, feedback=crowd.votes, imbalance_votes=crowd.uneven_votes, verbose=False,
    )  # fmt: skip
    rows = [(f"q{q}", f"w{w}", LABELS[g]) for q, given in answers.items() for w, g in given.items()]
    return pd.DataFrame(rows, columns=["item", "worker", "label"])


def _escalate(rng, crowd: Crowd, truth, rows: list, kinds, confusions, activity, odds_factor, given_so_far) -> None:
    """While a query's votes have no label above half, one more worker (by activity) answers it, up to ``escalate_to``."""
    n, k = len(truth), len(LABELS)
    votes: dict[int, list[tuple[int, int]]] = {}
    for item, worker, label in rows:
        if item.startswith("q"):
            votes.setdefault(int(item[1:]), []).append((int(worker[1:]), LABELS.index(label)))
    for q in range(n):
        answers = votes.get(q, [])
        while answers and len(answers) < crowd.escalate_to:
            counts = np.bincount([g for _, g in answers], minlength=k)
            if counts.max() * 2 > len(answers):
                break
            free = np.ones(crowd.workers, dtype=bool)
            free[[w for w, _ in answers]] = False
            w = int(rng.choice(crowd.workers, p=np.where(free, activity, 0) / activity[free].sum()))
            given = _answer(rng, crowd, kinds[w], confusions[w, truth[q]], truth[q], odds_factor, q, n, given_so_far[w])
            given_so_far[w] += 1
            answers.append((w, given))
            rows.append((f"q{q}", f"w{w}", LABELS[given]))


def machine_labels(rng: np.random.Generator, truth: np.ndarray, accuracy: float = MACHINE_ACCURACY) -> np.ndarray:
    """The machine's label codes: right with probability ``accuracy``, else along :data:`ERRORS`."""
    confusion = _confusion(accuracy)
    cumulative = confusion[truth].cumsum(axis=1)
    return (rng.random(len(truth))[:, None] > cumulative).sum(axis=1)


@dataclass
class Study:
    """One simulated study: truth, values, the crowd's answers, the machine's labels."""

    truth: np.ndarray
    a: np.ndarray
    b: np.ndarray
    judgments: pd.DataFrame
    gold: dict[str, str]
    machine: np.ndarray
    #: Assignments whose other answers gold selection discarded (``Crowd.discard_failed_gold``).
    discarded: int = 0
    #: Each worker's true confusion matrix (worker → [K × K]; :func:`crowd_judgments`).
    confusions: dict | None = None

    @property
    def qids(self) -> list[str]:
        return [f"q{i}" for i in range(len(self.truth))]


def study(rng: np.random.Generator, truth: np.ndarray, crowd: Crowd = MODERATE) -> Study:
    """Draw one study on ``truth``."""
    a, b = values(rng, truth)
    judgments, gold = crowd_judgments(rng, truth, crowd, a)
    confusions = judgments.attrs.pop("confusions", None)  # kept on the study, not copied with every frame
    discarded = judgments.attrs.get("discarded", 0)
    return Study(truth, a, b, judgments, gold, machine_labels(rng, truth), discarded, confusions)


def answered(drawn: Study) -> Study:
    """The study on the queries with an answer left (gold selection can empty one), renumbered ``q0…``."""
    seen = set(drawn.judgments["item"])
    keep = np.array([q in seen for q in drawn.qids], dtype=bool)
    if keep.all():
        return drawn
    renamed = {f"q{old}": f"q{new}" for new, old in enumerate(np.flatnonzero(keep))}
    judgments = drawn.judgments.assign(item=drawn.judgments["item"].map(lambda item: renamed.get(item, item)))
    kept = {name: getattr(drawn, name)[keep] for name in ("truth", "a", "b", "machine")}
    return replace(drawn, judgments=judgments, **kept)


def with_dependence(crowd: Crowd, dependence: float) -> Crowd:
    return replace(crowd, dependence=dependence)
