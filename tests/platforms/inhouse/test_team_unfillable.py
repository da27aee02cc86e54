"""A team batch whose free places no member can take says so, page and API (issue 45, item 3)."""

from django.urls import reverse

from annotation.crowd.services.sync import sync_batch
from annotation.models import Assignment, Batch
from platforms.inhouse.selectors import Unfillable, unfillable_places
from platforms.inhouse.services.handout import next_assignment
from platforms.inhouse.services.hit_page import submit_local_assignment
from platforms.inhouse.services.team import set_active, set_batch_team
from tests.annotation.conftest import answers_for


def _both_members_do_every_hit(batch, annotators):
    """ann-a and ann-b answer both HITs; ann-b gets the check question of HIT 1 wrong."""
    for user in annotators[:2]:
        while (assignment := next_assignment(user)) is not None:
            wrong = user.username == "ann-b" and assignment.hit.position == 1
            submit_local_assignment(assignment, answers_for(assignment, override={"g1": "m"} if wrong else None))


def test_a_place_freed_by_failed_gold_that_every_member_did_is_reported_page_and_api(
    gold_batch, annotators, researcher, client
):
    # The failed work's answers are kept (they count as labels), so its member may not take the HIT again
    # (a retake is only where they do not: test_team_retake): nobody on the team can fill its place.
    Batch.objects.filter(pk=gold_batch.pk).update(failed_gold_answers="keep")
    gold_batch.refresh_from_db()
    set_batch_team(gold_batch, ["ann-a", "ann-b"])
    _both_members_do_every_hit(gold_batch, annotators)
    assert unfillable_places(gold_batch) is None  # nothing free yet: the failed work awaits its review
    sync_batch(gold_batch)  # rejected: its place is free again, for someone who has not done HIT 1
    assert Assignment.objects.filter(hit__batch=gold_batch, status=Assignment.Status.REJECTED).count() == 1
    gold_batch.refresh_from_db()
    assert gold_batch.status == Batch.Status.PUBLISHED
    # HIT 1's place, freed by failed gold (not escalation), needs a third member: the team has two.
    assert unfillable_places(gold_batch) == Unfillable(1, 1, 1, positions=(1,), escalated=0, team=2, needed=1)
    assert unfillable_places(gold_batch).who.startswith("1 place on HIT 1 needs a third team member")

    client.force_login(researcher)
    page = client.get(reverse("annotation:batch-detail", args=[gold_batch.name])).content.decode()
    assert 'id="unfillable"' in page and "1 place on 1 HIT can never be filled" in page
    assert f'action="{reverse("annotation:batch-cancel", args=[gold_batch.name])}"' in page
    assert 'id="unfillable-close"' in page and 'id="unfillable-add"' in page
    section = client.get(reverse("annotation:batch-team", args=[gold_batch.name])).content.decode()
    assert 'id="team-unfillable"' in section and "<details open>" in section
    api = client.get(f"/api/annotation/batches/{gold_batch.name}/team/").json()
    assert api["unfillable"] == {
        "places": 1,
        "hits": 1,
        "free": 1,
        "positions": [1],
        "escalated": 0,
        "team": 2,
        "needed": 1,
        "who": unfillable_places(gold_batch).who,
    }
    assert 'id="unfillable-who"' in page and "needs a third team member" in page

    # Adding an annotator who has not done HIT 1 gives the place a taker: no warning any more.
    client.put(
        f"/api/annotation/batches/{gold_batch.name}/team/",
        {"annotators": ["ann-a", "ann-b", "ann-c"]},
        content_type="application/json",
    )
    assert unfillable_places(gold_batch) is None
    assert client.get(f"/api/annotation/batches/{gold_batch.name}/team/").json()["unfillable"] is None
    assert (
        'id="unfillable"' not in client.get(reverse("annotation:batch-detail", args=[gold_batch.name])).content.decode()
    )
    # ... unless that annotator is deactivated.
    set_active(annotators[2], False)
    assert unfillable_places(gold_batch) == Unfillable(1, 1, 1, positions=(1,), escalated=0, team=2, needed=1)

    # Closing the batch (the batch page's cancel) ends it: nothing to warn about.
    closed = client.post(reverse("annotation:batch-cancel", args=[gold_batch.name]))
    assert closed.status_code == 302
    gold_batch.refresh_from_db()
    assert gold_batch.status == Batch.Status.CANCELLED and unfillable_places(gold_batch) is None


def test_a_batch_open_to_everyone_or_with_takers_left_is_not_reported(gold_batch, annotators):
    _both_members_do_every_hit(gold_batch, annotators)
    sync_batch(gold_batch)
    assert unfillable_places(gold_batch) is None  # no team: any annotator may take the place
    set_batch_team(gold_batch, ["ann-a", "ann-b", "ann-c"])
    assert unfillable_places(gold_batch) is None  # ann-c has not done HIT 1
