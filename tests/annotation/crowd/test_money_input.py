"""Money typed by a person (issue 41): plain ASCII dollars, bonuses bounded per participant, and a
refusal that names the field on the form, in the API (a JSON 400) and on the command line.

``Decimal`` reads ``1_0`` as 10, ``٣`` as 3 and ``０.５`` as 0.5; a $100,000 bonus was accepted with a
$533,200.53 estimate, and the $100 guard looked at a rule's unit amount, not at what a participant
can earn (a per-check-question bonus of $40 with 3 check questions is $120 for one person).
"""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.core.management import CommandError, call_command

from annotation import services
from annotation.crowd.services.batch_settings import GoldQuery
from annotation.models import Batch
from core.amounts import AmountError, parse_amount
from core.errors import ServiceError
from platforms.prolific.bonuses import services as prolific_bonuses

NOT_PLAIN = ["1_0", "٣", "０.５", "1e2", "NaN", "Infinity", "-1", "0.005", ".5", "1,5", "", " "]


@pytest.mark.parametrize("text", NOT_PLAIN)
def test_only_plain_ascii_dollars_are_amounts(text):
    with pytest.raises(AmountError, match=r"^reward: "):
        parse_amount(text, "reward")


def test_plain_dollars_are_read_exactly_within_their_range():
    assert parse_amount("12", "reward") == Decimal("12.00")
    assert parse_amount(" 0.5\t", "reward") == Decimal("0.50")
    assert parse_amount(Decimal("0.25"), "bonus") == Decimal("0.25")
    with pytest.raises(AmountError, match=r"^reward: must be at least 0.01 \(got 0.00\)"):
        parse_amount("0", "reward", minimum="0.01")
    with pytest.raises(AmountError, match=r"^budget: must be at most 10.00"):
        parse_amount("10.01", "budget", maximum="10")
    with pytest.raises(AmountError, match="not an exact amount"):
        parse_amount(0.1, "bonus")  # a float is not exact


FORM = {
    "name": "m1",
    "queries": "gq",
    "assignments_per_query": "2",
    "queries_per_hit": "3",
    "reward": "0.05",
    "gold_per_hit": "0",
}


def _api(client, **fields):
    return client.post("/api/annotation/batches/", {**FORM, **fields}, content_type="application/json")


@pytest.mark.parametrize(
    ("field", "value", "extra"),
    [
        ("reward", "1_0", {}),
        ("reward", "٣", {}),
        ("extra_budget", "０.５", {}),
        ("bonus", "1e2", {"provider": "prolific"}),
        ("bonus_rule_amount", "NaN", {"provider": "prolific", "bonus_rule_kind": "flat"}),
        ("bonus", "-1", {"provider": "prolific"}),
    ],
)
def test_the_api_and_the_form_refuse_amounts_that_are_not_plain_dollars(query_set, admin_client, field, value, extra):
    answer = _api(admin_client, **extra, **{field: value})
    assert answer.status_code == 400 and answer["Content-Type"].startswith("application/json")
    (message,) = answer.json()[field]
    assert message.startswith(f"{field.replace('_', ' ')}: ") and repr(value) in message
    page = admin_client.post("/annotation/batches/new/", {**FORM, **extra, field: value})
    assert page.status_code == 400 and repr(value).replace("'", "&#x27;") in page.content.decode()
    assert not Batch.objects.exists()


@pytest.mark.parametrize("option", ["--reward", "--bonus", "--budget"])
@pytest.mark.parametrize("value", ["1_0", "٣", "０.５", "1e2", "NaN"])
def test_the_command_refuses_amounts_that_are_not_plain_dollars(query_set, option, value):
    with pytest.raises(CommandError, match=f"argument {option}: '{value}' is not an amount of dollars"):
        call_command("create_batch", "--name", "c1", "--queries", "gq", "--provider", "prolific", option, value)
    assert not Batch.objects.exists()


def test_a_bonus_is_bounded_by_what_one_participant_can_earn(query_set, admin_client, settings):
    assert Decimal("100") == settings.BONUS_MAX_PER_PARTICIPANT_USD
    # The flat bonus: $100,000 to one participant (it was accepted with a $533,200.53 estimate).
    answer = _api(admin_client, provider="prolific", bonus="100000")
    assert answer.status_code == 400, answer.json()
    (message,) = answer.json()["__all__"]
    assert (
        message.startswith("bonus: a participant could earn up to $100000.00")
        and "BONUS_MAX_PER_PARTICIPANT" in message
    )
    with pytest.raises(CommandError, match=r"^bonus: a participant could earn up to \$100000.00"):
        call_command("create_batch", "--name", "c1", "--queries", "gq", "--provider", "prolific", "--bonus", "100000")
    # Per check question: $40 × 3 check questions of the one HIT a participant can take is $120, over $100
    # though the unit amount is under it; $33 × 3 = $99 is within.
    gold = "g1\twho was the first king of france\tm\ng2\tqueen of england in 1600\tf\ng3\tpope in 1500\tm\n"
    rule = {"provider": "prolific", "gold_per_hit": "3", "bonus_rule_kind": "per_gold"}
    files = {"gold": _upload(gold)}
    answer = admin_client.post("/api/annotation/batches/", {**FORM, **rule, "bonus_rule_amount": "40", **files})
    assert answer.status_code == 400
    (message,) = answer.json()["__all__"]
    assert message.startswith(
        "bonus rule amount: a participant could earn up to $120.00 in bonuses from this batch "
        "($40.00 × 3 check question(s) × 1 assignment(s) a participant can take)"
    )
    files = {"gold": _upload(gold)}
    answer = admin_client.post("/api/annotation/batches/", {**FORM, **rule, "bonus_rule_amount": "33", **files})
    assert answer.status_code == 201, answer.content
    # The maximum is a setting.
    settings.BONUS_MAX_PER_PARTICIPANT_USD = Decimal("150")
    files = {"gold": _upload(gold)}
    answer = admin_client.post(
        "/api/annotation/batches/", {**FORM, **rule, "name": "m2", "bonus_rule_amount": "40", **files}
    )
    assert answer.status_code == 201, answer.content


def _upload(text: str):
    from django.core.files.uploadedfile import SimpleUploadedFile

    return SimpleUploadedFile("gold.tsv", text.encode())


def test_setting_a_rule_later_is_bounded_and_plain_on_the_page_the_api_and_the_command(query_set, admin_client):
    settings = services.BatchSettings(
        provider="prolific", assignments_per_query=2, queries_per_hit=3, reward=Decimal("0.90"), gold_per_hit=2
    )
    gold = [GoldQuery("g1", "who was the first king of france", "m"), GoldQuery("g2", "queen of england", "f")]
    batch = services.create_batch("later", settings, query_set=query_set, gold=gold)
    with pytest.raises(ServiceError, match=r"^bonus rule amount: a participant could earn up to \$120.00"):
        prolific_bonuses.set_bonus_rule(batch, "per_gold", "60")
    answer = admin_client.put(
        f"/api/annotation/batches/{batch.name}/bonuses/",
        {"kind": "per_gold", "amount": "٣"},
        content_type="application/json",
    )
    assert answer.status_code == 400 and answer.json()["amount"][0].startswith("amount: '٣' is not an amount")
    answer = admin_client.put(
        f"/api/annotation/batches/{batch.name}/bonuses/",
        {"kind": "flat", "amount": "100.01"},
        content_type="application/json",
    )
    assert answer.status_code == 400 and "above the maximum of $100.00" in answer.json()["detail"]
    with pytest.raises(CommandError, match="bonus rule amount: '1_0' is not an amount of dollars"):
        call_command("prolific_bonus", batch.name, "--rule", "flat:1_0")
    page = admin_client.post(f"/annotation/batches/{batch.name}/bonuses/rule/", {"kind": "flat", "amount": "０.５"})
    assert page.status_code == 302
    batch.refresh_from_db()
    assert "bonus_rule" not in batch.provider_options  # nothing was set by any of them
    assert prolific_bonuses.set_bonus_rule(batch, "per_gold", "50").amount == Decimal("50.00")  # $100: within
