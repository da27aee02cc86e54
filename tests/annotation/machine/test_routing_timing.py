"""Same answers, same route: a routing's outcome depends on the answers alone, never on how fast the
crowd answered. A calibration sample escalated by the posterior rule (Dawid–Skene fitted on the sample's
answers) is answered twice with the very same answers: once by a fast crowd (every place answered between
two syncs) and once by a slow one (a sync after every single answer, as a slow crowd server's
submissions trickle in). The routing of both is the same."""

from __future__ import annotations

import hashlib

import pytest

from annotation import services
from annotation.crowd.services.sync import sync_batch
from annotation.machine.services.calibration import create_calibration_sample
from annotation.machine.services.prelabels import prelabel_batch
from annotation.machine.services.routing import plan_routing
from annotation.models import Escalation, Judgment
from genderbias.labels import LABELS
from platforms.inhouse.services.handout import create_annotator, next_assignment, submit_local_assignment
from platforms.inhouse.services.simulation import oracle_label
from tests.annotation.conftest import make_batch
from tests.annotation.machine.test_routing_service import SureMachine, routed_batch  # noqa: F401  (the fixture)

WORKERS = [f"timing-{i}" for i in range(9)]


def _answer(username: str, qid: str, text: str) -> str:
    """The worker's answer to the query: theirs whatever the time (right 0.7 of the time, by a hash)."""
    digest = int(hashlib.sha256(f"{username}/{qid}".encode()).hexdigest(), 16)
    truth = oracle_label(text)
    if digest % 10 < 7:
        return truth
    return LABELS[(LABELS.index(truth) + 1 + digest // 10 % 3) % len(LABELS)]


def _crowd(sample, *, slow: bool) -> None:
    """The workers take places in passes (each one HIT per pass, the same order every time); a fast crowd's
    answers are synced when no place is left, a slow crowd's after every answer. After a sync that added
    places the next pass starts from the first worker (in both)."""
    users = [create_annotator(name, reuse=True) for name in WORKERS]
    while True:
        took = escalated = False
        for user in users:
            assignment = next_assignment(user, sample)
            if assignment is None:
                continue
            answers = {
                hq.field_name: _answer(user.username, hq.batch_query.qid, hq.batch_query.text)
                for hq in assignment.hit.hit_queries.select_related("batch_query")
            }
            submit_local_assignment(assignment, answers)
            took = True
            if slow and sync_batch(sample).escalated:
                escalated = True
                break
        if escalated:
            continue
        if not took and not sync_batch(sample).escalated:
            return


def _route(batch, *, slow: bool):
    sample = create_calibration_sample(batch, 60, seed=0, escalation_cap=5, until="posterior:0.9")
    services.publish_batch(sample)
    _crowd(sample, slow=slow)
    plan = plan_routing(batch, 0.9)
    answers = sorted(
        Judgment.objects.filter(assignment__hit__batch=sample).values_list(
            "batch_query__qid", "assignment__worker__identity__external_id", "label"
        )
    )
    escalated = sorted(Escalation.objects.filter(batch=sample).values_list("hit__position", "assignments_before"))
    return plan, answers, escalated


@pytest.mark.slow
def test_a_slow_crowd_routes_as_a_fast_one(routed_batch):  # noqa: F811
    fast, fast_answers, fast_escalations = _route(routed_batch, slow=False)
    other = make_batch(routed_batch.query_set, name="rb-slow", assignments_per_query=3, queries_per_hit=10)
    prelabel_batch(other, SureMachine())
    slow, slow_answers, slow_escalations = _route(other, slow=True)
    assert fast_escalations, "the sample was escalated (the rule had something to decide)"
    assert slow_escalations == fast_escalations
    assert slow_answers == fast_answers
    assert (slow.threshold, slow.certified, sorted(slow.accepted), slow.undecided) == (
        fast.threshold,
        fast.certified,
        sorted(fast.accepted),
        fast.undecided,
    )
