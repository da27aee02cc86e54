"""Simulated studies with a realistic crowd, for the coverage of the label-based intervals.

Pure (numpy, pandas; no Django): the tests of the crowd model and of the label-corrected intervals,
and the coverage studies (:mod:`genderbias.crowd.simulation.coverage`, the ``crowd_coverage``
benchmark command) draw their studies here.

A study: N queries whose true labels follow the class shares of the SIGIR 2020 study; per query, the values of two runs A and B
whose class means differ (gendered queries are more biased: the case label noise distorts); a
crowd of workers who each answer HITs of :attr:`Crowd.per_hit` queries plus one gold question,
three workers per query:

- **class confusion**: a worker right with probability a errs along the study's lines
  (:data:`ERRORS`: a non-gendered query read as male more often than as female, a gendered one
  read as non-gendered when its cue is missed, "other" rarely chosen);
- **unequal workers**: a drawn from a range, and activity (how many HITs) from a Zipf law;
- **spammers**: a share of the workers answer at random;
- **a lazy worker** answers "non-gendered" to everything;
- **gold**: every HIT holds one of :attr:`Crowd.gold` gold questions (known labels), so a worker
  meets the same gold question again and again;
- optionally **ranking-dependent errors**: a worker's error rate on a query grows with run A's
  value on it (``dependence``), the case no label model can correct;
- optionally **item difficulty**: every worker's error odds on a query (or gold question) are
  multiplied by exp(``difficulty`` · d), d ~ N(0, 1) drawn per query and independent of the runs
  (the votes on a query are no longer independent given its label);
- the **demo's crowd** (:data:`DEMO`): five annotators of accuracy 0.7 erring evenly on a pool nearly all
  non-gendered, no gold;
- optionally **gold selection** (``discard_failed_gold``): an assignment whose gold answer is wrong
  loses its other answers (a batch's default ``--failed-gold-answers discard``); its gold answer
  stays in what the crowd model reads (:func:`annotation.results.selectors.gold_judgments`).

:func:`prolific` is a Prolific-like crowd: many participants of equal activity, each taking one or
two HITs of ten queries and a gold question (11–22 answers; 200 participants for 1,000 queries,
740 for 3,750).

The machine (for the de-noised accuracy) labels every query with its own confusion of accuracy
:data:`MACHINE_ACCURACY`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from genderbias.crowd.simulation.answers import pick, tilt_errors

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

    @property
    def label_shares(self) -> np.ndarray:
        return SHARES if self.shares is None else np.asarray(self.shares, dtype=float)


MODERATE = Crowd()
HEAVY = Crowd(accuracy=(0.55, 0.85), spammers=0.35)
#: The demo's crowd (issue 58): ``simulate_annotations --annotators 5 --accuracy 0.7`` on a pool nearly all
#: non-gendered: 5 annotators, 3 a query, each right with probability 0.7 and otherwise naming one of the
#: other three labels at random; no gold question, no spammer.
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
}


def prolific(queries: int) -> Crowd:
    """A Prolific-like crowd for ``queries`` queries: participants of equal activity taking 1.5 HITs
    of ten queries on average (``queries`` × 3 votes / 10 / 1.5 participants)."""
    return Crowd(workers=max(20, round(queries * 3 / 10 / 1.52)), zipf=0.0, per_hit=10)


def crowd_named(name: str, queries: int) -> Crowd:
    return prolific(queries) if name == "prolific" else CROWDS[name]


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
    """The crowd's answers (``item, worker, label``, in the order answered; gold items ``g<i>``)
    and the gold questions' known labels. With gold selection, ``frame.attrs["discarded"]`` is the
    number of assignments that lost their other answers (what
    :func:`annotation.results.selectors.gold_discarded_assignments` counts in a batch)."""
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
    errors = EVEN_ERRORS if crowd.even_errors else ERRORS
    confusions = np.stack([_confusion(x, errors) for x in accuracy])
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
                if kinds[w] == 1:
                    given = rng.integers(k)
                elif kinds[w] == 2:
                    given = 0
                else:
                    row = confusions[w, t]
                    if (q >= 0 and crowd.dependence) or crowd.difficulty:  # gold index n + g
                        row = tilt_errors(row, t, odds_factor[q if q >= 0 else n - 1 - q])
                    given = int(pick(np.asarray(rng.random()), row))
                rows.append((f"g{-1 - q}" if q < 0 else f"q{q}", worker, LABELS[given]))
    frame = pd.DataFrame(rows, columns=["item", "worker", "label"])
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

    @property
    def qids(self) -> list[str]:
        return [f"q{i}" for i in range(len(self.truth))]


def study(rng: np.random.Generator, truth: np.ndarray, crowd: Crowd = MODERATE) -> Study:
    """Draw one study on ``truth``."""
    a, b = values(rng, truth)
    judgments, gold = crowd_judgments(rng, truth, crowd, a)
    return Study(truth, a, b, judgments, gold, machine_labels(rng, truth), judgments.attrs.get("discarded", 0))


def answered(drawn: Study) -> Study:
    """The study restricted to the queries with at least one answer left (gold selection can discard
    every answer to a query: it is then not judged, as in a batch), renumbered ``q0…``."""
    seen = set(drawn.judgments["item"])
    keep = np.array([q in seen for q in drawn.qids], dtype=bool)
    if keep.all():
        return drawn
    renamed = {f"q{old}": f"q{new}" for new, old in enumerate(np.flatnonzero(keep))}
    judgments = drawn.judgments.assign(item=drawn.judgments["item"].map(lambda item: renamed.get(item, item)))
    return Study(
        drawn.truth[keep], drawn.a[keep], drawn.b[keep], judgments, drawn.gold, drawn.machine[keep], drawn.discarded
    )


def with_dependence(crowd: Crowd, dependence: float) -> Crowd:
    return replace(crowd, dependence=dependence)
