"""The routing world: true labels, a chat model sampled 16 times, a paid platform's crowd.

Support of the cascade tests (tests/annotation/machine/test_cascade.py) and world of the routing benchmark.

Pure (numpy, no Django). ``manage.py benchmark_routing`` runs the machine path against it twice:
simulated (:func:`genderbias.machine.routing_forecast.simulate_path`, hundreds of redraws) and for
real over HTTP (the chat labeller against :mod:`tests.annotation.machine.openai_server` scripted with the
answers :func:`chat_answers` draws; the crowd as in-house annotators posting the HIT form, each
voting as its worker in :func:`platform_crowd` does).

- **Truth**: the study's crowd-annotated MS MARCO queries (``../shared/reference/
  queries_gender_annotated.csv``, 3,750), the first N; without the file, synthetic queries with the
  study's label shares (:func:`truth_queries` says which).
- **The machine**: per query, each of 16 sampled answers is right with probability U(0.93, 1) on an
  easy query (70%) and U(0.35, 0.9) on a hard one; a wrong answer names Non-gendered on a gendered
  query and a gender on a Non-gendered one. Label: the most frequent answer; confidence: its share
  (17 levels). About 0.91 right against the truth, its most confident 60% about 0.98.
- **The crowd**: three votes per query from twelve workers right 0.9 of the time (their errors
  leaning a third towards Non-gendered), two spammers answering at random and one lazy worker who
  always answers Non-gendered and does twice an honest worker's share (:func:`platform_crowd`).
  About 8% of three-vote majorities split; the three-vote majority is about 0.87 right.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from genderbias.labels import LABELS

#: The study's labelled queries, beside the checkout (``../shared/reference/``).
STUDY_FILE = Path(__file__).resolve().parents[2] / ".." / "shared" / "reference" / "queries_gender_annotated.csv"
#: The study's label counts (n, f, m, o of 3,750): the synthetic fallback's shares.
STUDY_COUNTS = (1765, 742, 1202, 41)
SAMPLES = 16


def truth_queries(size: int, seed: int = 0, path: Path = STUDY_FILE) -> tuple[list[tuple[str, str, str]], str]:
    """``size`` (qid, text, true label) and where they come from (``"study"`` or ``"synthetic"``)."""
    if path.exists():
        from annotation.services import read_labelled_file  # the one reader of the study's CSV (no header)

        rows = [(gold.qid, gold.text, gold.label) for gold in read_labelled_file(path)]
        if len(rows) >= size:
            return rows[:size], "study"
    rng = np.random.default_rng(seed)
    shares = np.array(STUDY_COUNTS) / sum(STUDY_COUNTS)
    labels = rng.choice(len(LABELS), size=size, p=shares)
    return [(f"s{i}", f"synthetic query {i}", LABELS[k]) for i, k in enumerate(labels)], "synthetic"


def chat_answers(truth: np.ndarray, seed: int, *, easy: float = 0.7, samples: int = SAMPLES) -> np.ndarray:
    """``[samples, N]`` label indices: the chat model's sampled answers (see the module docstring)."""
    rng = np.random.default_rng(seed)
    n = len(truth)
    p = np.where(rng.random(n) < easy, rng.uniform(0.93, 1.0, n), rng.uniform(0.35, 0.9, n))
    wrong = np.where(truth == 0, rng.integers(1, 4, n), 0)
    return np.where(rng.random((samples, n)) < p, truth, wrong)


def label_and_confidence(answers: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The most frequent answer and its share, per query (ties: the first label in LABELS order), as the
    chat labeller reads sampled answers."""
    counts = np.stack([(answers == k).sum(axis=0) for k in range(len(LABELS))])
    return counts.argmax(axis=0), counts.max(axis=0) / answers.shape[0]


def platform_crowd(class_shares: np.ndarray | None = None):
    """The benchmark's crowd (:func:`genderbias.crowd.simulation.workers.noisy_crowd`'s defaults)."""
    from genderbias.crowd.simulation.workers import noisy_crowd

    return noisy_crowd(tuple(LABELS), class_shares=class_shares)


def crowd_file_data() -> dict:
    """The same crowd as ``route_audit --crowd FILE`` reads it."""
    honest = {"accuracy": 0.9, "lean": "n", "lean_share": 1 / 3, "share": 1.0}
    workers = [honest | {"name": f"honest-{i}"} for i in range(12)]
    workers += [{"name": f"spammer-{i}", "spam": True, "share": 1.0} for i in range(2)]
    workers += [{"name": "lazy-0", "always": "n", "share": 2.0}]
    return {"workers": workers}


def vote(confusion: np.ndarray, true_label: int, rng: np.random.Generator) -> int:
    """One vote of a worker with ``confusion`` ([T, L]) on a query of ``true_label``."""
    return int(rng.choice(confusion.shape[1], p=confusion[true_label]))
