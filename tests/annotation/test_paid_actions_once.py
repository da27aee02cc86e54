"""Paid actions exactly once (issue 44.3): every action that creates paid work refuses its duplicate
while the first is live, decided under the batch's row lock (:mod:`core.services.once`).

The concurrent tests need PostgreSQL (SQLite's shared-cache test database ignores the busy
timeout). The suite runs jobs inline at the commit, so a job that ended may rightly start again:
the "while live" tests keep the jobs queued (``core.tasks.send_job`` sends nothing), as on a
worker that has not picked them up yet.
"""

from __future__ import annotations

import threading

import pytest
from django.db import connection

from annotation import services
from annotation.crowd.services.background import start_publish, start_sync
from annotation.machine.services.calibration import create_calibration_sample
from annotation.machine.services.prelabels import prelabel_batch
from annotation.models import Batch
from annotation.quality.services.escalation import start_escalate
from core.errors import StateError
from core.models import Job
from pooling.models import QuerySet
from pooling.services import create_query_set
from tests.annotation.conftest import make_batch
from tests.annotation.machine.test_routing_service import SureMachine, _texts


def _machine_batch() -> Batch:
    query_set = create_query_set("rq", _texts(), origin=QuerySet.Origin.IMPORTED)
    batch = make_batch(query_set, name="rb", assignments_per_query=3, queries_per_hit=10)
    prelabel_batch(batch, SureMachine())
    return batch


def _extensions(batch: Batch) -> list[Batch]:
    return [
        b for b in batch.derived.filter(purpose=Batch.Purpose.CALIBRATION).order_by("pk") if b.derivation["look"] > 1
    ]


def _extend(client, batch: Batch, **data):
    body = {"sample": 30, "extend": True, "publish": False} | data
    return client.post(
        f"/api/annotation/batches/{batch.name}/calibration-sample/", body, content_type="application/json"
    )


def _at_once(action, times: int = 6) -> list:
    """``action()`` in ``times`` threads released together; each outcome, a refusal as its StateError."""
    start, outcomes = threading.Barrier(times), []

    def run():
        try:
            start.wait(10)
            outcomes.append(action())
        except StateError as exc:
            outcomes.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=run) for _ in range(times)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return outcomes


def test_an_identical_extension_is_refused_while_the_first_is_live(db, researcher, client):
    batch = _machine_batch()
    create_calibration_sample(batch, 40, seed=0, extendable=True)
    client.force_login(researcher)
    first = _extend(client, batch)
    assert first.status_code == 201
    again = _extend(client, batch)
    assert again.status_code == 409
    assert f"being extended already (batch {first.json()['batch']}, draft)" in again.json()["detail"]
    assert len(_extensions(batch)) == 1
    Batch.objects.filter(name=first.json()["batch"]).update(status=Batch.Status.PUBLISHED)
    assert _extend(client, batch).status_code == 409  # published, its answers not in yet: still live
    Batch.objects.filter(name=first.json()["batch"]).update(status=Batch.Status.COMPLETED)
    assert _extend(client, batch).status_code == 201  # answered: the next look may ask for more
    assert len(_extensions(batch)) == 2


def test_a_second_escalation_or_sync_is_refused_while_the_first_job_is_queued(local_batch, monkeypatch):
    monkeypatch.setattr("core.tasks.send_job", lambda job, task=None: None)
    job = start_escalate(local_batch, max_assignments=3)
    with pytest.raises(StateError, match=rf"being escalated already \(job {job.pk}, pending\)"):
        start_escalate(local_batch, max_assignments=4)  # the batch names the paid work, not the cap
    sync = start_sync(local_batch)
    with pytest.raises(StateError, match=rf"being synced already \(job {sync.pk}, pending\)"):
        start_sync(local_batch, approve_all=True)
    Job.objects.filter(pk=job.pk).update(status=Job.Status.DONE)
    assert start_escalate(local_batch, max_assignments=3).pk != job.pk  # ended: it may run again


def test_a_second_publish_is_refused_while_the_first_job_is_queued(query_set, monkeypatch):
    monkeypatch.setattr("core.tasks.send_job", lambda job, task=None: None)
    batch = make_batch(query_set)
    job = start_publish(batch)
    with pytest.raises(StateError, match=rf"being published already \(job {job.pk}, pending\)"):
        start_publish(batch)
    other = make_batch(query_set, name="b2")
    assert start_publish(other).arguments == [other.pk]  # another batch is independent


@pytest.mark.django_db(transaction=True)
@pytest.mark.postgresql
def test_six_simultaneous_extensions_make_one(researcher, monkeypatch):
    """The finding: six identical requests to extend a sample made and published six extensions."""
    from django.test import Client

    monkeypatch.setattr("core.tasks.send_job", lambda job, task=None: None)
    batch = _machine_batch()
    create_calibration_sample(batch, 40, seed=0, extendable=True)

    def post():
        client = Client()
        client.force_login(researcher)
        return _extend(client, batch, publish=True).status_code

    outcomes = _at_once(post)
    assert sorted(outcomes) == [201, 409, 409, 409, 409, 409]
    extensions = _extensions(batch)
    assert len(extensions) == 1
    assert Job.objects.filter(kind="annotation.publish").count() == 1
    assert Job.objects.get(kind="annotation.publish").arguments == [extensions[0].pk]


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("action", ["publish", "escalate", "sync"])
@pytest.mark.postgresql
def test_six_simultaneous_starts_make_one_job(action, monkeypatch):
    monkeypatch.setattr("core.tasks.send_job", lambda job, task=None: None)
    query_set = create_query_set(
        "gq", [(f"q{i}", f"who is the queen number {i}") for i in range(6)], origin=QuerySet.Origin.IMPORTED
    )
    batch = make_batch(query_set)
    if action != "publish":
        services.publish_batch(batch)
    start = {
        "publish": lambda: start_publish(Batch.objects.get(pk=batch.pk)),
        "escalate": lambda: start_escalate(Batch.objects.get(pk=batch.pk), max_assignments=3),
        "sync": lambda: start_sync(Batch.objects.get(pk=batch.pk)),
    }[action]
    outcomes = _at_once(start)
    assert sum(isinstance(o, Job) for o in outcomes) == 1
    assert all("already" in str(o) for o in outcomes if not isinstance(o, Job))
    assert Job.objects.filter(kind=f"annotation.{action}").count() == 1


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
@pytest.mark.postgresql
def test_six_simultaneous_routings_make_one_routed_batch(monkeypatch):
    from annotation.machine.services.routing import route_batch
    from annotation.models import Routing
    from tests.annotation.machine.test_routing_service import _answered_sample

    monkeypatch.setattr("core.tasks.send_job", lambda job, task=None: None)
    batch = _machine_batch()
    _answered_sample(batch)

    def route():
        from django.db import transaction

        with transaction.atomic():  # as the API: route, then start publishing the routed batch
            routing = route_batch(Batch.objects.get(pk=batch.pk), 0.9)
            return start_publish(routing.routed_batch)

    outcomes = _at_once(route)
    assert sum(isinstance(o, Job) for o in outcomes) == 1
    assert all("was routed already" in str(o) for o in outcomes if not isinstance(o, Job))
    assert Routing.objects.filter(batch=batch).count() == 1
    assert batch.derived.filter(purpose=Batch.Purpose.ROUTED).count() == 1
