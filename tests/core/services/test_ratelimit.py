"""The pace of outgoing calls every process shares (core.services.ratelimit.reserve_start, issue 41).

Each slot of ``1 / per_second`` seconds holds the start of one call, claimed with the cache's
atomic ``add``: here on the database cache the site uses by default, in one process with a
given clock, and across processes claiming at once.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from core.services.ratelimit import reserve_start, shared_cache

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(autouse=True)
def empty(db):
    shared_cache().clear()


def test_each_start_takes_the_next_slot_and_none_past_the_window():
    """4 a second: slots of 0.25 s. Three calls at once start 0, 0.25 and 0.5 s later; a fourth
    finds no start within 0.6 s and claims nothing, so at 100.3 the next start is still 100.75."""
    assert [reserve_start("p", 4, 0.6, now=100.0) for _ in range(3)] == [0.0, 0.25, 0.5]
    assert reserve_start("p", 4, 0.6, now=100.0) is None
    assert reserve_start("p", 4, 5, now=100.3) == pytest.approx(0.45)
    assert reserve_start("other", 4, 0.6, now=100.0) == 0.0  # another rate counts apart


def test_a_slot_in_the_past_is_never_claimed_and_a_free_one_now_is_taken_at_once():
    assert reserve_start("p", 10, 1, now=200.0) == 0.0
    assert reserve_start("p", 10, 1, now=260.0) == 0.0  # a minute later: nothing queued
    assert reserve_start("p", 10, 1, now=260.05) == pytest.approx(0.05)  # the slot of 260.0 is taken


def test_processes_at_a_rate_since_changed_still_find_the_next_start():
    """One process paces ``p`` at 1,000 calls a second, another (its setting since lowered) at 10: each
    claims a start within its window, at or after the starts the other claimed, never one refused for
    the other's count of slots (before: the hint, slot 100,002 at 1,000 a second, read at 10 a second
    was 10,000 s ahead, so every call at 10 a second was refused until the hint expired)."""
    fast = [reserve_start("p", 1000, 1, now=100.0) for _ in range(3)]
    assert fast == pytest.approx([0.0, 0.001, 0.002])
    slow = reserve_start("p", 10, 1, now=100.0)
    assert slow is not None and slow == pytest.approx(0.1)  # the first slot of 0.1 s at or after 100.003
    assert reserve_start("p", 1000, 1, now=100.0) == pytest.approx(0.2)  # the hint moves past the slow one's
    assert reserve_start("p", 10, 1, now=100.0) == pytest.approx(0.3)


CLAIMS = """
import json, sys, time
import django
django.setup()
from core.services.ratelimit import reserve_start
starts = []
for _ in range(int(sys.argv[1])):
    now = time.time()
    wait = reserve_start("across", 20, 30, now=now)
    starts.append(now + wait)
print(json.dumps(starts))
"""


@pytest.mark.slow
@pytest.mark.embedded
def test_processes_claiming_at_once_never_share_a_slot(tmp_path):
    """Three processes (as gunicorn's workers) claim 15 starts each of one 20-a-second rate at
    the same moment, on one database cache: 45 starts in 45 different slots of 0.05 s, so
    together they start at most 20 calls in any second."""
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{tmp_path / 'pace.sqlite3'}", "VAR_DIR": str(tmp_path)}
    subprocess.run([sys.executable, "manage.py", "createcachetable"], cwd=ROOT, env=env, check=True)
    workers = [
        subprocess.Popen([sys.executable, "-c", CLAIMS, "15"], cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True)
        for _ in range(3)
    ]
    starts = [start for worker in workers for start in json.loads(worker.communicate(timeout=120)[0])]
    assert all(worker.returncode == 0 for worker in workers)
    # A start is its slot's beginning, or the moment of the claim inside a slot that had begun.
    slots = sorted(math.floor(start / 0.05 + 1e-6) for start in starts)
    assert len(slots) == 45 and len(set(slots)) == 45, slots
