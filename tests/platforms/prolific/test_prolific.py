"""The Prolific path over real HTTP against a Prolific-compatible server (tests/platforms/prolific/fake_server.py).

Participants take places on the server, follow the study URL to the site's real pages
(Django's test client), answer the shared HIT page and are sent to the completion URL.
The server throttles, fails and loses answers; the product must still end with one
study, each judgment stored once, every valid piece of work approved once and every
bonus paid once.
"""

from decimal import Decimal
from urllib.parse import urlsplit

import pytest
from django.urls import reverse

from annotation import services
from annotation.crowd.services.batch_settings import GoldQuery
from annotation.crowd.services.batches import cancel_batch
from annotation.crowd.services.sync import sync_batch
from annotation.models import Assignment, Batch, BonusPayment, Judgment, Worker
from core.errors import ServiceError
from platforms.inhouse.services.hit_page import submit_local_assignment
from platforms.prolific import provider as prolific_rules
from platforms.prolific import services as prolific_services
from platforms.prolific.bonuses import services as prolific_bonuses
from platforms.prolific.client import Prolific, ProlificError, ProlificUnknownOutcome
from platforms.prolific.provider import ProlificProvider
from tests.annotation.conftest import answers_for
from tests.platforms.prolific.fake_server import TOKEN, FakeProlific, hexid, serve

PROJECT = "project-1"


@pytest.fixture
def server(settings):
    fake = FakeProlific()
    url, http = serve(fake)
    settings.PROLIFIC_API_URL = f"{url}/api/v1/"
    settings.PROLIFIC_API_TOKEN = TOKEN
    settings.PROLIFIC_PROJECT_ID = PROJECT
    settings.PROLIFIC_WORKSPACE_ID = "workspace-1"
    settings.PROLIFIC_COMPLETION_URL = f"{url}/submissions/complete?cc="
    settings.SITE_URL = "http://testserver"
    yield fake
    http.shutdown()


@pytest.fixture
def sleeps():
    return []


@pytest.fixture
def provider(server, sleeps, settings):
    return ProlificProvider(Prolific(settings.PROLIFIC_API_URL, TOKEN, sleep=sleeps.append))


def make_prolific_batch(query_set, name="pro", **options):
    settings = services.BatchSettings(
        provider="prolific",
        assignments_per_query=2,
        queries_per_hit=3,
        reward=Decimal("0.90"),
        gold_per_hit=1,
        provider_options={"estimated_minutes": 4, "bonus": "0.25", **options},
    )
    gold = [GoldQuery("g1", "who was the first king of france", "m")]
    return services.create_batch(name, settings, query_set=query_set, gold=gold)


@pytest.fixture
def batch(query_set):
    return make_prolific_batch(query_set)


def _publish(batch, provider):
    services.publish_batch(batch, provider)
    batch.refresh_from_db()
    return batch


class Participant:
    """A Prolific participant with their own browser (Django test client)."""

    def __init__(self, fake: FakeProlific, study_id: str, pid: str, client_class) -> None:
        self.fake, self.pid = fake, pid
        self.session, url = fake.start(study_id, pid)
        self.browser = client_class()
        parts = urlsplit(url)
        self.arrival = self.browser.get(f"{parts.path}?{parts.query}")

    @property
    def assignment(self) -> Assignment:
        return Assignment.objects.get(provider_assignment_id=self.session)

    def answer(self, override=None):
        """Answer the HIT page as the form posts it; returns the response."""
        page = self.arrival["Location"]
        assert self.browser.get(page).status_code == 200
        return self.browser.post(page, answers_for(self.assignment, override=override))

    def complete(self):
        """Back on Prolific with the code: the submission awaits review."""
        self.fake.set_status(self.session, "AWAITING REVIEW")


def test_publishing_makes_one_study_despite_throttling_and_a_lost_answer(server, provider, batch, sleeps):
    server.faults["create_study"] = ["throttle", "lose_response"]
    server.faults["transition_study"] = ["lose_response"]

    with pytest.raises(ProlificUnknownOutcome):
        services.publish_batch(batch, provider)
    batch.refresh_from_db()
    assert batch.hit_type_id == "" and batch.prepare_attempted is not None
    assert len(server.studies) == 1  # made, but its answer was lost

    _publish(batch, provider)

    assert len(server.studies) == 1
    study = server.studies[batch.hit_type_id]
    assert study["status"] == "ACTIVE"  # the lost PUBLISH answer was checked, not repeated blindly
    assert server.calls.count("transition_study") == 1
    assert sleeps[0] == 0  # Retry-After: 0 honoured on the 429
    assert study["internal_name"] == provider.internal_name(batch)
    assert study["external_study_url"] == (
        "http://testserver/annotation/prolific/pro/"
        "?PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}"
    )
    assert study["prolific_id_option"] == "url_parameters"
    assert study["completion_codes"][0]["code"] == prolific_rules.completion_code(batch)
    # 6 queries in 2 groups of 3 (+1 gold each), 2 participants per group; $0.90 in cents.
    assert (study["total_available_places"], study["reward"], study["estimated_completion_time"]) == (4, 90, 4)
    assert study["project"] == PROJECT and study["device_compatibility"] == ["desktop"]
    assert batch.status == Batch.Status.PUBLISHED

    _publish(batch, provider)  # once more: nothing new
    assert len(server.studies) == 1 and server.calls.count("transition_study") == 1


def test_participants_answer_on_the_site_and_sync_reviews_pays_and_refills(
    server, provider, batch, client_class, sleeps
):
    _publish(batch, provider)
    study_id = batch.hit_type_id
    p1, p2, p3, p4 = (Participant(server, study_id, hexid(f"PID{i}"), client_class) for i in range(1, 5))
    assert all(p.arrival.status_code == 302 for p in (p1, p2, p3, p4))
    # Same hand-out as in-house annotators: groups in order, each to two different people.
    assert [p.assignment.hit.position for p in (p1, p2, p3, p4)] == [1, 1, 2, 2]

    done = p1.answer()
    assert done.status_code == 302
    assert done["Location"] == f"{server.base}/submissions/complete?cc={prolific_rules.completion_code(batch)}"
    p1.complete()
    p2.answer(override={"g1": "f"})  # fails the check question
    p2.complete()
    server.set_status(p3.session, "RETURNED")  # gives up before answering
    p4.answer()
    p4.complete()
    # A second submit of the same page is not stored twice: the participant goes back to the code.
    again = p1.browser.post(p1.arrival["Location"], answers_for(p1.assignment))
    assert again.status_code == 302 and "cc=" in again["Location"]

    server.faults["list_submissions"] = ["throttle", "error"]
    server.faults["transition_submission"] = ["lose_response"]
    result = sync_batch(batch, provider)

    found = result.platform
    assert (found.submissions, found.approved, found.rejected, found.freed) == (4, 2, 1, 1)
    statuses = {s["participant_id"]: s["status"] for s in server.submissions.values()}
    assert statuses == {
        hexid("PID1"): "APPROVED",
        hexid("PID2"): "REJECTED",
        hexid("PID3"): "RETURNED",
        hexid("PID4"): "APPROVED",
    }
    category, message = server.submissions[p2.session]["rejection"]
    assert category == "FAILED_CHECK" and len(message) >= 100
    assert '"who was the first king of france" is Male, you answered Female' in message
    assert p3.assignment.status == Assignment.Status.ABANDONED
    # The bonus was paid once to each approved participant.
    assert sorted((pid, amount) for _, pid, amount in server.payments) == [
        (hexid("PID1"), Decimal("0.25")),
        (hexid("PID4"), Decimal("0.25")),
    ]
    assert 0.5 in sleeps  # the 502 was retried after a back-off

    # The freed places (rejected, returned) are taken by newcomers; one completes without answering.
    p5 = Participant(server, study_id, hexid("PID5"), client_class)
    p6 = Participant(server, study_id, hexid("PID6"), client_class)
    assert {p5.assignment.hit.position, p6.assignment.hit.position} == {1, 2}
    p5.complete()
    p6.answer()
    p6.complete()
    second = sync_batch(batch, provider).platform
    assert (second.approved, second.rejected) == (1, 1)
    assert server.submissions[p5.session]["rejection"][0] == "NO_DATA"
    assert p5.assignment.status == Assignment.Status.REJECTED

    # The group P5 left unfinished gets a place again, and P7 finishes the batch.
    assert server.studies[study_id]["total_available_places"] >= 5
    p7 = Participant(server, study_id, hexid("PID7"), client_class)
    assert p7.assignment.hit == p5.assignment.hit
    p7.answer()
    p7.complete()
    third = sync_batch(batch, provider)
    assert third.completed and Batch.objects.get(pk=batch.pk).status == Batch.Status.COMPLETED

    judgments = Judgment.objects.filter(assignment__hit__batch=batch).count()
    assert judgments == 5 * 4  # five answered pages of 4 queries, each stored once
    payments = len(server.payments)
    assert payments == 4
    sync_batch(batch, provider)
    assert Judgment.objects.filter(assignment__hit__batch=batch).count() == judgments
    assert len(server.payments) == payments


def test_a_bonus_whose_payment_lost_its_answer_is_never_paid_twice(server, provider, batch, client_class):
    _publish(batch, provider)
    p1 = Participant(server, batch.hit_type_id, hexid("PID1"), client_class)
    p1.answer()
    p1.complete()
    server.faults["pay_bonuses"] = ["lose_response"]
    server.pay_delay = 3600  # Prolific pays asynchronously: the submission shows nothing yet

    first = sync_batch(batch, provider).platform
    assert (first.bonuses_paid, first.bonuses_unconfirmed) == (0, 1)
    assert len(server.payments) == 1  # Prolific did pay

    second = sync_batch(batch, provider).platform
    assert second.bonuses_unconfirmed == 1
    assert len(server.payments) == 1  # not paid a second time
    assert server.calls.count("pay_bonuses") == 1

    # The flat bonus (--bonus) is paid at sync by the one bonus path: a person settles it as any
    # bonus, or a later sync sees it on the submission once Prolific shows it.
    assert prolific_bonuses.confirm_bonuses(batch, paid=True, provider=provider).paid == 1
    assert BonusPayment.objects.get().state == BonusPayment.State.PAID
    assert sync_batch(batch, provider).platform.bonuses_unconfirmed == 0
    assert len(server.payments) == 1 and server.calls.count("pay_bonuses") == 1


def test_escalation_adds_places_once_whatever_the_retries(server, provider, batch):
    _publish(batch, provider)
    hit = batch.hits.get(position=1)
    hit.max_assignments = 3
    hit.save()
    server.faults["update_study"] = ["lose_response"]
    provider.add_assignments(hit, 1, "token-1")
    provider.add_assignments(hit, 1, "token-1")
    assert server.studies[batch.hit_type_id]["total_available_places"] == 5


def test_the_arrival_page_refuses_links_of_other_studies_and_other_browsers(server, provider, batch, client_class):
    _publish(batch, provider)
    path = reverse("annotation:prolific-start", args=[batch.name])
    wrong = client_class().get(
        path, {"PROLIFIC_PID": hexid("PID9"), "STUDY_ID": hexid("another"), "SESSION_ID": hexid("s9")}
    )
    assert wrong.status_code == 400 and b"another Prolific study" in wrong.content
    missing = client_class().get(path, {"STUDY_ID": batch.hit_type_id})
    assert missing.status_code == 400 and b"incomplete" in missing.content

    p1 = Participant(server, batch.hit_type_id, hexid("PID1"), client_class)
    stranger = client_class()
    assert stranger.get(p1.arrival["Location"]).status_code == 403
    # Coming back with the same session (e.g. a reload) gives the same HIT, not a second one.
    again = p1.browser.get(f"{path}?PROLIFIC_PID={hexid('PID1')}&STUDY_ID={batch.hit_type_id}&SESSION_ID={p1.session}")
    assert again["Location"] == p1.arrival["Location"]
    assert Assignment.objects.filter(worker__identity__external_id=hexid("PID1")).count() == 1


def test_participant_groups_block_and_exclude_earlier_participants(server, provider, query_set, client_class):
    first = _publish(make_prolific_batch(query_set, "first"), provider)
    p1 = Participant(server, first.hit_type_id, hexid("PID1"), client_class)
    Participant(server, first.hit_type_id, hexid("PID2"), client_class)
    prolific_services.block_participant(Worker.objects.get(identity__external_id=hexid("PID2")), provider)
    assert Worker.objects.get(identity__external_id=hexid("PID2")).blocked

    second = _publish(make_prolific_batch(query_set, "second", exclude_batches=["first"]), provider)
    groups = {g["name"]: g for g in server.groups.values()}
    assert groups["blocked participants"]["participants"] == {hexid("PID2")}
    assert groups["took part before second"]["participants"] == {hexid("PID1"), hexid("PID2")}
    blocklist = server.studies[second.hit_type_id]["filters"]
    assert blocklist == [
        {
            "filter_id": "participant_group_blocklist",
            "selected_values": [groups["blocked participants"]["id"], groups["took part before second"]["id"]],
        }
    ]
    assert p1.assignment.hit.batch == first


def test_cancelling_stops_the_study_once(server, provider, batch):
    _publish(batch, provider)
    cancel_batch(batch, provider)
    assert server.studies[batch.hit_type_id]["status"] == "COMPLETED"
    assert server.calls.count("transition_study") == 2  # publish, stop (once for two HIT groups)


def test_a_wrong_token_is_a_clear_error(server, settings, batch):
    bad = ProlificProvider(Prolific(settings.PROLIFIC_API_URL, "wrong", sleep=lambda s: None))
    with pytest.raises(ProlificError, match="HTTP 401"):
        services.publish_batch(batch, bad)


def test_the_cost_calculator_and_the_documented_rate(server, provider, batch):
    # Created with the documented academic rate: 4 places × ($0.90 + $0.30), and the $0.25
    # bonus of every approved place with its fee: $1.00 + 33.3% ($0.333 -> $0.33) = $1.33.
    assert batch.cost["total"] == "6.13" and batch.cost["fee_rate"] == "0.333"
    assert batch.cost["bonuses"] == "1.00"
    # Prolific's own calculator (the test server charges a third, rounded per place).
    assert prolific_services.quote(batch, provider) == Decimal("4.80")


@pytest.fixture
def client_class():
    from django.test import Client

    return Client


def test_publishing_needs_a_project_and_a_public_site_url(server, provider, batch, settings):
    settings.PROLIFIC_PROJECT_ID = ""
    with pytest.raises(ServiceError, match="PROLIFIC_PROJECT_ID"):
        services.publish_batch(batch, provider)
    settings.PROLIFIC_PROJECT_ID = PROJECT
    settings.PROLIFIC_API_URL = "https://api.prolific.com/api/v1/"
    with pytest.raises(ServiceError, match="public https address"):
        services.publish_batch(batch, provider)
    assert not server.studies


def test_create_batch_command_takes_the_prolific_options(query_set, tmp_path):
    from io import StringIO

    from django.core.management import call_command

    gold = tmp_path / "gold.tsv"
    gold.write_text("g1\twho was the first king of france\tmale\n")
    out = StringIO()
    call_command(
        "create_batch", "--name", "cmd", "--queries", "gq", "--provider", "prolific", "--assignments", "2",
        "--queries-per-hit", "3", "--reward", "0.90", "--gold", str(gold), "--gold-per-hit", "1",
        "--estimated-minutes", "5", "--device", "desktop", "--device", "tablet", "--bonus", "0.20",
        "--filter", "current-country-of-residence=1,2",
        stdout=out,
    )  # fmt: skip
    batch = Batch.objects.get(name="cmd")
    code = batch.provider_options.pop("completion_code")
    assert len(code) == prolific_rules.CODE_LENGTH and set(code) <= set(prolific_rules.CODE_ALPHABET)
    returning = batch.provider_options.pop("return_code")  # no task for a participant: Prolific returns them
    assert len(returning) == prolific_rules.CODE_LENGTH and returning != code
    assert batch.provider_options == {
        "estimated_minutes": 5,
        "devices": ["desktop", "tablet"],
        "filters": [{"filter_id": "current-country-of-residence", "selected_values": ["1", "2"]}],
        "bonus_rule": {"kind": "flat", "amount": "0.20", "at_sync": True},  # --bonus: the flat rule, paid at sync
    }
    # $4.80 of rewards with their fee, and up to 4 × $0.20 = $0.80 of bonuses + 33.3% ($0.27).
    assert "4 assignments × ($0.90 reward + $0.30 fee) + up to $0.80 bonuses and their fee = $5.87" in out.getvalue()


def test_publish_command_shows_prolifics_price_and_admin_command_settles_bonuses(server, batch, client_class):
    from io import StringIO

    from django.core.management import call_command

    server.faults["create_study"] = []
    out = StringIO()
    call_command("publish_batch", batch.name, stdout=out, verbosity=0)
    text = out.getvalue()
    # With the $0.25 bonus of every approved place and its fee (Prolific's quote is for the places).
    assert "Cost: 4 assignments × ($0.90 reward + $0.30 fee) + up to $1.00 bonuses and their fee = $6.13" in text
    assert "Prolific's own price (fees and VAT of your account): $4.80" in text
    batch.refresh_from_db()
    assert server.studies[batch.hit_type_id]["status"] == "ACTIVE"

    p1 = Participant(server, batch.hit_type_id, hexid("PID1"), client_class)
    p1.answer()
    p1.complete()
    server.faults["pay_bonuses"] = ["lose_response"]
    out = StringIO()
    call_command("sync_batch", batch.name, stdout=out, verbosity=0)
    assert "1 bonus payment(s) lost their answer" in out.getvalue()
    out = StringIO()
    call_command("prolific_admin", "confirm-bonuses", batch.name, "--paid", stdout=out)
    assert "1 bonus payment(s) recorded as paid." in out.getvalue()

    worker = p1.assignment.worker
    call_command("prolific_admin", "block", worker.pseudonym, stdout=StringIO())
    group = next(g for g in server.groups.values() if g["name"] == "blocked participants")
    assert group["participants"] == {hexid("PID1")}


def test_the_client_honours_retry_after_backs_off_and_gives_up(server, settings):
    sleeps = []
    client = Prolific(settings.PROLIFIC_API_URL, TOKEN, sleep=sleeps.append, max_attempts=4)
    server.studies["s1"] = {"id": "s1", "status": "ACTIVE", "total_available_places": 3}
    server.faults["get_study"] = ["throttle:7", "error", "error"]
    assert client.get_study("s1")["status"] == "ACTIVE"
    assert sleeps == [7.0, 1.0, 2.0]  # Retry-After, then 0.5 s × 2^(attempt - 1) after attempts 2 and 3

    server.faults["get_study"] = ["error"] * 4
    with pytest.raises(ProlificError, match="HTTP 502 after 4 attempts"):
        client.get_study("s1")


# -- trust: only the real participant gets a HIT -------------------------------------------------
@pytest.fixture
def site_provider(provider, monkeypatch):
    """The provider the site's pages use is the test's (its back-off sleeps are recorded, not slept)."""
    monkeypatch.setattr(prolific_services, "get_provider", lambda name: provider)
    return provider


def _arrive(client, batch, pid, session):
    path = reverse("annotation:prolific-start", args=[batch.name])
    return client.get(path, {"PROLIFIC_PID": pid, "STUDY_ID": batch.hit_type_id, "SESSION_ID": session})


def test_made_up_participants_and_sessions_get_no_place(server, site_provider, batch, client_class):
    """Sybils: with the study id alone, nobody takes a place; the real participants then get them all."""
    _publish(batch, site_provider)
    for i in range(6):
        forged = _arrive(client_class(), batch, hexid(f"SYBIL{i}"), hexid(f"made-up-{i}"))
        assert forged.status_code == 403 and b"Prolific does not know this session" in forged.content
    assert not Assignment.objects.exists() and not Worker.objects.exists()
    real = [Participant(server, batch.hit_type_id, hexid(f"PID{i}"), client_class) for i in range(4)]
    assert all(p.arrival.status_code == 302 for p in real)
    assert sorted(p.assignment.hit.position for p in real) == [1, 1, 2, 2]


def test_a_real_participant_id_with_a_made_up_session_cannot_act_for_them(server, site_provider, batch, client_class):
    """An impostor who knows a participant's id gets nothing, so their wrong answers block nobody."""
    _publish(batch, site_provider)
    Batch.objects.filter(pk=batch.pk).update(block_gold_accuracy=0.5, min_answers_judged=1)
    honest = Participant(server, batch.hit_type_id, hexid("PID1"), client_class)
    impostor = _arrive(client_class(), batch, hexid("PID1"), hexid("made-up"))
    assert impostor.status_code == 403
    assert Assignment.objects.count() == 1
    honest.answer()
    honest.complete()
    sync_batch(batch, site_provider)
    assert honest.assignment.status == Assignment.Status.APPROVED
    assert not Worker.objects.get(identity__external_id=hexid("PID1")).blocked
    assert not any(hexid("PID1") in g["participants"] for g in server.groups.values())


def test_a_real_session_under_another_id_or_in_another_browser_opens_nothing(
    server, site_provider, batch, client_class
):
    _publish(batch, site_provider)
    p1 = Participant(server, batch.hit_type_id, hexid("PID1"), client_class)
    other_id = _arrive(client_class(), batch, hexid("PID2"), p1.session)
    assert other_id.status_code == 403 and b"another participant" in other_id.content
    # The same link, word for word, in another browser: bound to the first one.
    stolen = _arrive(client_class(), batch, hexid("PID1"), p1.session)
    assert stolen.status_code == 403 and b"another browser" in stolen.content
    assert Assignment.objects.count() == 1
    # A session not yet opened is refused under another id before anything is kept.
    session, _ = server.start(batch.hit_type_id, hexid("PID3"))
    assert _arrive(client_class(), batch, hexid("PID4"), session).status_code == 403
    assert not Worker.objects.filter(identity__external_id=hexid("PID4")).exists()
    # The honest participant reloads: the same HIT, and Prolific is asked once per session.
    again = _arrive(p1.browser, batch, hexid("PID1"), p1.session)
    assert again["Location"] == p1.arrival["Location"]
    assert server.calls.count("get_submission") == 2  # p1's first arrival and PID4's try; the rest was kept


def test_a_session_of_another_batch_opens_nothing_and_codes_are_not_guessable(
    server, site_provider, query_set, client_class
):
    first = _publish(make_prolific_batch(query_set, "first"), site_provider)
    second = _publish(make_prolific_batch(query_set, "second"), site_provider)
    p1 = Participant(server, first.hit_type_id, hexid("PID1"), client_class)
    path = reverse("annotation:prolific-start", args=[second.name])
    crossed = p1.browser.get(
        path, {"PROLIFIC_PID": hexid("PID1"), "STUDY_ID": second.hit_type_id, "SESSION_ID": p1.session}
    )
    assert crossed.status_code == 403 and b"another study" in crossed.content
    assert Assignment.objects.filter(hit__batch=second).count() == 0
    codes = {prolific_rules.completion_code(b) for b in (first, second)}
    assert len(codes) == 2
    for b in (first, second):
        code = prolific_rules.completion_code(b)
        assert code != f"C{b.pk:X}{b.created:%H%M%S}".upper()  # the old, guessable formula
        assert server.studies[b.hit_type_id]["completion_codes"][0]["code"] == code


def test_a_lost_answer_is_asked_again_within_the_deadline_and_never_trusted(
    server, site_provider, batch, client_class, settings
):
    """Issue 41: a lost answer and a 502 are asked again within the arrival's deadline, so the
    participant gets in on their first page; a Prolific failing for the whole deadline gives the
    page that waits (503, refreshing itself, nothing handed out), and that page's own next visit,
    once the wait it named is over, takes the participant in."""
    import re
    import time

    settings.PROLIFIC_ARRIVAL_DEADLINE_SECONDS = 1.0
    settings.PROLIFIC_ARRIVAL_REFRESH_SECONDS = 1
    _publish(batch, site_provider)
    session, _ = server.start(batch.hit_type_id, hexid("PID1"))
    server.faults["get_submission"] = ["lose_response", "error"]
    first = _arrive(client_class(), batch, hexid("PID1"), session)
    assert first.status_code == 302 and "/prolific/hits/" in first["Location"]
    assert server.calls.count("get_submission") == 3  # lost, 502, then the answer

    other, _ = server.start(batch.hit_type_id, hexid("PID2"))
    browser = client_class()
    server.standing["get_submission"] = "error"
    down = _arrive(browser, batch, hexid("PID2"), other)
    assert down.status_code == 503 and b"tries again by itself" in down.content
    refresh = int(re.search(rb'<meta http-equiv="refresh" content="(\d+)">', down.content).group(1))
    assert refresh == int(down["Retry-After"]) >= 1
    assert not Assignment.objects.filter(provider_assignment_id=other).exists()
    asked = server.calls.count("get_submission")
    again = _arrive(browser, batch, hexid("PID2"), other)  # before the wait it named: not asked
    assert again.status_code == 503 and server.calls.count("get_submission") == asked
    del server.standing["get_submission"]
    time.sleep(refresh)
    assert _arrive(browser, batch, hexid("PID2"), other).status_code == 302


def test_work_prolific_does_not_attribute_is_voided_never_counted_or_held_against_anyone(
    server, site_provider, batch, client_class
):
    """Work made before arrivals were checked (or a session Prolific dropped) is voided at sync."""
    import datetime as dt

    from django.utils import timezone

    from annotation.crowd.services.pseudonyms import worker_for

    _publish(batch, site_provider)
    Batch.objects.filter(pk=batch.pk).update(block_gold_accuracy=0.5, min_answers_judged=1)
    honest = Participant(server, batch.hit_type_id, hexid("PID1"), client_class)
    honest.answer()
    honest.complete()
    # Forged work in PID1's name (as the unchecked arrival page allowed), gold answered wrongly.
    hit = batch.hits.exclude(pk=honest.assignment.hit_id).first()
    forged = Assignment.objects.create(
        hit=hit,
        worker=worker_for("prolific", hexid("PID1")),
        provider_assignment_id=hexid("made-up"),
        accepted_at=timezone.now(),
    )
    submit_local_assignment(forged, answers_for(forged, override={"g1": "f"}))
    stale = Assignment.objects.create(
        hit=hit,
        worker=worker_for("prolific", "NOBODY"),
        provider_assignment_id=hexid("made-up-2"),
        accepted_at=timezone.now() - dt.timedelta(minutes=11),
    )
    found = sync_batch(batch, site_provider).platform
    assert found.voided == 2
    forged.refresh_from_db()
    stale.refresh_from_db()
    assert forged.status == stale.status == Assignment.Status.VOID
    assert honest.assignment.status == Assignment.Status.APPROVED
    assert not Worker.objects.get(identity__external_id=hexid("PID1")).blocked
    assert "transition_submission" in server.calls and len(server.submissions) == 1  # only the real one reviewed
    from annotation.results.selectors.agreement import agreement

    counted = agreement(batch, bootstrap=0)
    assert counted["workers"] == 1
    assert (
        counted["judgments"]
        == Judgment.objects.filter(assignment=honest.assignment, batch_query__is_gold=False).count()
    )
    # Their places are free again: three newcomers fill the three places left.
    newcomers = [Participant(server, batch.hit_type_id, hexid(f"PID{i}"), client_class) for i in (2, 3, 4)]
    assert [p.assignment.hit for p in newcomers].count(hit) == 2


def test_the_study_stops_when_its_batch_completes_and_latecomers_see_a_friendly_page(
    server, site_provider, batch, client_class
):
    _publish(batch, site_provider)
    study_id = batch.hit_type_id
    server.studies[study_id]["total_available_places"] += 1
    people = [Participant(server, study_id, hexid(f"PID{i}"), client_class) for i in range(4)]
    late_session, _ = server.start(study_id, hexid("PID9"))  # took a place on Prolific just before the end
    server.set_status(late_session, "RETURNED")
    for p in people:
        p.answer()
        p.complete()
    result = sync_batch(batch, site_provider)
    assert result.completed and result.platform.stopped
    assert server.studies[study_id]["status"] == "COMPLETED"
    with pytest.raises(AssertionError, match="COMPLETED"):
        server.start(study_id, hexid("PID10"))  # Prolific sends nobody more
    assert sync_batch(batch, site_provider).platform.stopped is False  # stopped once
    assert server.calls.count("transition_study") == 2  # publish, stop

    server.set_status(late_session, "ACTIVE")
    late = _arrive(client_class(), batch, hexid("PID9"), late_session)
    assert late.status_code == 200
    assert b"return the study on prolific" in late.content.lower() and b'href="http://127.0.0.1' in late.content


def test_participants_never_go_through_password_hashing(server, site_provider, batch, client_class, monkeypatch):
    """Prolific participants have no account: arriving, answering and finishing hash no password
    (Django's PBKDF2, deliberately slow, is for in-house annotators' logins only)."""
    from django.contrib.auth import hashers

    def no_hashing(*args, **kwargs):
        raise AssertionError("a password was hashed on a Prolific participant's path")

    _publish(batch, site_provider)
    for name in ("make_password", "check_password"):
        monkeypatch.setattr(hashers, name, no_hashing)
    for hasher in hashers.get_hashers():
        monkeypatch.setattr(type(hasher), "encode", no_hashing)
        monkeypatch.setattr(type(hasher), "verify", no_hashing)
    participant = Participant(server, batch.hit_type_id, hexid("PID1"), client_class)
    assert participant.arrival.status_code == 302
    done = participant.answer()
    assert done.status_code == 302 and "cc=" in done["Location"]
    assert participant.assignment.status == Assignment.Status.SUBMITTED
