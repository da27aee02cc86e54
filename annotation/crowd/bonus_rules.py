"""A batch's bonus rule and what it owes each participant: pure computation, no Django.

A Prolific batch may promise a bonus for careful work. The rule is one of

- ``flat``: ``amount`` dollars to every participant whose work was approved;
- ``per_gold``: ``amount`` dollars per check question (gold) answered right in approved work.

Only approved work earns a bonus (rejected, returned and void work never does). The rule is
kept in the batch's Prolific options (``bonus_rule``: ``{"kind": ..., "amount": "0.20"}``);
:func:`owed` turns it and the participants' approved work into one amount per participant,
which the service records as the intent before anything is paid
(``annotation.crowd.services.prolific_bonuses``), and :func:`most` gives the largest sum the
rule can cost for the batch's cost estimate. Money is ``Decimal``, whole cents.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

KINDS = {
    "flat": "a flat bonus for approved work",
    "per_gold": "a bonus per check question answered right in approved work",
}
CENT = Decimal("0.01")
#: A bonus above this per participant is refused as a likely typo (Prolific pays it at once).
MAX_PER_PARTICIPANT = Decimal("100.00")


class RuleError(ValueError):
    """A bonus rule that cannot be paid (unknown kind, not whole cents, out of range)."""


@dataclass(frozen=True)
class BonusRule:
    kind: str
    amount: Decimal

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise RuleError(f"unknown bonus rule {self.kind!r}; use {' or '.join(KINDS)}")
        try:
            amount = Decimal(self.amount)
        except (InvalidOperation, TypeError, ValueError):
            raise RuleError(f"bonus amount {self.amount!r} is not an amount of dollars") from None
        if not amount.is_finite() or amount <= 0 or amount != amount.quantize(CENT):
            raise RuleError(f"the bonus amount must be whole cents, above 0 (got {self.amount})")
        if amount > MAX_PER_PARTICIPANT:
            raise RuleError(f"a bonus amount above ${MAX_PER_PARTICIPANT} is refused (got {amount})")
        object.__setattr__(self, "amount", amount)

    @classmethod
    def from_options(cls, options: Mapping | None) -> BonusRule | None:
        """The rule stored in a batch's Prolific options, or None (no rule)."""
        stored = (options or {}).get("bonus_rule")
        if not stored:
            return None
        if not isinstance(stored, Mapping):
            raise RuleError("bonus_rule must be an object with kind and amount")
        return cls(str(stored.get("kind", "")), stored.get("amount", ""))

    def as_options(self) -> dict[str, str]:
        return {"kind": self.kind, "amount": str(self.amount)}

    def describe(self) -> str:
        if self.kind == "flat":
            return f"${self.amount} to every participant whose work was approved"
        return f"${self.amount} per check question answered right in approved work"


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
    """The most ``rule`` can cost over ``assignments`` approved assignments with ``gold_per_hit``
    check questions each (every one right): the bonus part of the batch's cost estimate."""
    if rule is None or assignments <= 0:
        return Decimal("0.00")
    if rule.kind == "flat":
        return (rule.amount * assignments).quantize(CENT)
    return (rule.amount * assignments * max(0, gold_per_hit)).quantize(CENT)
