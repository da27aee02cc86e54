"""The calibration report's alt-test and crowd-reliability figures, read from a real sample's records."""

from __future__ import annotations

from collections import Counter

import pytest

from annotation import services
from annotation.models import Batch
from annotation.services.calibration import calibration_report, create_calibration_sample, identity_for, machine_labels
from annotation.services.results import BatchAnswers
from annotation.services.simulation import simulate_local_annotations
from pooling.models import QuerySet
from pooling.services import create_query_set

from .conftest import make_batch
from .test_calibration_flow import NoisyMachine, _texts


@pytest.fixture
def answered(db) -> tuple[Batch, Batch]:
    """A machine-labelled batch whose 60-query sample three noisy annotators answered (many splits)."""
    query_set = create_query_set("mq", _texts(), origin=QuerySet.Origin.IMPORTED)
    batch = make_batch(query_set, name="mach", assignments_per_query=3, queries_per_hit=5)
    services.prelabel_batch(batch, NoisyMachine())
    sample_batch = create_calibration_sample(batch, 60, seed=1)
    services.publish_batch(sample_batch)
    simulate_local_annotations(sample_batch, annotators=3, accuracy=0.55, seed=2)
    return batch, sample_batch


def test_the_alt_test_uses_every_sampled_query_with_two_votes_disputed_ones_too(answered):
    batch, sample_batch = answered
    answers = BatchAnswers(sample_batch)
    votes = answers.votes
    disputed = [q for q in votes.index if votes.loc[q, "disputed"]]
    assert disputed, "the simulated crowd should split on some queries"
    machine = machine_labels(batch, identity_for(batch))
    frame = answers.frame
    per_worker = Counter(
        str(worker)
        for item, worker in zip(frame["item"], frame["worker"], strict=True)
        if (frame["item"] == item).sum() >= 2 and item in machine
    )
    report = calibration_report(batch, bootstrap=0)
    alt = report["alt_test"]
    # Every one of the 60 sampled queries had three votes: all 60 are in the test, not only the n labelled.
    assert alt["items"] == 60 > report["n"] == 60 - len(disputed)
    assert {row["annotator"]: row["items"] for row in alt["annotators"]} == dict(per_worker)
    assert alt["sample_size"] == 60
