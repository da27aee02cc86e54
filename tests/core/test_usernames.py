"""Usernames are compared as they are stored (NFKC, case-folded, read across scripts), wherever an
account is made: the groups page, ``research_group``, the team page and API, ``create_annotator``.
A look-alike of an existing account and a reserved name are refused with a message naming the
account it looks like; nothing reaches the database's unique index (issue 68).

The expected look-alikes are written out here from Unicode's tables as a person reads them
(fullwidth forms, Cyrillic а U+0430, Greek ο U+03BF), not computed by the code under test.
"""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from core.errors import ServiceError
from core.models import Membership
from core.services import groups as group_services
from core.services.usernames import RESERVED, new_username
from platforms.inhouse.services import team
from platforms.inhouse.services.annotators import create_annotator

LOOK_ALIKES_OF_ARA = [
    "Ara",  # case
    "ARA",
    "ar\u0430",  # Cyrillic а at the end: mixed script
    "\u0430r\u0430",  # Cyrillic а twice
    "\uff41\uff52\uff41",  # fullwidth ａｒａ
]


@pytest.fixture
def owner_and_group(db):
    call = group_services.create_group_with_owner("Lab A", "lab-owner")
    group, _ = call
    return group.memberships.get().user, group


@pytest.mark.parametrize("look_alike", LOOK_ALIKES_OF_ARA)
def test_a_look_alike_of_an_existing_account_is_refused_everywhere(owner_and_group, look_alike):
    owner, group = owner_and_group
    get_user_model().objects.create_user("ara", password="pw-secret-123", is_staff=True)
    with pytest.raises(ServiceError, match="looks like the existing account 'ara'"):
        new_username(look_alike)
    with pytest.raises(ServiceError, match="looks like"):
        group_services.new_account(look_alike, Membership.Role.VIEWER)
    with pytest.raises(ServiceError, match="looks like"):
        create_annotator(look_alike)
    with pytest.raises(ServiceError, match="looks like"):
        team.add_member(look_alike)
    client = Client()
    client.force_login(owner)
    answer = client.post(
        "/groups/", {"group": group.slug, "action": "set", "username": look_alike, "role": "viewer"}, follow=True
    )
    assert answer.status_code == 200
    assert "looks like the existing account" in answer.content.decode()
    assert get_user_model().objects.count() == 2


def test_a_fullwidth_name_on_the_groups_page_is_a_message_not_a_500(owner_and_group):
    """The finding: ``username=ａｌｉｃｅ`` was looked up raw, stored NFKC, and hit the unique index."""
    owner, group = owner_and_group
    get_user_model().objects.create_user("alice", password="pw-secret-123", is_staff=True)
    client = Client(raise_request_exception=False)
    client.force_login(owner)
    answer = client.post(
        "/groups/",
        {"group": group.slug, "action": "set", "username": "\uff41\uff4c\uff49\uff43\uff45", "role": "viewer"},
        follow=True,
    )
    assert answer.status_code == 200
    assert "looks like the existing account" in answer.content.decode()


@pytest.mark.parametrize(
    "name", ["admin", "root", "ADMIN", "\u0430dmin", "r\u03bf\u03bft", "\uff41\uff44\uff4d\uff49\uff4e"]
)
def test_reserved_names_and_their_look_alikes_are_refused(db, name):
    assert {"admin", "root"} <= RESERVED
    with pytest.raises(ServiceError, match="reserved"):
        new_username(name)
    with pytest.raises(ServiceError, match="reserved"):
        create_annotator(name)


def test_a_new_name_is_stored_in_its_normal_form_and_found_by_it(db):
    """NFKC: a name written in compatibility characters is stored (and then found) in its normal form."""
    assert new_username("\uff42\uff4f\uff42") == "bob"
    user = create_annotator("\uff42\uff4f\uff42")
    assert user.username == "bob"


def test_a_name_too_long_for_its_column_is_refused(db):
    limit = get_user_model()._meta.get_field("username").max_length
    with pytest.raises(ServiceError, match=f"at most {limit}"):
        new_username("a" * (limit + 1))
    assert new_username("a" * limit) == "a" * limit


def test_an_existing_annotator_is_still_reused_by_its_own_name(db):
    """``reuse``/``reset_password`` name the account as stored: no look-alike refusal for the account itself."""
    first = create_annotator("carol", password="pw-secret-123")
    assert create_annotator("carol", reuse=True).pk == first.pk
    with pytest.raises(ServiceError, match="looks like"):
        create_annotator("Carol", reuse=True)
