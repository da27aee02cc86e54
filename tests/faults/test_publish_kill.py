"""``publish_batch`` killed with ``kill -9`` midway, then run again: one HIT per group.

Run once per provider in ``PROVIDER_SERVERS`` (each against its own compatible test
server): the kill lands while the provider is creating HITs, so some are made and
recorded, one may be made but not recorded, the rest not made. The second run must
finish the batch without making any HIT twice (annotation.services.publishing).
"""

from __future__ import annotations

import pytest

from annotation.models import Batch

from .conftest import assert_one_hit_per_group
from .servers import manage, wait_until

pytestmark = [pytest.mark.faults, pytest.mark.django_db(transaction=True)]

HITS = 8


def test_a_publish_killed_midway_and_run_again_makes_one_hit_per_group(
    provider_server, make_batches, process_env, tmp_path
):
    """Pass: the kill left the batch part-published; after the second run every local HIT
    has exactly one HIT on the provider's server, made for it, and the batch is published."""
    provider_server.slow(0.3)
    [batch] = make_batches(provider_server.provider, n=1, hits=HITS)
    env = {**process_env, **provider_server.env}

    first = manage(["publish_batch", batch.name], env, tmp_path / "publish-1.log").start()
    try:
        wait_until(lambda: batch.hits.exclude(provider_id=None).count() >= 3, 60, "three HITs published")
        wait_until(lambda: provider_server.create_calls() > 3, 10, "the next HIT being created")
        first.kill9()
    finally:
        first.stop()
    recorded = batch.hits.exclude(provider_id=None).count()
    assert 3 <= recorded < HITS, "the kill did not land midway"
    # The request in flight at the kill is still carried out by the server: a HIT made, never recorded.
    wait_until(lambda: len(provider_server.hits()) == recorded + 1, 10, "the HIT in flight to be made")

    second = manage(["publish_batch", batch.name], env, tmp_path / "publish-2.log").start()
    try:
        wait_until(lambda: not second.alive(), 60, "the second publish to finish")
    finally:
        second.stop()
    assert second.popen.returncode == 0, second.output()

    batch.refresh_from_db()
    assert batch.status == Batch.Status.PUBLISHED
    assert not batch.hits.filter(provider_id=None).exists()
    assert_one_hit_per_group(provider_server, [batch])
