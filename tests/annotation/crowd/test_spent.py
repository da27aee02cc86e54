"""Money figures that add up (issue 41): every spend figure equals what the platform charged.

The dashboard, the batch list, the batch page, the dataset card and the methods text each show
what a batch spent; each is read here where a person reads it (pages through the test client, the
card and the methods text from their builders) and compared with what the provider's test server
charged: Prolific's for approved submissions (rewards with its fee on their total) and each bulk
bonus (with its own fee); MTurk's in tests/platforms/mturk/test_mturk_spent.py. Every figure is also computed by hand. Before, the dashboard priced
answered work at the estimate's average, which holds the bonus rule's most, and then added the
bonuses paid: a batch with bonuses was counted twice.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from annotation import services
from annotation.crowd.selectors import spent
from annotation.crowd.services.sync import sync_batch
from annotation.models import Batch
from platforms.inhouse.services.annotators import create_annotator
from platforms.inhouse.services.handout import next_assignment
from platforms.inhouse.services.hit_page import submit_local_assignment
from platforms.prolific.bonuses import services as prolific_bonuses
from tests.annotation.spent_figures import shown
from tests.platforms.prolific import test_prolific as base
from tests.platforms.prolific import test_prolific_bonus as bonus_tests
from tests.platforms.prolific.fake_server import hexid
from tests.platforms.prolific.test_prolific import Participant, _publish

server, provider, sleeps, client_class = base.server, base.provider, base.sleeps, base.client_class


@pytest.fixture
def prolific_batch(query_set, server, provider, client_class):
    """Test_prolific_bonus's batch: 3 participants approved at $0.90, PID3 rejected; bonus rule $0.10
    per check question right: $0.20 + $0.10 + $0.20 owed."""
    batch = _publish(bonus_tests.make_batch(query_set), provider)
    people = [Participant(server, batch.hit_type_id, hexid(f"PID{i}"), client_class) for i in range(1, 5)]
    for person, override in zip(people, [{}, {"g1": "f"}, {"g1": "f", "g2": "m"}, {}], strict=True):
        person.answer(override=override)
        person.complete()
    assert sync_batch(batch, provider).platform.approved == 3
    batch.refresh_from_db()
    return batch


def test_every_figure_of_a_prolific_batch_is_what_prolific_charged(
    prolific_batch, server, provider, researcher, client, tmp_path
):
    client.force_login(researcher)
    # Rewards: 3 × $0.90 = $2.70, Prolific's 33.3% on that total: $0.8991 -> $0.90.
    assert spent(prolific_batch) == server.charged(prolific_batch.hit_type_id) == Decimal("3.60")
    assert set(shown(client, prolific_batch, tmp_path).values()) == {"3.60"}
    # The estimate recorded at creation holds the rule's most; it is never what was spent.
    assert Decimal(prolific_batch.cost["total"]) > Decimal("3.60")

    prolific_bonuses.pay_bonuses(prolific_batch, provider)
    # Bonuses $0.50 in one bulk, its fee $0.1665 -> $0.17: $0.67 more, counted once.
    assert server.charged(prolific_batch.hit_type_id) == Decimal("4.27")
    assert set(shown(client, prolific_batch, tmp_path).values()) == {"4.27"}
    prolific_bonuses.pay_bonuses(prolific_batch, provider)  # nothing more owed: nothing more spent
    assert spent(prolific_batch) == server.charged(prolific_batch.hit_type_id) == Decimal("4.27")


def test_a_flat_bonus_paid_at_sync_is_counted_once(
    query_set, server, provider, client_class, researcher, client, tmp_path
):
    """The older --bonus: $0.25 to each approved participant, paid at every sync (now the flat rule)."""
    client.force_login(researcher)
    batch = _publish(base.make_prolific_batch(query_set, "flat"), provider)  # $0.90 reward, bonus $0.25
    for i in (1, 2, 3):
        person = Participant(server, batch.hit_type_id, hexid(f"FL{i}"), client_class)
        person.answer()
        person.complete()
    sync_batch(batch, provider)
    sync_batch(batch, provider)  # a second sync pays nobody again
    # 3 × $0.90 + $0.90 fee; bonuses 3 × $0.25 = $0.75 + $0.24975 -> $0.25 in one bulk: $4.60.
    assert server.charged(batch.hit_type_id) == Decimal("4.60") == spent(batch)
    assert set(shown(client, batch, tmp_path).values()) == {"4.60"}


def test_every_figure_of_an_in_house_batch_is_its_rewards(query_set, researcher, client, tmp_path):
    """In-house annotators are paid outside the site, with no platform fee: the rewards of answered work."""
    client.force_login(researcher)
    batch = services.create_batch(
        "house",
        services.BatchSettings(provider="local", assignments_per_query=2, queries_per_hit=3, reward=Decimal("0.05")),
        query_set=query_set,
    )
    services.publish_batch(batch)
    for name in ("ann-a", "ann-b"):
        worker = create_annotator(name, password="pw-secret-123")
        assignment = next_assignment(worker, batch)
        submit_local_assignment(assignment, {hq.field_name: "n" for hq in assignment.hit.hit_queries.all()})
    assert spent(batch) == Decimal("0.10")  # 2 answered × $0.05
    assert set(shown(client, batch, tmp_path).values()) == {"0.10"}


def test_prolifics_fee_is_rounded_once_per_charge_as_the_docs_say():
    """docs/prolific.md: the fee is PROLIFIC_FEE_RATE of a charge's total, rounded half-up once: a
    study's rewards, each bulk bonus. Three $0.10 bonuses in one bulk: 33.3% of $0.30 = $0.0999 ->
    $0.10 (rounded per participant: 3 × $0.0333 -> 3 × $0.03 = $0.09); the same three in three
    bulks: $0.09. Rewards: 3 × $0.25 = $0.75, 33.3% = $0.24975 -> $0.25 (per place: $0.24)."""
    from annotation.crowd.costs import bonus_costs, spent_on

    ten = Decimal("0.10")
    assert bonus_costs([[ten, ten, ten]], "prolific", account_fee_rate=Decimal("0.333")).fees == Decimal("0.10")
    assert bonus_costs([[ten], [ten], [ten]], "prolific", account_fee_rate=Decimal("0.333")).fees == Decimal("0.09")
    done = spent_on(
        "prolific",
        Decimal("0.25"),
        3,
        assignments_per_hit=1,
        account_fee_rate=Decimal("0.333"),
        bonus_charges=[[ten, ten, ten]],
    )
    assert (done.rewards, done.reward_fees, done.bonuses, done.bonus_fees) == (
        Decimal("0.75"),
        Decimal("0.25"),
        Decimal("0.30"),
        Decimal("0.10"),
    )
    assert done.total == Decimal("1.40")


@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
def test_the_older_bonus_rows_and_option_become_the_one_system_counted_once(query_set):
    """Migration 0023: a batch's --bonus becomes the flat rule paid at sync, each Bonus row a
    BonusPayment with its amount, bulk, pay time and state; spent counts each once."""
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    before = [("annotation", "0022_prolific_webhooks_confirmed")]
    executor = MigrationExecutor(connection)
    executor.migrate(before)
    old = executor.loader.project_state(before).apps
    Batch_, Hit_, Identity, Worker_, Assignment_, Bonus = (
        old.get_model("annotation", name)
        for name in ("Batch", "Hit", "WorkerIdentity", "Worker", "Assignment", "Bonus")
    )
    batch = Batch_.objects.create(
        name="old",
        query_set_id=query_set.pk,
        provider="prolific",
        reward=Decimal("0.90"),
        assignments_per_query=2,
        queries_per_hit=3,
        provider_options={"estimated_minutes": 4, "bonus": "0.25"},
        cost={"total": "6.13", "assignments_total": 4},
        hit_type_id="study1",
        lifetime=dt.timedelta(days=7),
        assignment_duration=dt.timedelta(minutes=30),
        auto_approval_delay=dt.timedelta(days=3),
    )
    hit = Hit_.objects.create(batch=batch, position=1, unique_token="t1", max_assignments=2)
    when = dt.datetime(2026, 1, 2, tzinfo=dt.UTC)
    states = {}
    for i, (paid, attempted, bulk) in enumerate([(True, when, "b1"), (False, when, "b2"), (False, None, "")]):
        identity = Identity.objects.create(provider="prolific", external_id=f"pid{i}")
        worker = Worker_.objects.create(identity=identity, pseudonym=f"w{i}", provider="prolific")
        assignment = Assignment_.objects.create(
            hit=hit, worker=worker, provider_assignment_id=f"s{i}", status="approved"
        )
        Bonus.objects.create(
            assignment=assignment, amount=Decimal("0.25"), paid=paid, pay_attempted=attempted, bulk_id=bulk
        )
        states[f"pid{i}"] = ("paid", "paying", "owed")[i]

    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())

    from annotation.models import BonusPayment

    batch = Batch.objects.get(name="old")
    assert batch.provider_options == {
        "estimated_minutes": 4,
        "bonus_rule": {"kind": "flat", "amount": "0.25", "at_sync": True},
    }
    rows = {r.participant_id: r for r in BonusPayment.objects.filter(batch=batch)}
    assert {pid: r.state for pid, r in rows.items()} == states
    assert rows["pid0"].paid_at == when and rows["pid1"].pay_attempted == when and rows["pid1"].bulk_id == "b2"
    assert all(r.amount == Decimal("0.25") and r.assignment_id is None for r in rows.values())
    # Sent: one paid bulk and one unconfirmed ($0.25 + $0.08325 -> $0.08 each); 0 answered counted here.
    assert spent(batch, 0) == Decimal("0.66")
