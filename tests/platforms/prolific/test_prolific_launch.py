# ruff: noqa: F811  (the fixtures of the other Prolific tests, imported by name)
"""A study's launch with a busy Prolific (issue 41), over real HTTP, the site as deployed.

gunicorn (the shipped configuration, 2 workers x 4 threads, the checks on their own threads)
and the Prolific-compatible server; participants arrive for a study's places, each on its own
thread with its own cookies. Prolific gives a place to whoever comes
while one is free; a participant opens the study link, loads the page again whenever it asks
(its refresh, or a ``Retry-After``), answers the HIT and submits; one kept waiting a minute
would return the study. Forged arrivals mix in: made-up sessions, real sessions under
another participant id, real links opened in a second browser. Prolific throttles 10% of
its answers (429, Retry-After 1 s), failing 3% (502) and losing 1% (done, answer dropped).

What is asserted is what holds on any machine: every place taken by a real participant in the
session Prolific gave them, no error, no one giving up, no forged arrival let in. How fast the
launch settles, how long a participant waits and the pace of calls to Prolific are the
benchmark's (``manage.py benchmark_load --burst 300 --places 120 --over 20 --forged 30 --faults
0.1,0.03,0.01``, docs/benchmarks.md: settled 20.4 s with faults, 15.0 s without, longest wait
14.1 s), not a test's; the shared pace is tested by its slots (tests/core/services/test_ratelimit.py).
Here a smaller launch, with faults only: 100 participants over 5 s for 42 places, 10 forged.
"""

from __future__ import annotations

import sqlite3

import pytest
from django.db import connection

from tests.platforms.prolific.fake_server import TOKEN, FakeProlific, FaultShares, serve
from tests.platforms.prolific.launch import places_past_tasks, publish_study, run_launch
from tests.platforms.prolific.test_prolific import server  # noqa: F401
from tests.platforms.prolific.test_prolific_arrivals_hostile import site  # noqa: F401

PARTICIPANTS, PLACES, OVER, FORGED = 100, 42, 5.0, 10  # places: HIT groups of three
BUSY = FaultShares(throttled=0.10, failed=0.03, lost=0.01, retry_after=1, seed=41)


@pytest.fixture
def launch_prolific(site, settings):
    """The Prolific-compatible server of the launch, with its lock (the participants take places under it)."""
    fake = FakeProlific()
    url, http = serve(fake)
    settings.PROLIFIC_API_URL = f"{url}/api/v1/"
    settings.PROLIFIC_API_TOKEN = TOKEN
    settings.PROLIFIC_PROJECT_ID = "launch-project"
    settings.PROLIFIC_WORKSPACE_ID = ""
    settings.PROLIFIC_COMPLETION_URL = f"{url}/submissions/complete?cc="
    settings.SITE_URL = f"http://127.0.0.1:{site['port']}"
    site["env"].update(
        {
            "PROLIFIC_API_URL": settings.PROLIFIC_API_URL,
            "PROLIFIC_COMPLETION_URL": settings.PROLIFIC_COMPLETION_URL,
            "SITE_URL": settings.SITE_URL,
            # The shipped arrival settings, but every participant comes from this machine's address.
            "PROLIFIC_ARRIVAL_TIMEOUT_SECONDS": "2",
            "PROLIFIC_ARRIVAL_DEADLINE_SECONDS": "15",
            "PROLIFIC_ARRIVAL_REFRESH_SECONDS": "2",
            "PROLIFIC_ARRIVALS_PER_CLIENT_PER_MINUTE": "10000",
        }
    )
    yield fake, http
    http.shutdown()


def _site_rows(site, sql: str) -> list[tuple]:
    """Rows of the site's own database (gunicorn's copy of the test database on SQLite)."""
    if connection.vendor == "sqlite":
        with sqlite3.connect(site["database"]) as site_db:
            return site_db.execute(sql).fetchall()
    with connection.cursor() as cursor:
        cursor.execute(sql)
        return cursor.fetchall()


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_launch_with_a_busy_prolific_fills_every_place_and_lets_no_forgery_in(site, launch_prolific):
    fake, http = launch_prolific
    batch, _ = publish_study("launch-busy", PLACES, 2)
    assert fake.studies[batch.hit_type_id]["total_available_places"] == PLACES
    base = f"http://127.0.0.1:{site['start'](workers=2, threads=4)}"
    fake.shares = BUSY
    run = run_launch(
        base, fake, http.lock, batch.hit_type_id, participants=PARTICIPANTS, over=OVER, forged=FORGED, cap=150
    )
    tally = run.tally
    print(
        f"\nlaunch of {PARTICIPANTS} for {PLACES} places over {OVER:g} s, {FORGED} forged, {run.dealt} of "
        f"{run.calls} calls: settled in {run.settle_seconds} s, longest wait {run.longest_wait:.1f} s (not asserted); "
        f"shown no task: {run.no_task_share:.1%} ({tally.no_task} of {tally.arrived} arrivals)"
    )
    assert sum(tally.errors.values()) == 0, tally.samples
    assert tally.gave_up == 0 and tally.accepted == PLACES
    assert run.settle_seconds is not None, "never settled"
    assert tally.forged_in == [], f"forged arrivals got a HIT: {tally.forged_in}"
    assert sum(tally.forged.values()) == FORGED and all(k.endswith(": 403") for k in tally.forged), tally.forged
    assert run.dealt.get("throttle", 0) > 0 and run.dealt.get("error", 0) > 0  # the faults were dealt
    # Nobody waits on an empty study (issue 67): each arrival got a HIT or, at once, the "no task now" answer
    # (a page that does not wait); and at no moment did Prolific offer newcomers more places than tasks left.
    assert tally.arrived == len(tally.waits) + tally.no_task and tally.no_task_waited == 0
    assert places_past_tasks(fake, batch.hit_type_id, PLACES, tally.got_task) == []

    # Every place's work is a real participant's, in the session Prolific gave them.
    owner = {session: (s["participant_id"], s["study_id"]) for session, s in fake.submissions.items()}
    kept = _site_rows(
        site,
        "SELECT s.session_id, s.participant_id, b.hit_type_id FROM annotation_prolificsession s"
        " JOIN annotation_batch b ON b.id = s.batch_id",
    )
    assert kept and all(owner.get(session) == (pid, study) for session, pid, study in kept)
    work = _site_rows(
        site,
        "SELECT a.provider_assignment_id, i.external_id, a.status FROM annotation_assignment a"
        " JOIN annotation_worker w ON w.id = a.worker_id JOIN annotation_workeridentity i ON i.id = w.identity_id",
    )
    assert all(owner.get(session, ("",))[0] == pid for session, pid, _status in work)
    assert sum(1 for *_, status in work if status == "submitted") == PLACES
