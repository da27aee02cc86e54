"""A batch's bonus rule and what it owes each participant: pure computation, no Django.

A batch may promise a bonus for approved work: ``flat`` (``amount`` dollars once per participant) or
``per_gold`` (per check question answered right). Kept in the batch's options as ``bonus_rule``; the
older flat ``bonus`` is such a rule paid at every sync, read as one :class:`BonusRule` so that there is
one way to pay, record and count a bonus. Money: ``Decimal``, whole cents.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from decimal import Decimal

from core.amounts import AmountError, parse_amount

KINDS = {
    "flat": "a flat bonus for approved work",
    "per_gold": "a bonus per check question answered right in approved work",
}
CENT = Decimal("0.01")
#: Participants per bulk bonus on Prolific (it pays up to 200 per request): one charge, one fee, each.
BULK_SIZE = 200
#: The largest amount a rule may name (what a ``BonusPayment`` holds: 8 digits, 2 decimals).
MAX_AMOUNT = Decimal("999999.99")


class RuleError(ValueError):
    """A bonus rule that cannot be paid (unknown kind, not whole cents, out of range)."""


@dataclass(frozen=True)
class BonusRule:
    kind: str
    amount: Decimal
    #: Paid at every sync (the older ``--bonus``), not only when a person pays it.
    at_sync: bool = False
    #: The field the amount came from, named in a refusal ("bonus rule amount", "bonus"); not part of the rule.
    field: str = dataclass_field(default="bonus rule amount", compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise RuleError(f"unknown bonus rule kind {self.kind!r}; use {' or '.join(KINDS)}")
        try:
            amount = parse_amount(self.amount, self.field, minimum=CENT, maximum=MAX_AMOUNT)
        except AmountError as exc:
            raise RuleError(str(exc)) from None
        if not isinstance(self.at_sync, bool):
            raise RuleError("bonus rule: at_sync must be true or false")
        object.__setattr__(self, "amount", amount)

    @classmethod
    def from_options(cls, options: Mapping | None) -> BonusRule | None:
        """:func:`rule_of_options`."""
        return rule_of_options(options)

    def as_options(self) -> dict:
        stored: dict = {"kind": self.kind, "amount": str(self.amount)}
        if self.at_sync:
            stored["at_sync"] = True
        return stored

    def describe(self) -> str:
        when = ", paid at every sync" if self.at_sync else ""
        if self.kind == "flat":
            return f"${self.amount} to every participant whose work was approved{when}"
        return f"${self.amount} per check question answered right in approved work{when}"


def rule_of_options(options: Mapping | None) -> BonusRule | None:
    """The batch's one bonus rule from its options (``bonus_rule``, or the older flat ``bonus``: ``0``
    or empty is none), or None. Both at once are refused: they would pay twice."""
    options = options or {}
    stored, flat = options.get("bonus_rule"), options.get("bonus")
    if flat not in (None, ""):
        try:
            flat_amount = parse_amount(flat, "bonus", maximum=MAX_AMOUNT)
        except AmountError as exc:
            raise RuleError(str(exc)) from None
        if flat_amount > 0:
            if stored:
                raise RuleError("bonus and bonus rule cannot both be set (they would pay twice): choose one")
            return BonusRule("flat", flat_amount, at_sync=True, field="bonus")
    if not stored:
        return None
    if not isinstance(stored, Mapping):
        raise RuleError("bonus rule must be an object with kind and amount")
    return BonusRule(str(stored.get("kind", "")), stored.get("amount", ""), at_sync=stored.get("at_sync", False))


def participant_most(rule: BonusRule | None, assignments_per_participant: int, gold_per_hit: int) -> Decimal:
    """The most one participant can earn from ``rule`` with ``assignments_per_participant`` assignments
    of ``gold_per_hit`` check questions each, every one right.

    >>> participant_most(BonusRule("per_gold", Decimal("0.50")), 1, 3)
    Decimal('1.50')
    """
    if rule is None:
        return Decimal("0.00")
    if rule.kind == "flat":
        return rule.amount
    return (rule.amount * max(0, assignments_per_participant) * max(0, gold_per_hit)).quantize(CENT)


def check_participant_most(
    rule: BonusRule | None, assignments_per_participant: int, gold_per_hit: int, maximum: Decimal
) -> None:
    """Refuse (:class:`RuleError`) a rule under which one participant could earn more than ``maximum``."""
    most_one = participant_most(rule, assignments_per_participant, gold_per_hit)
    if rule is None or most_one <= maximum:
        return
    if rule.kind == "flat":
        how = f"${rule.amount} to each approved participant"
    else:
        how = (
            f"${rule.amount} × {max(0, gold_per_hit)} check question(s) × {assignments_per_participant} "
            "assignment(s) a participant can take"
        )
    raise RuleError(
        f"{rule.field}: a participant could earn up to ${most_one} in bonuses from this batch ({how}), above the "
        f"maximum of ${Decimal(maximum).quantize(CENT)} per participant (setting BONUS_MAX_PER_PARTICIPANT_USD)"
    )


@dataclass(frozen=True)
class Work:
    """One participant's approved work in a batch (on Prolific: one submission per study)."""

    participant_id: str
    submission_id: str
    gold_correct: int = 0


@dataclass(frozen=True)
class Owed:
    participant_id: str
    submission_id: str
    amount: Decimal
    reason: str


def owed(rule: BonusRule, work: Iterable[Work]) -> list[Owed]:
    """What ``rule`` owes for ``work``, one row per participant (their approved work summed), zeros left out.

    >>> owed(BonusRule("per_gold", Decimal("0.10")), [Work("p1", "s1", 2), Work("p2", "s2", 0)])
    [Owed(participant_id='p1', submission_id='s1', amount=Decimal('0.20'), reason='2 check question(s) right')]
    """
    by_participant: dict[str, list[Work]] = {}
    for item in work:
        by_participant.setdefault(item.participant_id, []).append(item)
    rows = []
    for participant in sorted(by_participant):
        items = by_participant[participant]
        if rule.kind == "flat":
            amount, reason = rule.amount, "approved work"
        else:
            right = sum(max(0, int(i.gold_correct)) for i in items)
            amount, reason = rule.amount * right, f"{right} check question(s) right"
        if amount > 0:
            rows.append(Owed(participant, items[0].submission_id, amount.quantize(CENT), reason))
    return rows


def most(rule: BonusRule | None, assignments: int, gold_per_hit: int) -> Decimal:
    """The most ``rule`` can cost over ``assignments`` approved assignments (the cost estimate's bonus part)."""
    if rule is None or assignments <= 0:
        return Decimal("0.00")
    if rule.kind == "flat":
        return (rule.amount * assignments).quantize(CENT)
    return (rule.amount * assignments * max(0, gold_per_hit)).quantize(CENT)
