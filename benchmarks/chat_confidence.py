"""How finely the chat labeller's confidence ranks, and what it costs: the labeller's own
sampling and confidence code (:class:`~annotation.machine.prelabellers.openai_chat.ChatPreLabeller`)
against a simulated model, no network.

Run as ``python -m benchmarks.chat_confidence [--queries N] [--redraws R] [--seed S]``; prints one line per
configuration: distinct confidence levels, answers and calls per query, and the kept share of the oracle's at
targets A (:func:`genderbias.machine.routing_audit.oracle_threshold`; docs/prelabelling.md holds the figures).

The simulated model: each query's answer distribution π over the four labels has its top
probability drawn from a mixture (55% Beta(40, 1), sure; 30% Beta(8, 2); 15% uniform on
0.3–0.8), 0.8 of the rest on a second label and 0.1 on each other; the machine is right on
a query with probability π(its label) (a calibrated model). Answers are drawn from π; with
log-probabilities each answer lists π itself (the best case for them: a real model's
log-probabilities rank only as well as they are ordered, however finely).
"""

from __future__ import annotations

import argparse
import json
import math
import time
from collections.abc import Sequence

import numpy as np

from annotation.machine.prelabellers.chat_answers import DEFAULT_PROMPT, Sampled
from annotation.machine.prelabellers.openai_chat import ChatPreLabeller, MemoryCache
from genderbias.labels import LABELS
from genderbias.machine.routing_audit import oracle_threshold

TARGETS = (0.85, 0.9, 0.95)


def population(n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` answer distributions over LABELS (see the module docstring)."""
    kind = rng.random(n)
    top = np.where(kind < 0.55, rng.beta(40, 1, n), np.where(kind < 0.85, rng.beta(8, 2, n), rng.uniform(0.3, 0.8, n)))
    pi = np.stack([top, 0.8 * (1 - top), 0.1 * (1 - top), 0.1 * (1 - top)], axis=1)
    order = np.argsort(rng.random((n, len(LABELS))), axis=1)
    return np.take_along_axis(pi, order, axis=1)


class SimulatedClient:
    """What :class:`ChatPreLabeller` needs of a client, answering from ``pi`` (query ``"q<i>"`` -> row i).

    Draws are reproducible whatever the order of the calls: answer j of query i comes from
    its own seed (seed, i, j)."""

    def __init__(self, pi: np.ndarray, seed: int, *, logprobs: bool) -> None:
        self.pi, self.seed, self.logprobs = pi, seed, logprobs
        self.model, self.prompt = "simulated", DEFAULT_PROMPT
        self.prompt_version = DEFAULT_PROMPT.version  # free-text answers, as ChatClient's without a format
        self.drawn: dict[int, int] = {}

    def sample(self, query: str, k: int, temperature: float, *, deadline: float | None = None) -> Sampled:
        i = int(query[1:])
        answers = []
        for _ in range(k):
            j = self.drawn.get(i, 0)
            self.drawn[i] = j + 1
            code = LABELS[int(np.random.default_rng([self.seed, i, j]).choice(len(LABELS), p=self.pi[i]))]
            if self.logprobs:
                top = [[c, math.log(p)] for c, p in zip(LABELS, self.pi[i], strict=True) if p > 0]
                answers.append({"content": code, "top": top})
            else:
                answers.append(code)
        return Sampled(answers, requests=1)


class DisagreeingFirst(ChatPreLabeller):
    """The alternative second draw, for comparison: more answers only for queries whose first answers disagree."""

    def second_draw(self, texts: Sequence[str], known: dict[str, Sampled]) -> dict[str, int]:
        wanted = super().second_draw(texts, known)
        return {t: n for t, n in wanted.items() if len(set(known[t].answers)) > 1}


#: name -> (labeller class, log-probabilities, samples, max_samples, budget)
CONFIGURATIONS = {
    "votes, 5 (the former default)": (ChatPreLabeller, False, 5, 5, None),
    "votes, 16": (ChatPreLabeller, False, 16, 16, None),
    "votes, 3 then up to 16 (default)": (ChatPreLabeller, False, 3, 16, 16),
    "votes, 3 then up to 16, budget 12": (ChatPreLabeller, False, 3, 16, 12),
    "votes, 3 then up to 16, budget 8": (ChatPreLabeller, False, 3, 16, 8),
    "votes, 3 then 16 if split": (DisagreeingFirst, False, 3, 16, 16),
    "log-probabilities, 3": (ChatPreLabeller, True, 3, 16, 16),
}


def measure(pi: np.ndarray, seed: int, name: str) -> dict:
    cls, logprobs, samples, max_samples, budget = CONFIGURATIONS[name]
    client = SimulatedClient(pi, seed, logprobs=logprobs)
    labeller = cls(client, samples=samples, max_samples=max_samples, budget=budget, concurrency=1, cache=MemoryCache())
    queries = [(str(i), f"q{i}") for i in range(len(pi))]
    predictions = labeller.label(queries)
    confidence = np.array([p.confidence for p in predictions])
    label = np.array([LABELS.index(p.label) for p in predictions])
    right = pi[np.arange(len(pi)), label]
    row = {
        "levels": len(set(confidence.tolist())),
        "answers_per_query": labeller.usage.answers / len(pi),
        "calls_per_query": labeller.usage.requests / len(pi),
    }
    for target in TARGETS:
        _, oracle = oracle_threshold(pi.max(axis=1), pi.max(axis=1), target)
        _, kept = oracle_threshold(confidence, right, target)
        row[f"kept_{target}"] = kept / oracle if oracle else float("nan")
    return row


def main(argv: Sequence[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=2000)
    parser.add_argument("--redraws", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true")
    options = parser.parse_args(argv)
    started = time.monotonic()
    rows = []
    runs = {name: [] for name in CONFIGURATIONS}
    for redraw in range(options.redraws):
        pi = population(options.queries, np.random.default_rng([options.seed, redraw]))
        for name in CONFIGURATIONS:
            runs[name].append(measure(pi, options.seed + redraw, name))
    for name, results in runs.items():
        row = {"configuration": name}
        for key in results[0]:
            values = np.array([r[key] for r in results], dtype=float)
            row[key] = round(float(values.mean()), 3)
            if key.startswith("kept_"):
                row[key + "_se"] = (
                    round(float(values.std(ddof=1) / math.sqrt(len(values))), 3) if len(values) > 1 else None
                )
        rows.append(row)
    if options.json:
        print(json.dumps(rows, indent=1))
    else:
        print(f"{options.queries} queries, {options.redraws} redraws ({time.monotonic() - started:.0f} s)")
        heads = ["levels", "answers/q", "calls/q"] + [f"kept@{t}" for t in TARGETS]
        print(f"{'configuration':36}" + "".join(f"{h:>16}" for h in heads))
        for row in rows:
            cells = [f"{row['levels']:.0f}", f"{row['answers_per_query']:.2f}", f"{row['calls_per_query']:.2f}"]
            cells += [f"{row[f'kept_{t}']:.3f} ± {row[f'kept_{t}_se']:.3f}" for t in TARGETS]
            print(f"{row['configuration']:36}" + "".join(f"{c:>16}" for c in cells))
    return rows


if __name__ == "__main__":
    main()
