"""Issue 27.8: losing rights ends an annotator's sessions and one-time links for good.

Before, deactivation only refused them while the account was inactive (Django's backend
ignores inactive users): a session opened before, or a link made before, worked again
after a reactivation, and a link again after a staff round-trip.
"""

import pytest
from django.contrib.auth.models import Group
from django.test import Client
from django.urls import reverse

from annotation.models import AccountState, WorkerIdentity
from platforms.inhouse.selectors import ANNOTATORS_GROUP
from platforms.inhouse.services import team
from tests.platforms.inhouse.test_team import _set_password_through


def _works(client: Client) -> bool:
    """Whether the client's session still belongs to its annotator (the next-HIT page answers them)."""
    response = client.get(reverse("annotation:next"))
    return not (response.status_code == 302 and response["Location"].startswith(reverse("login")))


def _logged_in(username: str, password: str = "pw-secret-123") -> Client:
    client = Client()
    assert client.post("/accounts/login/", {"username": username, "password": password}).status_code == 302
    return client


def test_a_session_opened_before_deactivation_never_works_again(local_batch, annotators):
    leaver, colleague = annotators[0], annotators[1]
    old, other = _logged_in(leaver.username), _logged_in(colleague.username)
    assert _works(old) and _works(other)

    team.set_active(leaver, False)
    team.set_active(leaver, True)
    assert not _works(old)  # ended for good, not only while inactive
    assert _works(other)  # nobody else's session is touched

    new = _logged_in(leaver.username)  # logging in again (the form, as the annotator does) works ...
    assert _works(new) and _works(new)  # ... and the new session stays (its hash covers the new epoch)
    forced = Client()
    forced.force_login(leaver)  # any login path
    assert _works(forced)
    assert not _works(old)


def test_sessions_keep_working_across_a_secret_key_rotation_and_from_before_the_epoch(
    local_batch, annotators, settings
):
    """An account whose epoch was never raised hashes as Django does (sessions opened before the
    epoch existed keep working); one whose epoch was raised still verifies through SECRET_KEY_FALLBACKS."""
    from django.contrib.auth import get_user_model

    from annotation.accounts import account

    user = annotators[0]
    assert account(user).get_session_auth_hash() == get_user_model().objects.get(pk=user.pk).get_session_auth_hash()
    team.set_active(user, False)
    team.set_active(user, True)
    session = _logged_in(user.username)
    settings.SECRET_KEY_FALLBACKS = [settings.SECRET_KEY]
    settings.SECRET_KEY = "a-new-secret-key-" + "x" * 40
    assert _works(session)


def test_a_link_made_before_deactivation_is_refused_after_reactivation(db):
    access = team.add_member("comeback")
    team.set_active(access.user, False)
    team.set_active(access.user, True)
    assert Client().get(access.link_path, follow=True).status_code == 410

    fresh = team.reset_access(access.user)  # a link made after the reactivation works
    _set_password_through(fresh.link_path, "a-long-secret-42")
    assert _works(_logged_in("comeback", "a-long-secret-42"))


def test_a_staff_round_trip_ends_links_and_sessions(local_batch, annotators):
    """As the admin does it: the user saved with is_staff set, then saved again without."""
    user = annotators[0]
    session = _logged_in(user.username)
    link = team.reset_access(user)  # their password is unusable now; the link is their way back
    user.refresh_from_db()
    user.is_staff = True
    user.save()
    user.is_staff = False
    user.save()
    assert Client().get(link.link_path, follow=True).status_code == 410
    assert not _works(session)


def test_leaving_the_annotators_group_and_coming_back_ends_links(local_batch, annotators):
    group = Group.objects.get(name=ANNOTATORS_GROUP)
    first, second = annotators[0], annotators[1]
    links = [team.reset_access(first), team.reset_access(second)]
    first.groups.remove(group)  # from the user's side
    group.user_set.remove(second)  # from the group's side
    first.groups.add(group)
    group.user_set.add(second)
    for link in links:
        assert Client().get(link.link_path, follow=True).status_code == 410


def test_saves_that_change_no_rights_end_nothing(local_batch, annotators):
    user = annotators[0]
    session = _logged_in(user.username)
    link = team.reset_access(annotators[1])
    user.email = "new@example.org"
    user.save()
    team.set_active(annotators[1], True)  # already active: no change
    assert _works(session)
    assert Client().get(link.link_path).status_code == 302  # still valid: on to the form
    assert AccountState.objects.filter(access_epoch__gt=0).count() == 0


def test_an_annotator_made_in_the_admin_without_a_worker_is_ended_too(db, django_user_model):
    """An account without a worker identity gets its epoch row when the epoch is first raised."""
    user = django_user_model.objects.create_user("admin-made", password="pw-secret-123")
    user.groups.add(Group.objects.get_or_create(name=ANNOTATORS_GROUP)[0])
    session = _logged_in("admin-made")
    assert not WorkerIdentity.objects.filter(user=user).exists()
    user.is_active = False
    user.save()
    user.is_active = True
    user.save()
    assert AccountState.objects.get(user=user).access_epoch == 2  # raised by each change of is_active
    assert not _works(session)


@pytest.mark.parametrize("endpoint", ["deactivate", "activate"])
def test_the_api_deactivation_ends_sessions_too(local_batch, annotators, researcher, endpoint):
    researcher.is_staff = True
    session = _logged_in("ann-a")
    api = Client()
    api.force_login(researcher)
    assert api.post(f"/api/annotation/annotators/ann-a/{endpoint}/").status_code == 200
    assert _works(session) is (endpoint == "activate")  # activating an active account takes nothing away


# --- researchers too (review of 27.8) ---------------------------------------------------------


def _researcher_works(client: Client) -> bool:
    """Whether the client's session still belongs to its researcher (the batch list answers them)."""
    return client.get(reverse("annotation:batch-list")).status_code == 200


@pytest.mark.parametrize("field", ["is_active", "is_staff", "is_superuser"])
def test_a_researchers_old_session_is_refused_after_losing_and_regaining_rights(db, django_user_model, field):
    """Before, a researcher (no worker identity, not an annotator) had no epoch recorded: a stolen
    cookie worked again after deactivate→reactivate or staff→non-staff→staff."""
    from core.models import ApiToken
    from core.services.api_tokens import api_token

    researcher = django_user_model.objects.create_user(
        "researcher", password="pw-secret-123", is_staff=True, is_superuser=field == "is_superuser"
    )
    stolen, other = _logged_in("researcher"), _logged_in("researcher")
    assert _researcher_works(stolen)
    api_token(researcher)
    setattr(researcher, field, False)
    researcher.save()
    # the API token goes with staff or active status (core.services.api_tokens), not with superuser status
    assert ApiToken.objects.filter(user=researcher).exists() is (field == "is_superuser")
    setattr(researcher, field, True)
    researcher.save()
    assert not _researcher_works(stolen) and not _researcher_works(other)
    assert not WorkerIdentity.objects.filter(user=researcher).exists()  # no crowd worker made for them
    assert AccountState.objects.get(user=researcher).access_epoch == 2
    fresh = _logged_in("researcher")  # logging in again works and stays
    assert _researcher_works(fresh) and _researcher_works(fresh)


# --- one link accepted once (issue 27.14) -----------------------------------------------------


class OtherBrowserFirst:
    """A password validator (these tests' settings only) that, the first time it runs, lets another
    browser accept the same link: the moment between this browser's token check and its write."""

    pending = None

    def validate(self, password, user=None):
        act, type(self).pending = type(self).pending, None
        if act is not None:
            act()

    def get_help_text(self):
        return ""


def _open_form(link_path: str) -> tuple[Client, str]:
    """A browser that followed the link and shows the set-password form (its token checked)."""
    browser = Client()
    form_url = browser.get(link_path)["Location"]
    assert browser.get(form_url).status_code == 200
    return browser, form_url


def _choose(browser: Client, form_url: str, password: str):
    return browser.post(form_url, {"new_password1": password, "new_password2": password})


def test_two_browsers_accepting_one_link_set_one_password(db, settings):
    """Before, both were told "password set" and the last write won."""
    settings.AUTH_PASSWORD_VALIDATORS = [
        *settings.AUTH_PASSWORD_VALIDATORS,
        {"NAME": f"{__name__}.OtherBrowserFirst"},
    ]
    access = team.add_member("twice")
    (first, first_form), (second, second_form) = _open_form(access.link_path), _open_form(access.link_path)
    answers = {}
    OtherBrowserFirst.pending = lambda: answers.setdefault("second", _choose(second, second_form, "second-secret-42"))
    answers["first"] = _choose(first, first_form, "first-secret-42")

    assert answers["second"].status_code == 302 and answers["second"]["Location"] == reverse("login")
    assert answers["first"].status_code == 410
    assert "This link was already used, a moment ago" in answers["first"].content.decode()
    assert _works(_logged_in("twice", "second-secret-42"))
    assert Client().post("/accounts/login/", {"username": "twice", "password": "first-secret-42"}).status_code == 200


@pytest.mark.django_db(transaction=True)
@pytest.mark.postgresql
def test_four_browsers_accepting_one_link_at_once_set_one_password():
    """The race itself, on a database where the four posts run at the same time."""
    import threading

    from django.db import connection

    access = team.add_member("four-at-once")
    browsers = [_open_form(access.link_path) for _ in range(4)]
    start, answers = threading.Barrier(4), {}

    def accept(i):
        try:
            browser, form_url = browsers[i]
            start.wait(10)
            answers[i] = _choose(browser, form_url, f"secret-number-{i}-42")
        finally:
            connection.close()

    threads = [threading.Thread(target=accept, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    winners = [i for i, answer in answers.items() if answer.status_code == 302]
    assert len(answers) == 4 and len(winners) == 1
    assert sorted(answer.status_code for answer in answers.values()) == [302, 410, 410, 410]
    assert _works(_logged_in("four-at-once", f"secret-number-{winners[0]}-42"))


@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
def test_epochs_raised_before_move_to_every_accounts_row(django_user_model):
    """Migration 0017: the epochs kept on worker identities become the accounts' rows (no ended session returns)."""
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    raised, fresh = (django_user_model.objects.create_user(name) for name in ("raised", "fresh"))
    executor = MigrationExecutor(connection)
    executor.migrate([("annotation", "0016_results_cache_table")])
    old = executor.loader.project_state([("annotation", "0016_results_cache_table")]).apps
    identity = old.get_model("annotation", "WorkerIdentity")
    identity.objects.create(provider="local", external_id="raised", user_id=raised.pk, access_epoch=3)
    identity.objects.create(provider="local", external_id="fresh", user_id=fresh.pk, access_epoch=0)
    identity.objects.create(provider="mturk", external_id="A1", access_epoch=5)  # no account: nothing to keep

    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())
    assert list(AccountState.objects.values_list("user_id", "access_epoch")) == [(raised.pk, 3)]
