"""Simulated in-house annotators, for the demo: real local accounts going through the pages' services,
giving the word-list oracle's label with probability ``accuracy``, else one of the other three.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from annotation.models import Batch, Provider
from core.errors import ServiceError
from genderbias.labels import LABELS
from genderbias.text.tokenize import tokenize
from genderbias.text.wordlists import default_wordlist
from platforms.inhouse.services.annotators import create_annotator
from platforms.inhouse.services.handout import next_assignment
from platforms.inhouse.services.hit_page import submit_local_assignment


@dataclass
class SimulationResult:
    annotators: int
    assignments: int
    judgments: int


def oracle_label(text: str) -> str:
    """The word-list guess at a query's category (what the simulated annotators aim for)."""
    words = default_wordlist()
    tokens = set(tokenize(text.lower()))
    female, male = bool(tokens & words.female), bool(tokens & words.male)
    return "o" if female and male else "f" if female else "m" if male else "n"


def simulate_local_annotations(
    batch: Batch, *, annotators: int = 5, accuracy: float = 0.9, seed: int = 0, prefix: str = "simulated"
) -> SimulationResult:
    """Let ``annotators`` simulated accounts answer every HIT of a published local batch."""
    if batch.provider != Provider.LOCAL:
        raise ServiceError("only local batches can be simulated")
    if batch.status != Batch.Status.PUBLISHED:
        raise ServiceError(f"batch {batch.name!r} is {batch.status}; publish it first")
    if annotators < batch.assignments_per_query:
        raise ServiceError(f"{batch.assignments_per_query} assignments per query need at least as many annotators")
    if not 0 <= accuracy <= 1:
        raise ServiceError("accuracy must be between 0 and 1")
    rng = random.Random(seed)
    users = [create_annotator(f"{prefix}-{i}", reuse=True) for i in range(1, annotators + 1)]
    active = list(users)
    assignments = judgments = 0
    while active:
        for user in list(active):
            assignment = next_assignment(user, batch)
            if assignment is None:
                active.remove(user)
                continue
            answers = {}
            for hq in assignment.hit.hit_queries.select_related("batch_query"):
                bq = hq.batch_query
                truth = bq.gold_label if bq.is_gold else oracle_label(bq.text)
                wrong = [label for label in LABELS if label != truth]
                answers[hq.field_name] = truth if rng.random() < accuracy else rng.choice(wrong)
            submit_local_assignment(assignment, answers)
            assignments += 1
            judgments += len(answers)
    return SimulationResult(annotators, assignments, judgments)
