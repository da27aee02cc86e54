"""Same answers, same route: a routing's outcome depends on the answers alone, never on how fast the
crowd answered. A calibration sample escalated by the posterior rule (Dawid–Skene fitted on the sample's
answers) is answered twice with the very same answers: once by a fast crowd (every place answered between
two syncs) and once by a slow one (a sync after every single answer, as a slow crowd server's
submissions trickle in). The routing of both is the same."""

from __future__ import annotations

import hashlib
from decimal import Decimal

import pytest

from annotation import services
from annotation.crowd.services.sync import sync_batch
from annotation.machine.services.calibration import create_calibration_sample
from annotation.machine.services.prelabels import prelabel_batch
from annotation.machine.services.routing import plan_routing
from annotation.models import Escalation, Judgment
from genderbias.labels import LABELS
from platforms.inhouse.services.annotators import create_annotator
from platforms.inhouse.services.handout import next_assignment
from platforms.inhouse.services.hit_page import submit_local_assignment
from platforms.inhouse.services.simulation import oracle_label
from tests.annotation.conftest import make_batch
from tests.annotation.machine.test_routing_service import SureMachine, _kept_routed_batch, routed_batch  # noqa: F401  (the fixture)

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


# -- the same on Prolific, against its fake server answering fast or slowly (issue 69) -----------------------
# The participant who takes the first round's last place fails the check question. A fast server has their
# submission awaiting review at the next sync, which rejects the work and frees the place before the round is
# read; a slow one is read while it is still active, and the round closed without the answer that replaces it
# until a failed check stopped filling a place (``escalation.FILLS_PLACE``).
@pytest.fixture
def prolific_server(settings):
    from tests.platforms.prolific.fake_server import TOKEN, FakeProlific, serve

    fake = FakeProlific()
    url, http = serve(fake)
    settings.PROLIFIC_API_URL = f"{url}/api/v1/"
    settings.PROLIFIC_API_TOKEN = TOKEN
    settings.PROLIFIC_PROJECT_ID = "project-1"
    settings.PROLIFIC_WORKSPACE_ID = "workspace-1"
    settings.PROLIFIC_COMPLETION_URL = f"{url}/submissions/complete?cc="
    settings.SITE_URL = "http://testserver"
    settings.PROLIFIC_ARRIVALS_PER_CLIENT_PER_MINUTE = 10_000  # every participant here comes from one address
    yield fake
    http.shutdown()


def _place_free(sample, fake) -> bool:
    """Whether a participant Prolific sends now gets a HIT: a place on Prolific and one of the sample's."""
    from django.db.models import Count, F, Q

    from annotation.models import FREES_PLACE

    study = fake.studies[sample.hit_type_id]
    if study["status"] != "ACTIVE" or fake._taken(sample.hit_type_id) >= study["total_available_places"]:
        return False
    held = Count("assignments", filter=~Q(assignments__status__in=FREES_PLACE))
    return sample.hits.annotate(held=held).filter(held__lt=F("max_assignments")).exists()


def _gold_answer(label: str, *, fails: bool) -> str:
    return LABELS[(LABELS.index(label) + 1) % len(LABELS)] if fails else label


def _prolific_crowd(sample, fake, provider, client_class, *, slow: bool) -> None:
    """Participants arrive one after another (the n-th is ``P<n>`` in both runs) while a place is free and
    answer as :func:`_answer` says. A fast crowd's server: each goes back to Prolific at once (the submission
    awaits review) and the sample is synced when no place is left. A slow one: every API answer late, a sync
    after every answer, and each participant's return to Prolific landing only after the next sync (the
    sync sees the submission still active, then awaiting review)."""
    from tests.platforms.prolific.fake_server import hexid
    from tests.platforms.prolific.test_prolific import Participant

    arrived, returning = 0, []
    # The participant who takes the first round's last place fails the check question: their work is
    # rejected once their submission awaits review, and their place goes to the next participant.
    fails_gold = sample.hits.count() * sample.assignments_per_query
    while True:
        if _place_free(sample, fake):
            arrived += 1
            person = Participant(fake, sample.hit_type_id, hexid(f"P{arrived}"), client_class)
            assert person.arrival.status_code == 302, person.arrival.content[:300]
            assignment = person.assignment
            answers = {
                hq.field_name: _answer(person.pid, hq.batch_query.qid, hq.batch_query.text)
                for hq in assignment.hit.hit_queries.select_related("batch_query")
                if not hq.batch_query.is_gold
            } | {
                hq.field_name: _gold_answer(hq.batch_query.gold_label, fails=arrived == fails_gold)
                for hq in assignment.hit.hit_queries.select_related("batch_query")
                if hq.batch_query.is_gold
            }
            assert person.browser.post(person.arrival["Location"], answers).status_code == 302
            if not slow:
                person.complete()
                continue
            sync_batch(sample, provider)
            for earlier in returning:
                earlier.complete()
            returning = [person]
            continue
        for earlier in returning:
            earlier.complete()
        returning = []
        if not sync_batch(sample, provider).escalated and not _place_free(sample, fake):
            return


def _prolific_route(batch, fake, client_class, *, slow: bool):
    from platforms.prolific.client import Prolific
    from platforms.prolific.provider import ProlificProvider
    from tests.platforms.prolific.fake_server import TOKEN, FaultShares

    fake.shares = FaultShares(latency=0.02 if slow else 0.0)
    provider = ProlificProvider(Prolific(f"{fake.base}/api/v1/", TOKEN, sleep=lambda s: None))
    sample = create_calibration_sample(batch, 60, seed=0, escalation_cap=5, until="posterior:0.9")
    services.publish_batch(sample, provider)
    sample.refresh_from_db()
    _prolific_crowd(sample, fake, provider, client_class, slow=slow)
    plan = plan_routing(batch, 0.9)
    answers = sorted(
        Judgment.objects.filter(assignment__hit__batch=sample).values_list(
            "batch_query__qid", "assignment__worker__identity__external_id", "label"
        )
    )
    escalated = sorted(Escalation.objects.filter(batch=sample).values_list("hit__position", "assignments_before"))
    return plan, answers, escalated


def _prolific_batch(name: str):
    from annotation.crowd.services.batch_settings import GoldQuery
    from pooling.models import QuerySet
    from pooling.services import create_query_set
    from tests.annotation.machine.test_routing_service import _texts

    query_set = QuerySet.objects.filter(name="rq").first() or create_query_set(
        "rq", _texts(), origin=QuerySet.Origin.IMPORTED
    )
    settings = services.BatchSettings(
        provider="prolific",
        assignments_per_query=3,
        queries_per_hit=10,
        gold_per_hit=1,
        reward=Decimal("0.90"),
        provider_options={"estimated_minutes": 4},
    )
    gold = [GoldQuery("g1", "who was the first king of france", "m")]
    batch = services.create_batch(name, settings, query_set=query_set, gold=gold)
    prelabel_batch(batch, SureMachine())
    return batch


@pytest.mark.slow
@pytest.mark.django_db
def test_a_slow_prolific_server_routes_as_a_fast_one(prolific_server):
    from django.test import Client as client_class  # a participant's browser

    fast, fast_answers, fast_escalations = _prolific_route(
        _prolific_batch("pr-fast"), prolific_server, client_class, slow=False
    )
    slow, slow_answers, slow_escalations = _prolific_route(
        _prolific_batch("pr-slow"), prolific_server, client_class, slow=True
    )
    assert fast_escalations, "the sample was escalated (the rule had something to decide)"
    assert slow_escalations == fast_escalations
    assert slow_answers == fast_answers
    assert (slow.threshold, slow.certified, sorted(slow.accepted), slow.undecided) == (
        fast.threshold,
        fast.certified,
        sorted(fast.accepted),
        fast.undecided,
    )
