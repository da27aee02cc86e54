"""The team of in-house annotators: accounts from the site, one-time links, deactivation, batch teams."""

import re

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from annotation import services
from annotation.models import Assignment
from core.errors import ServiceError
from platforms.inhouse.selectors import ANNOTATORS_GROUP
from platforms.inhouse.services import team
from platforms.inhouse.services.annotators import is_annotator
from platforms.inhouse.services.handout import next_assignment
from platforms.inhouse.services.hit_page import submit_local_assignment
from tests.annotation.conftest import answers_for, make_batch


def _logs_in(username: str, password: str) -> bool:
    response = Client().post("/accounts/login/", {"username": username, "password": password})
    return response.status_code == 302


def _set_password_through(link_path: str, password: str) -> Client:
    """Follow a one-time link as the annotator would and choose ``password``; returns their client."""
    client = Client()
    response = client.get(link_path)
    assert response.status_code == 302  # the token moves into the session, out of the address bar
    form_url = response["Location"]
    assert client.get(form_url).status_code == 200
    response = client.post(form_url, {"new_password1": password, "new_password2": password})
    assert response.status_code == 302 and response["Location"] == reverse("login")
    return client


# --- handing out HITs to a batch's team --------------------------------------------------


def test_a_batch_with_a_team_gives_its_hits_to_members_only(local_batch, annotators):
    member, outsider, _ = annotators
    team.set_batch_team(local_batch, [member.username])
    assert next_assignment(outsider) is None
    assignment = next_assignment(member)
    assert assignment is not None and assignment.hit.batch == local_batch

    team.set_batch_team(local_batch, [])  # empty: open to every annotator again
    assert next_assignment(outsider).hit.batch == local_batch


def test_an_outsider_still_gets_the_hits_of_open_batches(query_set, annotators):
    closed = make_batch(query_set, name="closed")
    services.publish_batch(closed)
    open_batch = make_batch(query_set, name="open")
    services.publish_batch(open_batch)
    team.set_batch_team(closed, ["ann-a"])

    got = []
    while (assignment := next_assignment(annotators[1])) is not None:
        submit_local_assignment(assignment, answers_for(assignment))
        got.append(assignment.hit.batch.name)
    assert got == ["open", "open"]


def test_leaving_a_team_gives_back_the_held_hit_and_refuses_its_submit(local_batch, annotators, client):
    """Issue 27.15: an annotator removed from a batch's team kept the HIT they held, opened
    it and submitted it afterwards."""
    from annotation.models import Judgment

    leaver, stayer = annotators[0], annotators[1]
    held, kept = next_assignment(leaver), next_assignment(stayer)
    client.force_login(leaver)
    page = reverse("annotation:assignment", args=[held.pk])
    assert client.get(page).status_code == 200

    team.set_batch_team(local_batch, [stayer.username])
    held.refresh_from_db()
    kept.refresh_from_db()
    assert held.status == Assignment.Status.ABANDONED  # its place is back in the queue
    assert kept.status == Assignment.Status.ASSIGNED  # the team's own annotator keeps theirs

    opened = client.get(page, follow=True)
    assert opened.redirect_chain[-1][0] == reverse("annotation:batch-list")
    assert "Batch b1 is no longer open to you" in opened.content.decode()
    posted = client.post(page, answers_for(held), follow=True)
    assert "no longer open to you" in posted.content.decode()
    with pytest.raises(ServiceError, match="b1 is no longer open to you"):  # the service refuses too, whoever calls it
        submit_local_assignment(held, answers_for(held))
    assert not Judgment.objects.filter(assignment=held).exists()
    assert next_assignment(leaver) is None  # nothing else is open to them
    assert submit_local_assignment(kept, answers_for(kept)).valid  # members' submits still count


@pytest.mark.parametrize("side", ["user", "group"])
def test_leaving_the_annotators_group_gives_back_the_held_hit_and_refuses_it(local_batch, annotators, side):
    """Review of 27.15: an account taken out of the annotators group (still active, logging in
    again) could open and submit the HIT it held; it kept it, too."""
    from django.contrib.auth.models import Group

    from annotation.models import Judgment
    from platforms.inhouse.services.handout import NotAnnotator

    leaver, stayer = annotators[0], annotators[1]
    held, kept = next_assignment(leaver), next_assignment(stayer)
    page = reverse("annotation:assignment", args=[held.pk])
    group = Group.objects.get(name=ANNOTATORS_GROUP)
    if side == "user":
        leaver.groups.remove(group)
    else:
        group.user_set.remove(leaver)

    held.refresh_from_db()
    kept.refresh_from_db()
    assert held.status == Assignment.Status.ABANDONED  # its place is back in the queue
    assert kept.status == Assignment.Status.ASSIGNED
    client = Client()
    client.force_login(leaver)  # logged in again: an account, no longer an annotator
    assert client.get(page).status_code == 403
    assert client.post(page, answers_for(held)).status_code == 403
    with pytest.raises(NotAnnotator, match="no longer an annotator"):  # the service refuses too, whoever calls it
        submit_local_assignment(held, answers_for(held))
    assert not Judgment.objects.filter(assignment=held).exists()
    held.refresh_from_db()
    assert held.status == Assignment.Status.ABANDONED
    assert submit_local_assignment(kept, answers_for(kept)).valid  # annotators' submits still count


def test_a_deactivation_saved_anywhere_gives_back_the_held_hits(local_batch, annotators):
    """Review of 27.8: only team.set_active released the HITs; the admin's plain save did not."""
    leaver, stayer = annotators[0], annotators[1]
    held, kept = next_assignment(leaver), next_assignment(stayer)
    leaver.is_active = False
    leaver.save()  # as the admin's form does
    held.refresh_from_db()
    kept.refresh_from_db()
    assert held.status == Assignment.Status.ABANDONED
    assert kept.status == Assignment.Status.ASSIGNED
    leaver.email = "still@example.org"
    leaver.save()  # an inactive account saved again: nothing else changes
    kept.refresh_from_db()
    assert kept.status == Assignment.Status.ASSIGNED


def test_a_hit_held_in_a_batch_closed_by_other_means_is_not_handed_back_to_them(local_batch, annotators):
    """The team changed without set_batch_team (the admin's form): the hand-out gives the held HIT
    back to the queue instead of to its holder, and the submit is refused all the same."""
    held = next_assignment(annotators[0])
    local_batch.team.set([annotators[1]])
    with pytest.raises(ServiceError, match="b1 is no longer open to you"):
        submit_local_assignment(held, answers_for(held))
    assert next_assignment(annotators[0]) is None
    held.refresh_from_db()
    assert held.status == Assignment.Status.ABANDONED
    local_batch.team.set([])  # open to everyone again: a new HIT (never one they were handed before)
    assert next_assignment(annotators[0]).hit_id != held.hit_id


def test_only_local_batches_take_a_team_of_annotators(query_set, annotators, researcher, toy_platform):
    crowd = make_batch(query_set, name="crowd", provider="toy")  # some other platform
    with pytest.raises(ServiceError, match="not in-house"):
        team.set_batch_team(crowd, ["ann-a"])
    local = make_batch(query_set, name="inhouse")
    with pytest.raises(ServiceError, match="not annotators: nobody, researcher"):
        team.set_batch_team(local, ["ann-a", "nobody", "researcher"])
    assert not local.team.exists()


# --- accounts -----------------------------------------------------------------------------


def test_an_invite_link_sets_a_password_once_then_is_refused(db):
    access = team.add_member("newbie", "newbie@example.org", access="link")
    assert access.password is None and access.link_expires is not None
    user = get_user_model().objects.get(username="newbie")
    assert not user.has_usable_password() and is_annotator(user) and user.email == "newbie@example.org"

    _set_password_through(access.link_path, "a-long-secret-42")
    assert _logs_in("newbie", "a-long-secret-42")

    again = Client().get(access.link_path, follow=True)
    assert again.status_code == 410 and b"This link no longer works" in again.content


def test_the_welcome_page_refuses_weak_passwords_and_keeps_the_link(db):
    access = team.add_member("newbie")
    client = Client()
    form_url = client.get(access.link_path)["Location"]
    response = client.post(form_url, {"new_password1": "123", "new_password2": "123"})
    assert response.status_code == 200 and b"too short" in response.content
    assert not get_user_model().objects.get(username="newbie").has_usable_password()


def test_a_generated_password_works_and_a_reset_replaces_it(db):
    access = team.add_member("gen", access="password")
    assert access.link_path is None and len(access.password) >= 20
    assert _logs_in("gen", access.password)

    link = team.reset_access(access.user, access="link")
    assert not _logs_in("gen", access.password)  # the old password stops at once
    newer = team.reset_access(access.user, access="password")
    assert _logs_in("gen", newer.password)
    assert Client().get(link.link_path, follow=True).status_code == 410  # the earlier link died too


def test_a_link_of_a_deactivated_annotator_is_refused(db):
    access = team.add_member("leaver")
    team.set_active(access.user, False)
    assert Client().get(access.link_path, follow=True).status_code == 410


def test_links_are_never_made_for_staff_and_staff_are_not_team_members(researcher):
    with pytest.raises(ServiceError, match="staff account"):
        team.add_member("researcher")
    with pytest.raises(ServiceError, match="not an annotator"):
        team.reset_access(researcher)
    with pytest.raises(ServiceError, match="not an annotator"):
        team.set_active(researcher, False)
    assert researcher.is_active and researcher.has_usable_password()


def test_a_deactivated_annotator_cannot_log_in_and_their_hit_goes_back(local_batch, annotators, client):
    leaver = annotators[0]
    client.force_login(leaver)
    held = next_assignment(leaver)
    team.set_active(leaver, False)

    held.refresh_from_db()
    assert held.status == Assignment.Status.ABANDONED
    response = client.get(reverse("annotation:next"))  # their session ended
    assert response.status_code == 302 and response["Location"].startswith(reverse("login"))
    assert not _logs_in(leaver.username, "pw-secret-123")

    team.set_active(leaver, True)
    assert _logs_in(leaver.username, "pw-secret-123")


# --- pages -----------------------------------------------------------------------------------


def test_the_team_page_adds_an_annotator_and_shows_the_password_once_uncached(researcher, client):
    client.force_login(researcher)
    response = client.post(reverse("annotation:team"), {"username": "page-made", "access": "password"})
    assert response.status_code == 200
    assert "no-store" in response["Cache-Control"]
    password = re.search(r'id="member-password">([^<]+)<', response.content.decode()).group(1)
    assert _logs_in("page-made", password)

    listing = client.get(reverse("annotation:team"))
    assert "no-store" in listing["Cache-Control"] and password not in listing.content.decode()
    assert b'data-username="page-made"' in listing.content


def test_the_team_page_refuses_a_taken_username(researcher, annotators, client):
    client.force_login(researcher)
    response = client.post(reverse("annotation:team"), {"username": "ann-a", "access": "link"})
    assert response.status_code == 400 and b"already exists" in response.content


def test_a_reset_from_the_member_page_gives_a_link_once(researcher, annotators, client):
    client.force_login(researcher)
    response = client.post(reverse("annotation:team-member-access", args=["ann-a"]), {"access": "link"})
    assert response.status_code == 200 and "no-store" in response["Cache-Control"]
    link = re.search(r'id="member-link">([^<]+)<', response.content.decode()).group(1)
    assert link.startswith("http://testserver/annotation/welcome/")
    assert not _logs_in("ann-a", "pw-secret-123")
    _set_password_through(link.removeprefix("http://testserver"), "brand-new-secret-7")
    assert _logs_in("ann-a", "brand-new-secret-7")


def test_the_batch_page_sets_its_team_and_shows_each_members_progress(gold_batch, annotators, researcher, client):
    member = annotators[0]
    assignment = next_assignment(member)
    submit_local_assignment(assignment, answers_for(assignment, override={"g1": "m"}))  # one gold wrong

    client.force_login(researcher)
    detail = client.get(reverse("annotation:batch-detail", args=["gold"]))
    assert reverse("annotation:batch-team", args=["gold"]).encode() in detail.content
    response = client.post(reverse("annotation:batch-team", args=["gold"]), {"members": ["ann-a", "ann-b"]})
    assert response.status_code == 302 and response["Location"].endswith("#team")
    assert sorted(gold_batch.team.values_list("username", flat=True)) == ["ann-a", "ann-b"]

    section = client.get(reverse("annotation:batch-team", args=["gold"])).content.decode()
    assert "Only this team may work on the batch." in section
    rows = dict(re.findall(r'data-username="([^"]+)">.*?class="num answered">([^<]+)<', section, re.S))
    assert rows == {"ann-a": "1 / 2", "ann-b": "0 / 2"}
    progress = client.get(reverse("annotation:batch-team-progress", args=["gold"])).content.decode()
    assert 'hx-trigger="every 3s"' in progress and "0.50" in progress  # 1 of 2 gold answers right


def test_team_pages_are_for_researchers_only(local_batch, annotators, client):
    urls = [
        ("get", reverse("annotation:team")),
        ("post", reverse("annotation:team")),
        ("get", reverse("annotation:team-member", args=["ann-b"])),
        ("post", reverse("annotation:team-member-access", args=["ann-b"])),
        ("post", reverse("annotation:team-member-active", args=["ann-b"])),
        ("get", reverse("annotation:batch-team", args=["b1"])),
        ("post", reverse("annotation:batch-team", args=["b1"])),
        ("get", reverse("annotation:batch-team-progress", args=["b1"])),
    ]
    for method, url in urls:
        response = getattr(Client(), method)(url)
        assert response.status_code == 302 and response["Location"].startswith(reverse("login")), url
    client.force_login(annotators[0])
    for method, url in urls:
        assert getattr(client, method)(url).status_code == 403, url
    assert get_user_model().objects.get(username="ann-b").is_active


def test_the_team_link_is_in_researchers_navigation_only(researcher, annotators, client):
    client.force_login(researcher)
    assert b'href="/annotation/team/">Team</a>' in client.get("/annotation/").content
    client.force_login(annotators[0])
    assert b'href="/annotation/team/"' not in client.get("/annotation/").content


@pytest.mark.parametrize("value", [None, "", "yes", "true"])
def test_an_unclear_active_value_changes_nothing_and_says_which_field(annotators, researcher, client, value):
    client.force_login(researcher)
    data = {} if value is None else {"active": value}
    response = client.post(reverse("annotation:team-member-active", args=["ann-b"]), data, follow=True)
    assert "active: send 1" in response.content.decode()
    assert get_user_model().objects.get(username="ann-b").is_active  # not deactivated by a typo
