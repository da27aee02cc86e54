"""``publish_batch`` killed with ``kill -9`` midway, then run again: one remote object per group.

Run once per provider in ``PROVIDER_SERVERS``, each against its own compatible test
server. MTurk: the kill lands while HITs are being created, so some are made and
recorded, one is made but not recorded, the rest not made; the second run must finish
the batch without making any HIT twice (annotation.crowd.services.publishing). Prolific: the
kill lands while the batch's study is being created, so the study is made but its id
never recorded; the second run must find it by its internal name instead of making a
second one (platforms.prolific.services).

Publishing holds a per-batch lease (core.services.leases): the second run takes it over because
the killed holder's process is gone on this host.
"""

from __future__ import annotations

import pytest

from annotation.models import Batch
from tests.faults.conftest import assert_one_hit_per_group
from tests.faults.servers import manage, wait_until

pytestmark = [pytest.mark.faults, pytest.mark.django_db(transaction=True)]

HITS = 8


def _recorded(server, batch: Batch) -> int:
    batch.refresh_from_db()
    return sum(1 for remote in server.recorded([batch]).values() if remote)


def test_a_publish_killed_midway_and_run_again_makes_one_per_group(
    any_provider_server, make_batches, process_env, tmp_path
):
    """Pass: the kill left the batch part-published, with one remote object made but not
    recorded; after the second run every local group has exactly one remote object on
    the provider's server, made for it, and the batch is published."""
    server = any_provider_server
    server.slow(0.3)
    [batch] = make_batches(server.provider, n=1, hits=HITS, options=server.batch_options)
    env = {**process_env, **server.env}

    first = manage(["publish_batch", batch.name], env, tmp_path / "publish-1.log").start()
    try:
        wait_until(lambda: server.kill_point(batch) or not first.alive(), 60, "a create request in flight midway")
        assert first.alive(), first.output()
        first.kill9()
    finally:
        first.stop()
    recorded = _recorded(server, batch)
    assert recorded < len(server.recorded([batch])), "the kill did not land midway"
    batch.refresh_from_db()
    assert batch.status != Batch.Status.PUBLISHED
    # The request in flight at the kill is still carried out by the server: made, never recorded.
    wait_until(lambda: len(server.made()) == recorded + 1, 10, "the object in flight to be made")

    second = manage(["publish_batch", batch.name], env, tmp_path / "publish-2.log").start()
    try:
        wait_until(lambda: not second.alive(), 60, "the second publish to finish")
    finally:
        second.stop()
    assert second.popen.returncode == 0, second.output()

    batch.refresh_from_db()
    assert batch.status == Batch.Status.PUBLISHED
    assert not batch.hits.filter(provider_id=None).exists()
    assert_one_hit_per_group(server, [batch])
