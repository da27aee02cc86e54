"""Bonuses paid exactly once, over real HTTP against the Prolific-compatible server.

Prolific's pay call is not idempotent (the test server, like Prolific, pays a bulk bonus
again each time it is paid) and pays asynchronously; the server loses answers, fails with
5xx and throttles. Whatever happens -- a lost answer, a retry, two clicks, two pays at once,
a worker that restarts between two steps -- every participant is paid their bonus once,
which the server's ledger (``server.payments``) shows. Every figure is computed by hand.

The batch: 2 HIT groups × 2 participants, each HIT with 2 check questions (gold), of which
one right is enough (``gold_pass_fraction`` 0.5); a bonus of $0.10 per check question right
in approved work. PID1 and PID4 get both right ($0.20 each), PID2 one ($0.10), PID3 none
(rejected: no bonus). Bonuses $0.50; Prolific's fee at 33.3%: $0.1665 -> $0.17; $0.67 in all.
"""

import threading
from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from annotation import services
from annotation.crowd.selectors import spent
from annotation.crowd.services.batch_settings import GoldQuery
from annotation.crowd.services.sync import sync_batch
from annotation.models import BonusPayment
from core.errors import ServiceError, StateError
from core.models import Job
from platforms.prolific.bonuses import services as prolific_bonuses
from platforms.prolific.bonuses.selectors import preview_bonuses
from tests.platforms.prolific import test_prolific as base
from tests.platforms.prolific.fake_server import hexid
from tests.platforms.prolific.test_prolific import Participant, _publish

# The Prolific-compatible server and the provider talking to it, as in test_prolific.py.
server, provider, sleeps, client_class = base.server, base.provider, base.sleeps, base.client_class

OWED = {hexid("PID1"): Decimal("0.20"), hexid("PID2"): Decimal("0.10"), hexid("PID4"): Decimal("0.20")}


def make_batch(query_set, name="bon", rule=("per_gold", "0.10")):
    settings = services.BatchSettings(
        provider="prolific",
        assignments_per_query=2,
        queries_per_hit=3,
        reward=Decimal("0.90"),
        gold_per_hit=2,
        gold_pass_fraction=0.5,
        provider_options={"estimated_minutes": 4, "bonus_rule": {"kind": rule[0], "amount": rule[1]}},
    )
    gold = [
        GoldQuery("g1", "who was the first king of france", "m"),
        GoldQuery("g2", "queen of england in 1600", "f"),
    ]
    return services.create_batch(name, settings, query_set=query_set, gold=gold)


@pytest.fixture
def batch(query_set, server, provider, client_class):
    """Published, answered (PID3 fails both check questions) and synced: three approved participants."""
    batch = _publish(make_batch(query_set), provider)
    people = [Participant(server, batch.hit_type_id, hexid(f"PID{i}"), client_class) for i in range(1, 5)]
    overrides = [{}, {"g1": "f"}, {"g1": "f", "g2": "m"}, {}]
    for person, override in zip(people, overrides, strict=True):
        person.answer(override=override)
        person.complete()
    found = sync_batch(batch, provider).platform
    assert (found.approved, found.rejected) == (3, 1)
    batch.refresh_from_db()
    return batch


def ledger(server, batch) -> dict[str, Decimal]:
    """What Prolific paid each participant of the batch's study, however many times."""
    paid: dict[str, Decimal] = {}
    for study, pid, amount in server.payments:
        if study == batch.hit_type_id:
            paid[pid] = paid.get(pid, Decimal("0")) + amount
    return paid


def test_the_preview_gives_each_participant_and_the_total_with_prolifics_fee(server, provider, batch):
    preview = preview_bonuses(batch)
    assert {row["participant"]: row["amount"] for row in preview.rows} == OWED
    assert {row["state"] for row in preview.rows} == {"new"}
    cost = preview.to_pay
    assert (cost.participants, cost.bonuses, cost.fees, cost.total) == (
        3,
        Decimal("0.50"),
        Decimal("0.17"),
        Decimal("0.67"),
    )
    assert server.payments == [] and "set_up_bonuses" not in server.calls  # a preview pays and asks nothing

    # A flat rule instead: $0.30 to each of the 3 approved participants = $0.90 + 33.3% ($0.2997) = $1.20.
    prolific_bonuses.set_bonus_rule(batch, "flat", "0.30")
    batch.refresh_from_db()
    flat = preview_bonuses(batch).to_pay
    assert (flat.bonuses, flat.fees, flat.total) == (Decimal("0.90"), Decimal("0.30"), Decimal("1.20"))


def test_the_estimate_counts_the_most_the_rule_can_cost(query_set):
    # 4 places × ($0.90 + fee): $3.60 + $1.1988 -> $1.20; bonuses at most 4 × 2 check questions × $0.10 = $0.80,
    # + 33.3% ($0.2664 -> $0.27): $3.60 + $1.20 + $0.80 + $0.27 = $5.87.
    cost = make_batch(query_set).cost
    assert (cost["bonuses"], cost["fees"], cost["total"]) == ("0.80", "1.47", "5.87")


def test_a_lost_answer_then_retries_and_a_second_click_pay_each_participant_once(server, provider, batch):
    server.faults["pay_bonuses"] = ["lose_response"]  # Prolific pays; the answer never arrives
    first = prolific_bonuses.pay_bonuses(batch, provider)
    assert (first.paid_now, first.unconfirmed) == (0, 3)
    assert ledger(server, batch) == OWED

    again = prolific_bonuses.pay_bonuses(batch, provider)  # a retry: Prolific's state is read first
    assert (again.confirmed, again.paid_now, again.unconfirmed) == (3, 0, 0)
    prolific_bonuses.pay_bonuses(batch, provider)  # a second click
    assert ledger(server, batch) == OWED
    assert server.calls.count("pay_bonuses") == 1 and server.calls.count("set_up_bonuses") == 1
    assert set(BonusPayment.objects.values_list("state", flat=True)) == {"paid"}


def test_a_payment_prolific_does_not_show_yet_is_never_paid_again(server, provider, batch, settings):
    server.pay_delay = 3600  # Prolific pays asynchronously: the bonus shows an hour later
    server.faults["pay_bonuses"] = ["lose_response"]
    prolific_bonuses.pay_bonuses(batch, provider)
    for _ in range(3):
        assert prolific_bonuses.pay_bonuses(batch, provider).unconfirmed == 3
    assert server.calls.count("pay_bonuses") == 1 and ledger(server, batch) == OWED
    assert preview_bonuses(batch).unconfirmed == 3

    server.pay_delay = 0  # now Prolific shows it
    assert prolific_bonuses.pay_bonuses(batch, provider).confirmed == 3
    assert server.calls.count("pay_bonuses") == 1 and ledger(server, batch) == OWED


def test_a_pay_that_failed_without_paying_is_paid_again_only_once_a_person_confirms_it_unpaid(
    server, provider, batch, settings
):
    server.faults["pay_bonuses"] = ["error"]  # a 502: Prolific did nothing, but the client cannot know
    assert prolific_bonuses.pay_bonuses(batch, provider).unconfirmed == 3
    assert prolific_bonuses.pay_bonuses(batch, provider).unconfirmed == 3  # within the settle time: wait
    assert server.calls.count("pay_bonuses") == 1 and ledger(server, batch) == {}
    with pytest.raises(StateError, match="cannot be confirmed unpaid before"):  # too early: refused, nothing changed
        prolific_bonuses.confirm_bonuses(batch, paid=False, provider=provider)
    assert set(BonusPayment.objects.values_list("state", flat=True)) == {"paying"}

    settings.PROLIFIC_BONUS_SETTLE_SECONDS = 0  # past the settle time: still never paid again automatically
    for _ in range(2):
        result = prolific_bonuses.pay_bonuses(batch, provider)
        assert (result.paid_now, result.unconfirmed, result.needs_person) == (0, 3, 3)
    assert server.calls.count("pay_bonuses") == 1 and ledger(server, batch) == {}
    assert preview_bonuses(batch).needs_person == 3

    # A person checked Prolific's site: not paid. Only now is the same bulk paid again, once.
    assert prolific_bonuses.confirm_bonuses(batch, paid=False, provider=provider).unpaid == 3
    result = prolific_bonuses.pay_bonuses(batch, provider)
    assert (result.paid_now, result.amount_paid_now, result.needs_person) == (3, Decimal("0.50"), 0)
    assert ledger(server, batch) == OWED
    assert server.calls.count("set_up_bonuses") == 1  # the same bulk, paid once now
    assert prolific_bonuses.pay_bonuses(batch, provider).paid_now == 0 and ledger(server, batch) == OWED


def test_a_payment_later_than_the_settle_time_is_never_paid_twice(server, provider, batch, settings):
    server.pay_delay = 7200  # Prolific shows the bonus two hours later (or in another unit: the same)
    server.faults["pay_bonuses"] = ["lose_response"]  # paid; the answer lost
    prolific_bonuses.pay_bonuses(batch, provider)
    settings.PROLIFIC_BONUS_SETTLE_SECONDS = 0
    assert prolific_bonuses.pay_bonuses(batch, provider).needs_person == 3
    assert server.calls.count("pay_bonuses") == 1 and ledger(server, batch) == OWED  # no second pay
    server.pay_delay = 0  # a person checks, then confirms unpaid: Prolific is read again first and shows it
    done = prolific_bonuses.confirm_bonuses(batch, paid=False, provider=provider)
    assert (done.paid, done.unpaid) == (3, 0)
    prolific_bonuses.pay_bonuses(batch, provider)
    assert server.calls.count("pay_bonuses") == 1 and ledger(server, batch) == OWED


def test_throttling_and_refusals_pay_nothing_twice(server, provider, batch):
    server.faults["set_up_bonuses"] = ["throttle", "lose_response"]  # set-up pays nothing: simply set up again
    server.faults["pay_bonuses"] = ["status:403"]  # refused before anything was done
    with pytest.raises(prolific_bonuses.ProlificError):
        prolific_bonuses.pay_bonuses(batch, provider)
    assert ledger(server, batch) == {}
    assert set(BonusPayment.objects.values_list("state", flat=True)) == {"set_up"}
    prolific_bonuses.pay_bonuses(batch, provider)
    assert ledger(server, batch) == OWED
    bulk_ids = set(BonusPayment.objects.values_list("bulk_id", flat=True))
    assert len(server.bulk_bonuses) == 2 and len(bulk_ids) == 1  # the lost set-up's bulk is never paid


def test_a_worker_restarting_between_two_steps_never_pays_twice(server, provider, batch, settings, client_class):
    # Died after the bulk was set up, before the pay call: the next pay pays that bulk, set up once.
    prolific_bonuses._record(batch, prolific_bonuses.bonus_rule(batch))
    prolific_bonuses._set_up(batch, provider)
    assert prolific_bonuses.pay_bonuses(batch, provider).paid_now == 3
    assert server.calls.count("set_up_bonuses") == 1 and ledger(server, batch) == OWED

    # A second wave of work approved later; died after "paying" was committed, before the call left.
    second = _publish(make_batch(batch.query_set, "bon2", rule=("flat", "0.40")), provider)
    person = Participant(server, second.hit_type_id, hexid("PID9"), client_class)
    person.answer()
    person.complete()
    sync_batch(second, provider)
    prolific_bonuses._record(second, prolific_bonuses.bonus_rule(second))
    prolific_bonuses._set_up(second, provider)
    # "paying" committed, and the worker died before the call reached Prolific.
    BonusPayment.objects.filter(batch=second).update(state="paying", pay_attempted=timezone.now())
    assert prolific_bonuses.pay_bonuses(second, provider).unconfirmed == 1  # not paid blindly
    assert ledger(server, second) == {}
    settings.PROLIFIC_BONUS_SETTLE_SECONDS = 0
    assert prolific_bonuses.pay_bonuses(second, provider).needs_person == 1  # nor after the settle time
    assert ledger(server, second) == {}
    assert prolific_bonuses.confirm_bonuses(second, paid=False, provider=provider).unpaid == 1  # a person checked
    assert prolific_bonuses.pay_bonuses(second, provider).paid_now == 1
    assert ledger(server, second) == {hexid("PID9"): Decimal("0.40")}


@pytest.mark.django_db(transaction=True)
def test_pays_arriving_while_a_pay_is_in_prolifics_pay_call_pay_nothing(server, provider, batch):
    """Two clicks (or a click and a worker) at once: the second pay runs in another thread while the
    first is inside Prolific's pay call. The batch's lease turns it away (409); and even a pay that
    bypassed the lease finds the rows "paying" and pays nothing before Prolific's state says so."""
    from django.db import connection

    outcomes: list[object] = []
    pay_call = provider.client.pay_bonuses

    def another(pay):
        try:
            outcomes.append(pay(batch, provider))
        except StateError as exc:
            outcomes.append(exc)
        finally:
            connection.close()

    def paying(bulk_id):  # the first pay, inside its pay call: two others arrive
        for pay in (prolific_bonuses.pay_bonuses, prolific_bonuses.pay_bonuses.__wrapped__):
            thread = threading.Thread(target=another, args=(pay,))
            thread.start()
            thread.join(30)
        pay_call(bulk_id)

    provider.client.pay_bonuses = paying
    first = prolific_bonuses.pay_bonuses(batch, provider)
    busy, unleased = outcomes
    assert isinstance(busy, StateError) and "Paying bonuses of batch 'bon' is already under way" in str(busy)
    assert (unleased.paid_now, unleased.unconfirmed) == (0, 3)  # it saw them being paid: hands off
    assert first.paid_now == 3
    assert ledger(server, batch) == OWED and server.calls.count("pay_bonuses") == 1


@pytest.mark.django_db(transaction=True)
def test_confirming_unpaid_while_a_pay_is_in_its_call_is_refused(server, provider, batch, settings):
    """Confirming runs under the batch's lease: during a pay's call it is told the batch is busy and
    changes nothing (it used to move the "paying" rows back, and the next pay paid the bulk twice)."""
    from django.db import connection

    settings.PROLIFIC_BONUS_SETTLE_SECONDS = 0  # even past the settle time
    outcomes: list[object] = []
    pay_call = provider.client.pay_bonuses

    def confirm():
        for attempt in (
            lambda: prolific_bonuses.confirm_bonuses(batch, paid=False, provider=provider),
            lambda: prolific_bonuses.set_bonus_rule(batch, "flat", "0.30"),  # the rule under the lease too
        ):
            try:
                outcomes.append(attempt())
            except StateError as exc:
                outcomes.append(exc)
        connection.close()

    def paying(bulk_id):
        thread = threading.Thread(target=confirm)
        thread.start()
        thread.join(30)
        pay_call(bulk_id)

    provider.client.pay_bonuses = paying
    assert prolific_bonuses.pay_bonuses(batch, provider).paid_now == 3
    for busy in outcomes:  # both told the batch is busy, nothing changed
        assert isinstance(busy, StateError) and "Paying bonuses of batch 'bon' is already under way" in str(busy)
    assert len(outcomes) == 2 and preview_bonuses(batch).rule.kind == "per_gold"
    provider.client.pay_bonuses = pay_call
    prolific_bonuses.pay_bonuses(batch, provider)
    assert set(BonusPayment.objects.values_list("state", flat=True)) == {"paid"}
    assert ledger(server, batch) == OWED and server.calls.count("pay_bonuses") == 1


def test_the_previewed_total_is_compared_after_settling_and_counts_only_what_a_pay_sends(server, provider, batch):
    prolific_bonuses._record(batch, prolific_bonuses.bonus_rule(batch))
    prolific_bonuses._set_up(batch, provider)
    other = BonusPayment.objects.filter(batch=batch).order_by("pk").first()
    # Another pay claimed part of the bulk: a pay sends nothing of it, and the preview says so.
    BonusPayment.objects.filter(pk=other.pk).update(state="paying", pay_attempted=timezone.now())
    assert preview_bonuses(batch).to_pay.total == Decimal("0.00")
    provider.client.pay_bonuses(other.bulk_id)  # that pay reaches Prolific
    # Settled first (Prolific shows the bulk paid): nothing is left to pay, so $0.00 is the total now.
    with pytest.raises(StateError, match=r"now \$0.00, not the \$0.67"):
        prolific_bonuses.pay_bonuses(batch, provider, expected_total="0.67")
    assert prolific_bonuses.pay_bonuses(batch, provider, expected_total="0.00").paid_now == 0
    assert ledger(server, batch) == OWED and server.calls.count("pay_bonuses") == 1


def test_a_bulk_partly_claimed_by_another_pay_is_never_paid_from_here(server, provider, batch, settings):
    prolific_bonuses._record(batch, prolific_bonuses.bonus_rule(batch))
    prolific_bonuses._set_up(batch, provider)
    other = BonusPayment.objects.filter(batch=batch).order_by("pk").first()
    # Another pay claimed part of the bulk just now and is in its pay call.
    BonusPayment.objects.filter(pk=other.pk).update(state="paying", pay_attempted=timezone.now())
    result = prolific_bonuses.pay_bonuses(batch, provider)
    assert (result.paid_now, result.unconfirmed) == (0, 3) and "pay_bonuses" not in server.calls
    provider.client.pay_bonuses(other.bulk_id)  # the other pay's call reaches Prolific
    assert prolific_bonuses.pay_bonuses(batch, provider).confirmed == 3  # seen paid: the bulk was paid whole
    assert set(BonusPayment.objects.values_list("state", flat=True)) == {"paid"}
    assert ledger(server, batch) == OWED and server.calls.count("pay_bonuses") == 1


def test_the_rule_is_refused_when_it_would_pay_twice_or_is_not_money(server, provider, batch, query_set):
    with pytest.raises(ServiceError, match="whole cents"):
        prolific_bonuses.set_bonus_rule(batch, "flat", "0.005")
    with pytest.raises(ServiceError, match="unknown bonus rule"):
        prolific_bonuses.set_bonus_rule(batch, "per_hour", "1.00")
    prolific_bonuses.pay_bonuses(batch, provider)
    with pytest.raises(StateError, match="can no longer change"):
        prolific_bonuses.set_bonus_rule(batch, "flat", "1.00")
    with pytest.raises(ServiceError, match="cannot both be set"):
        base.make_prolific_batch(query_set, "both", bonus_rule={"kind": "flat", "amount": "0.10"})


def test_the_dashboard_counts_bonuses_with_prolifics_fee(server, provider, batch):
    before = spent(batch, 3)
    prolific_bonuses.pay_bonuses(batch, provider)
    assert spent(batch, 3) - before == Decimal("0.67")


def test_the_batch_page_previews_and_pays_once_whatever_the_clicks(
    server, provider, batch, admin_client, client, django_capture_on_commit_callbacks
):
    page = admin_client.get(f"/annotation/batches/{batch.name}/")
    html = page.content.decode()
    assert 'id="bonus-total"' in html and "<strong>$0.67</strong>" in html
    assert "$0.1665" not in html and "per check question answered right" in html
    pay = f"/annotation/batches/{batch.name}/bonuses/pay/"
    assert admin_client.get(pay).status_code == 405
    assert client.post(pay).status_code in (302, 403) and ledger(server, batch) == {}  # not a researcher

    stale = admin_client.post(pay, {"expected_total": "0.40"}, follow=True)
    assert "not the $0.40 previewed" in stale.content.decode() and ledger(server, batch) == {}
    # The pay runs as a background job (its remote calls may take minutes): the click goes to its page.
    with django_capture_on_commit_callbacks(execute=True):
        first = admin_client.post(pay, {"expected_total": "0.67"})
    job = Job.objects.get(kind="annotation.pay_bonuses")
    assert first.status_code == 302 and first["Location"] == f"/jobs/{job.pk}/"
    assert job.status == "done" and job.result["paid_now"] == 3 and job.result["amount_paid_now"] == "0.50"
    again = admin_client.post(pay, {"expected_total": "0.67"}, follow=True)  # a double click: nothing to pay
    assert "now $0.00, not the $0.67 previewed" in again.content.decode()
    assert ledger(server, batch) == OWED and server.calls.count("pay_bonuses") == 1
    assert Job.objects.filter(kind="annotation.pay_bonuses").count() == 1
    after = admin_client.get(f"/annotation/batches/{batch.name}/").content.decode()
    assert "paid already: $0.67 with fees" in after and 'id="bonus-pay"' not in after

    rule = admin_client.post(
        f"/annotation/batches/{batch.name}/bonuses/rule/", {"kind": "flat", "amount": "1"}, follow=True
    )
    assert "can no longer change" in rule.content.decode()


def test_the_api_previews_sets_and_pays_with_json_errors(
    server, provider, batch, admin_client, query_set, django_capture_on_commit_callbacks
):
    url = f"/api/annotation/batches/{batch.name}/bonuses/"
    preview = admin_client.get(url).json()
    assert preview["to_pay"] == {
        "participants": 3,
        "bonuses": "0.50",
        "fees": "0.17",
        "total": "0.67",
        "fee_rate": "0.333",
    }
    assert preview["rule"] == {"kind": "per_gold", "amount": "0.10"}
    bad = admin_client.put(url, {"kind": "flat", "amount": "-1"}, content_type="application/json")
    assert bad.status_code == 400 and "amount" in bad.json()
    moved = admin_client.post(f"{url}pay/", {"expected_total": "9.99"}, content_type="application/json")
    assert moved.status_code == 409 and "previewed" in moved.json()["detail"]
    with django_capture_on_commit_callbacks(execute=True):
        started = admin_client.post(f"{url}pay/", {"expected_total": "0.67"}, content_type="application/json")
    assert started.status_code == 202 and started.json()["kind"] == "annotation.pay_bonuses"
    done = admin_client.get(started["Location"]).json()
    assert done["status"] == "done" and done["result"]["paid_now"] == 3
    with django_capture_on_commit_callbacks(execute=True):
        repeat = admin_client.post(f"{url}pay/")
    assert repeat.status_code == 202 and admin_client.get(repeat["Location"]).json()["result"]["paid_now"] == 0
    assert ledger(server, batch) == OWED
    # A pay of this batch queued or running: a second is refused at once (409), nothing queued.
    Job.objects.filter(pk=started.json()["id"]).update(status="running")
    busy = admin_client.post(f"{url}pay/")
    assert busy.status_code == 409 and "being paid already" in busy.json()["detail"]
    assert admin_client.get("/api/annotation/batches/nope/bonuses/").status_code == 404
    local = services.create_batch("loc", services.BatchSettings(), query_set=query_set)
    refused = admin_client.post(f"/api/annotation/batches/{local.name}/bonuses/pay/")
    assert refused.status_code == 400 and "Prolific" in refused.json()["detail"]


def test_the_command_previews_and_pays(server, batch, settings):
    out = StringIO()
    call_command("prolific_bonus", batch.name, stdout=out)
    text = out.getvalue()
    assert "To pay now: 3 participant(s), $0.50 + $0.17 Prolific's fee (0.333) = $0.67" in text
    assert ledger(server, batch) == {}
    server.faults["pay_bonuses"] = ["lose_response"]
    call_command("prolific_bonus", batch.name, "--pay", stdout=out)
    assert "3 bonus(es) may have been paid" in out.getvalue()
    with pytest.raises(CommandError, match=r"cannot be confirmed unpaid before .* UTC"):  # too early
        call_command("prolific_bonus", batch.name, "--confirm-unpaid", stdout=out)
    call_command("prolific_bonus", batch.name, "--pay", stdout=out)
    assert "3 earlier payment(s) confirmed on Prolific" in out.getvalue()
    assert ledger(server, batch) == OWED
    with pytest.raises(SystemExit):
        call_command("prolific_bonus", "--help", stdout=StringIO())


def test_bonus_costs_and_rules_computed_by_hand():
    from annotation.crowd.bonus_rules import BonusRule, RuleError, Work, most, owed
    from annotation.crowd.costs import bonus_cost, provider_cost

    # Prolific: 33.3% of the total, rounded once: $0.75 -> $0.24975 -> $0.25.
    prolific = bonus_cost([Decimal("0.25"), Decimal("0.50"), Decimal("0")], "prolific")
    assert (prolific.bonuses, prolific.fees, prolific.total, prolific.participants) == (
        Decimal("0.75"),
        Decimal("0.25"),
        Decimal("1.00"),
        2,
    )
    assert bonus_cost([Decimal("1.00")], "local").total == Decimal("1.00")
    with pytest.raises(ValueError, match="whole cents"):
        bonus_cost([Decimal("0.005")], "prolific")
    # The estimate: 39 places at $0.10 ($3.90 + $1.30) and up to $3.90 of bonuses + $1.30.
    cost = provider_cost("prolific", Decimal("0.10"), 39, 1, bonuses=Decimal("3.90"))
    assert (cost.bonuses, cost.fees, cost.total) == (Decimal("3.90"), Decimal("2.60"), Decimal("10.40"))

    rule = BonusRule("per_gold", "0.05")
    work = [Work("p1", "s1", 2), Work("p1", "s1b", 1), Work("p2", "s2", 0), Work("p3", "s3", 4)]
    assert [(o.participant_id, o.amount) for o in owed(rule, work)] == [
        ("p1", Decimal("0.15")),
        ("p3", Decimal("0.20")),
    ]
    assert [o.amount for o in owed(BonusRule("flat", "0.30"), work)] == [Decimal("0.30")] * 3
    assert most(rule, 10, 3) == Decimal("1.50") and most(None, 10, 3) == Decimal("0.00")
    for kind, amount in (("flat", "0"), ("flat", "1.234"), ("tip", "1"), ("flat", "1_0")):
        with pytest.raises(RuleError):
            BonusRule(kind, amount)
