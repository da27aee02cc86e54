"""Participant groups across waves over real HTTP against the Prolific-compatible server.

A batch may exclude, or be restricted to, the participants of other batches; nobody is
excluded unless the researcher says so; participants whose work failed a batch's gold
threshold join a block-list that later studies use. Groups are made once and filled
idempotently whatever Prolific does to the answers (lost, 5xx, 429), the study is created
with the filters naming them, and a batch's own groups are deleted when its study closes.
"""

from decimal import Decimal

import pytest

from annotation.crowd.services.sync import sync_batch
from annotation.models import Batch
from platforms.prolific import services as prolific_services
from platforms.prolific.groups import services as prolific_groups
from platforms.prolific.models import ParticipantGroup
from platforms.prolific.provider import GOLD_FAILED_GROUP
from tests.platforms.prolific import test_prolific as base
from tests.platforms.prolific.fake_server import hexid
from tests.platforms.prolific.test_prolific import Participant, _publish, make_prolific_batch

# The Prolific-compatible server and the provider talking to it, as in test_prolific.py.
server, provider, sleeps, client_class = base.server, base.provider, base.sleeps, base.client_class


def _live(server, name):
    return [g for g in server.groups.values() if g["name"] == name and not g.get("is_deleted")]


def _filters(server, batch):
    return {f["filter_id"]: f["selected_values"] for f in server.studies[batch.hit_type_id]["filters"]}


def _first_wave(server, provider, query_set, client_class, name="wave1"):
    """A first batch: PID1 and PID2 answer (PID2 fails the check question), PID3 only arrives."""
    first = _publish(make_prolific_batch(query_set, name, bonus="0"), provider)
    p1, p2, _p3 = (Participant(server, first.hit_type_id, hexid(f"PID{i}"), client_class) for i in (1, 2, 3))
    p1.answer()
    p1.complete()
    p2.answer(override={"g1": "f"})
    p2.complete()
    return first


def test_a_second_wave_excludes_nobody_unless_asked(server, provider, query_set, client_class):
    first = _first_wave(server, provider, query_set, client_class)
    second = _publish(make_prolific_batch(query_set, "wave2", bonus="0"), provider)
    assert _filters(server, second) == {}  # no group, no filter: nobody kept out
    assert ParticipantGroup.objects.count() == 0
    assert first.hit_type_id != second.hit_type_id


def test_excluded_and_allowed_batches_become_groups_made_once_despite_lost_answers(
    server, provider, query_set, client_class
):
    _first_wave(server, provider, query_set, client_class)
    # The create's answer is lost (it happened); the add is throttled, then fails with a 502.
    server.faults["create_group"] = ["lose_response"]
    server.faults["add_participants"] = ["throttle", "error"]
    excluding = _publish(make_prolific_batch(query_set, "wave2", bonus="0", exclude_batches=["wave1"]), provider)

    [group] = _live(server, "took part before wave2")
    assert group["participants"] == {hexid("PID1"), hexid("PID2"), hexid("PID3")}
    assert server.calls.count("create_group") == 1  # found again by listing, not made twice
    assert _filters(server, excluding) == {"participant_group_blocklist": [group["id"]]}

    # A 5xx on create (nothing made): publishing stops before any study; the next attempt makes one group.
    server.faults["create_group"] = ["error"]
    allowing = make_prolific_batch(query_set, "wave3", bonus="0", allow_batches=["wave1"])
    with pytest.raises(prolific_services.ProlificError):
        _publish(allowing, provider)
    allowing.refresh_from_db()
    assert allowing.hit_type_id == "" and not _live(server, "may take part in wave3")
    _publish(allowing, provider)
    [allow] = _live(server, "may take part in wave3")
    assert allow["participants"] == {hexid("PID1"), hexid("PID2"), hexid("PID3")}
    assert _filters(server, allowing) == {"participant_group_allowlist": [allow["id"]]}

    # Filling again adds nothing new and makes no group.
    calls = len(server.calls)
    assert prolific_groups.prepare_groups(allowing, provider)[0].group_id == allow["id"]
    assert server.calls[calls:] == []  # the id is known and every member was added: no call at all
    assert server.calls.count("create_group") == 3  # wave2 once; wave3: the 502, then once
    assert len([g for g in server.groups.values() if g["name"] == "may take part in wave3"]) == 1


def test_a_batch_cannot_both_allow_and_exclude_one_batch(server, provider, query_set, client_class):
    _first_wave(server, provider, query_set, client_class)
    with pytest.raises(prolific_services.ServiceError, match="both allowed and excluded"):
        make_prolific_batch(query_set, "wave2", bonus="0", allow_batches=["wave1"], exclude_batches=["wave1"])
    with pytest.raises(prolific_services.ServiceError, match="no such batch"):
        make_prolific_batch(query_set, "wave2", bonus="0", allow_batches=["nope"])


def test_gold_failures_land_in_the_block_list_of_later_studies(server, provider, query_set, client_class):
    first = _first_wave(server, provider, query_set, client_class)
    found = sync_batch(first, provider).platform
    assert (found.approved, found.rejected, found.gold_failures_blocked) == (1, 1, 1)
    [gold] = _live(server, GOLD_FAILED_GROUP)
    assert gold["participants"] == {hexid("PID2")}
    adds = server.calls.count("add_participants")
    sync_batch(first, provider)  # again: nobody new, no call
    assert server.calls.count("add_participants") == adds and server.calls.count("create_group") == 1

    later = _publish(make_prolific_batch(query_set, "wave2", bonus="0"), provider)
    assert _filters(server, later) == {"participant_group_blocklist": [gold["id"]]}
    admitting = _publish(make_prolific_batch(query_set, "wave3", bonus="0", admit_gold_failures=True), provider)
    assert _filters(server, admitting) == {}


def test_a_closed_studys_own_groups_are_deleted_once_and_the_gold_block_list_stays(
    server, provider, query_set, client_class
):
    first = _first_wave(server, provider, query_set, client_class)
    sync_batch(first, provider)
    second = _publish(make_prolific_batch(query_set, "wave2", bonus="0", exclude_batches=["wave1"]), provider)
    with pytest.raises(prolific_services.ServiceError, match="still uses"):
        prolific_groups.clean_up_groups(second, provider)

    Batch.objects.filter(pk=second.pk).update(status=Batch.Status.COMPLETED)
    second.refresh_from_db()
    server.faults["delete_group"] = ["lose_response"]  # deleted, answer lost: the retry's 404 says so
    assert prolific_services.close_study(second, provider)
    assert server.studies[second.hit_type_id]["status"] == "COMPLETED"
    assert not _live(server, "took part before wave2")
    assert ParticipantGroup.objects.get(name="took part before wave2").deleted
    assert _live(server, GOLD_FAILED_GROUP)  # the workspace's block-list lives on
    assert prolific_groups.clean_up_groups(second, provider) == 0
    assert server.calls.count("delete_group") == 2  # the lost one, and its retry answered 404


def test_create_batch_command_takes_the_group_options(server, query_set, client_class, provider):
    from io import StringIO

    from django.core.management import call_command

    _first_wave(server, provider, query_set, client_class)
    call_command(
        "create_batch",
        "--name",
        "cmd",
        "--queries",
        query_set.name,
        "--provider",
        "prolific",
        "--assignments",
        "2",
        "--queries-per-hit",
        "3",
        "--reward",
        "0.90",
        "--allow-batch",
        "wave1",
        "--admit-gold-failures",
        "--bonus-rule",
        "per_gold:0.10",
        stdout=StringIO(),
    )
    options = Batch.objects.get(name="cmd").provider_options
    assert options["allow_batches"] == ["wave1"] and options["admit_gold_failures"] is True
    assert options["bonus_rule"] == {"kind": "per_gold", "amount": "0.10"}
    assert Decimal(Batch.objects.get(name="cmd").cost["bonuses"]) == Decimal("0.00")  # no gold: nothing to earn


def test_groups_chosen_through_the_api_and_deleted_when_the_batch_is_cancelled(
    server, provider, query_set, client_class, admin_client
):
    from annotation.crowd.services.batches import cancel_batch

    _first_wave(server, provider, query_set, client_class)
    answer = admin_client.post(
        "/api/annotation/batches/",
        {
            "name": "apiwave",
            "queries": query_set.name,
            "provider": "prolific",
            "assignments_per_query": 2,
            "queries_per_hit": 3,
            "reward": "0.90",
            "gold_per_hit": 0,
            "allow_batches": ["wave1"],
            "admit_gold_failures": True,
        },
        content_type="application/json",
    )
    assert answer.status_code == 201, answer.content
    batch = Batch.objects.get(name="apiwave")
    assert batch.provider_options["allow_batches"] == ["wave1"] and batch.provider_options["admit_gold_failures"]
    refused = admin_client.post(
        "/api/annotation/batches/",
        {
            "name": "bad",
            "queries": query_set.name,
            "provider": "prolific",
            "gold_per_hit": 0,
            "allow_batches": ["nope"],
        },
        content_type="application/json",
    )
    assert refused.status_code == 400 and "allow_batches" in refused.json()

    _publish(batch, provider)
    [allow] = _live(server, "may take part in apiwave")
    assert _filters(server, batch) == {"participant_group_allowlist": [allow["id"]]}
    cancel_batch(batch, provider)
    assert server.studies[batch.hit_type_id]["status"] == "COMPLETED"
    assert not _live(server, "may take part in apiwave")


def test_without_a_workspace_a_gold_failure_is_logged_and_the_sync_goes_on(
    server, provider, query_set, client_class, settings, caplog
):
    first = _first_wave(server, provider, query_set, client_class)
    settings.PROLIFIC_WORKSPACE_ID = ""
    found = sync_batch(first, provider).platform
    assert (found.approved, found.rejected, found.gold_failures_blocked) == (1, 1, 0)
    assert not _live(server, GOLD_FAILED_GROUP) and "join no block-list group" in caplog.text


def test_a_failed_group_call_never_stalls_the_sync_and_a_deleted_group_is_made_again(
    server, provider, query_set, client_class, caplog
):
    first = _first_wave(server, provider, query_set, client_class)
    sync_batch(first, provider)
    [gold] = _live(server, GOLD_FAILED_GROUP)
    # A new gold failure, and Prolific refuses every group add: the sync still does its other work.
    late = Participant(server, first.hit_type_id, hexid("PID4"), client_class)
    late.answer(override={"g1": "f"})
    late.complete()
    server.standing["add_participants"] = "status:403"
    found = sync_batch(first, provider).platform
    assert (found.rejected, found.gold_failures_blocked) == (1, 0)  # PID4 reviewed; the group not updated
    assert "failed-gold block-list could not be updated" in caplog.text
    del server.standing["add_participants"]

    # The researcher deleted the group on Prolific's site: its stored id answers 404.
    server.groups[gold["id"]]["is_deleted"] = True
    found = sync_batch(first, provider).platform
    assert found.gold_failures_blocked == 2  # made again, with every member recorded so far
    [again] = _live(server, GOLD_FAILED_GROUP)
    assert again["id"] != gold["id"] and again["participants"] == {hexid("PID2"), hexid("PID4")}
    assert ParticipantGroup.objects.get(name=GOLD_FAILED_GROUP).group_id == again["id"]
    adds = server.calls.count("add_participants")
    sync_batch(first, provider)  # nothing new: no call
    assert server.calls.count("add_participants") == adds


def test_each_sync_adds_the_later_participants_of_an_excluded_batch(server, provider, query_set, client_class):
    first = _first_wave(server, provider, query_set, client_class)
    second = _publish(make_prolific_batch(query_set, "wave2", bonus="0", exclude_batches=["wave1"]), provider)
    [group] = _live(server, "took part before wave2")
    assert group["participants"] == {hexid("PID1"), hexid("PID2"), hexid("PID3")}  # at publication
    # wave1 still runs: a participant arrives there after wave2 was published.
    assert Participant(server, first.hit_type_id, hexid("PID4"), client_class).arrival.status_code == 302
    assert sync_batch(second, provider).platform.group_members_added == 1
    assert group["participants"] == {hexid(f"PID{i}") for i in range(1, 5)}
    adds = server.calls.count("add_participants")
    assert sync_batch(second, provider).platform.group_members_added == 0  # nobody new: no call
    assert server.calls.count("add_participants") == adds and server.calls.count("create_group") == 1
