# ruff: noqa: F811  (the fixtures of the Prolific tests, imported by name)
"""Nobody admitted to an empty study (issue 67): a study's places follow the tasks the site can hand out.

Over real HTTP against the Prolific-compatible server, with the site's real pages (Django's test
client). Prolific lets a published study's places only be raised, and sends a participant to every
place open while the study is active; a place can free up on Prolific (a participant returns) before
its task frees up on the site (until the site reads the return). The participant who then finds no
task is told so at once and sent back with the study's return code (its ``REQUEST_RETURN`` action:
Prolific asks them to return the study), the study is paused, and started again once a task frees up.
"""

import pytest

from annotation.crowd.services.sync import sync_batch
from annotation.models import Assignment
from platforms.prolific import provider as prolific_rules
from platforms.prolific import services as prolific_services
from platforms.prolific.client import ProlificError
from platforms.prolific.models import ProlificSession
from tests.platforms.prolific.fake_server import hexid
from tests.platforms.prolific.test_prolific import (  # noqa: F401
    Participant,
    _publish,
    batch,
    client_class,
    provider,
    server,
    site_provider,
    sleeps,
)


def _open(server, study_id: str) -> int:
    """The places Prolific offers newcomers now: none while the study is not active."""
    study = server.studies[study_id]
    return study["total_available_places"] - server._taken(study_id) if study["status"] == "ACTIVE" else 0


def test_a_participant_with_no_task_is_told_at_once_returned_and_the_study_paused_until_a_task_frees(
    server, site_provider, batch, client_class
):
    _publish(batch, site_provider)
    study_id = batch.hit_type_id
    tasks = sum(batch.hits.values_list("max_assignments", flat=True))
    assert server.studies[study_id]["total_available_places"] == tasks
    first = Participant(server, study_id, hexid("first"), client_class)
    assert first.arrival.status_code == 302
    server.set_status(first.session, "RETURNED")  # leaves on Prolific; the site holds the task until it reads that
    others = [Participant(server, study_id, hexid(f"p{i}"), client_class) for i in range(tasks - 1)]
    assert all(p.arrival.status_code == 302 for p in others)
    late = Participant(server, study_id, hexid("late"), client_class)

    # Told at once: no page that waits, the reason, and the way back to Prolific with the return code.
    page = late.arrival
    assert page.status_code == 200 and "Retry-After" not in page and b'http-equiv="refresh"' not in page.content
    assert b"No task for you right now" in page.content
    code = prolific_rules.return_code(batch)
    back = f"{server.base}/submissions/complete?cc={code}"
    assert f'href="{back}"'.encode() in page.content
    assert not Assignment.objects.filter(provider_assignment_id=late.session).exists()
    # The study's return code is one Prolific defines: a REQUEST_RETURN action with its reason.
    codes = {c["code"]: c for c in server.studies[study_id]["completion_codes"]}
    assert codes[code]["actions"] == [{"action": "REQUEST_RETURN", "return_reason": prolific_rules.NO_TASK_REASON}]
    # Paused: Prolific sends nobody more to no task.
    assert server.studies[study_id]["status"] == "PAUSED"
    with pytest.raises(AssertionError, match="PAUSED"):
        server.start(study_id, hexid("newcomer"))
    assert ProlificSession.objects.get(session_id=late.session).turned_away_at is not None

    # Back on Prolific with the code: asked to return, they do, and their place is free.
    assert server.complete_with(late.session, code) == "RETURNED"

    # The site reads the first participant's return: their task is free, so the study starts again, with
    # exactly one place open for the one task (counted here from the participants: tasks less those held).
    result = sync_batch(batch, site_provider)
    assert Assignment.objects.get(provider_assignment_id=first.session).status == Assignment.Status.ABANDONED
    assert server.studies[study_id]["status"] == "ACTIVE"
    held = Assignment.objects.filter(hit__batch=batch, status=Assignment.Status.ASSIGNED).count()
    assert held == tasks - 1 and _open(server, study_id) == tasks - held == 1
    assert result.platform.places == server.studies[study_id]["total_available_places"]
    comer = Participant(server, study_id, hexid("comer"), client_class)
    assert (
        comer.arrival.status_code == 302
        and comer.assignment.hit == Assignment.objects.get(provider_assignment_id=first.session).hit
    )


def test_places_are_raised_to_the_tasks_never_past_them_and_a_researchers_pause_is_kept(server, provider, batch):
    _publish(batch, provider)
    study_id = batch.hit_type_id
    tasks = sum(batch.hits.values_list("max_assignments", flat=True))
    sessions = [server.start(study_id, hexid(f"a{i}"))[0] for i in range(tasks)]  # all taken, none arrived yet
    hit = batch.hits.order_by("position").first()
    hit.max_assignments += 1  # one more task (escalation)
    hit.save()
    fitted = prolific_services.fit_places(batch, provider)
    # Every session still on its way will take a task: the one new task is a place for one newcomer.
    assert (fitted.count.coming, fitted.count.free, fitted.total) == (tasks, tasks + 1, tasks + 1)
    assert fitted.transition == "" and _open(server, study_id) == 1

    # Two participants leave on Prolific: two more places open, and no task more on the site (the sessions
    # had none) -- open places (3) still match the tasks left for newcomers (tasks + 1 - (tasks - 2)).
    for session in sessions[:2]:
        server.set_status(session, "RETURNED")
    assert prolific_services.fit_places(batch, provider).transition == ""
    assert _open(server, study_id) == 3

    # A researcher pauses the study on Prolific: the site never starts it again.
    provider.client.transition_study(study_id, "PAUSE")
    assert prolific_services.fit_places(batch, provider).transition == ""
    assert server.studies[study_id]["status"] == "PAUSED"

    # Prolific refuses to lower a published study's places, as its reference says.
    with pytest.raises(ProlificError):
        provider.client.set_places(study_id, 1)
