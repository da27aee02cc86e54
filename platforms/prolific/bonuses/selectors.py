"""A Prolific batch's bonus rule and its preview: what it owes each participant and what a pay would cost."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from decimal import Decimal

from django.conf import settings
from django.utils import timezone

from annotation.crowd.bonus_rules import BULK_SIZE, BonusRule, Owed, RuleError, Work, owed
from annotation.crowd.costs import BonusCost, bonus_costs
from annotation.crowd.providers.base import platform_label, provider_class, provider_names
from annotation.models import Assignment, Batch, BonusPayment
from core.errors import ServiceError


def bonus_rule(batch: Batch) -> BonusRule | None:
    try:
        return BonusRule.from_options(batch.provider_options)
    except RuleError as exc:
        raise ServiceError(f"batch {batch.name!r}: {exc}") from None


def check_pays_bonus_rules(batch: Batch) -> None:
    """Refuse a batch whose platform pays no bonus rule (``CrowdProvider.pays_bonus_rules``)."""
    if not provider_class(batch.provider).pays_bonus_rules:
        payers = [platform_label(name) for name in provider_names() if provider_class(name).pays_bonus_rules]
        raise ServiceError(
            f"batch {batch.name!r} runs on {platform_label(batch.provider)}, which pays no bonus rule "
            f"(bonus rules are paid on: {', '.join(payers) or 'no platform installed'})"
        )


def approved_work(batch: Batch) -> list[Work]:
    """The batch's approved Prolific work, one entry per assignment (its submission, its check questions right)."""
    rows = (
        Assignment.objects.filter(hit__batch=batch, status=Assignment.Status.APPROVED)
        .select_related("worker__identity")
        .order_by("pk")
    )
    return [Work(a.worker.identity.external_id, a.provider_assignment_id, a.gold_correct or 0) for a in rows]


@dataclass
class BonusPreview:
    """What the rule owes and what paying costs, before anything is paid."""

    rule: BonusRule | None
    #: One row per participant: participant, submission, amount, reason, state ("new": not recorded yet).
    rows: list[dict] = field(default_factory=list)
    #: The bonuses a pay would send now (new and recorded but not yet paid), with Prolific's fee.
    to_pay: BonusCost | None = None
    #: The bonuses paid already, with their fee.
    paid: BonusCost | None = None
    #: Rows whose pay call lost its answer and Prolific does not show yet.
    unconfirmed: int = 0
    #: Of ``unconfirmed``: rows past ``PROLIFIC_BONUS_SETTLE_SECONDS`` since their pay call (a person confirms them).
    needs_person: int = 0


def newly_owed(batch: Batch, rule: BonusRule | None) -> list[Owed]:
    """What ``rule`` owes participants it has no record for yet (its rows: no assignment named)."""
    if rule is None:
        return []
    recorded = set(batch.bonus_payments.filter(assignment=None).values_list("participant_id", flat=True))
    return [o for o in owed(rule, approved_work(batch)) if o.participant_id not in recorded]


def preview_bonuses(batch: Batch) -> BonusPreview:
    """The rule's bonuses per participant, what a pay would send now and its cost with Prolific's fee. Reads only."""
    check_pays_bonus_rules(batch)
    rule = bonus_rule(batch)
    recorded = list(batch.bonus_payments.order_by("participant_id"))
    new = newly_owed(batch, rule)
    rows = [
        {
            "participant": row.participant_id,
            "submission": row.submission_id,
            "amount": row.amount,
            "reason": row.reason,
            "state": state,
        }
        for row, state in [*((r, r.state) for r in recorded), *((o, "new") for o in new)]
    ]
    rows.sort(key=lambda row: row["participant"])
    # What a pay would send, bulk by bulk as charged (one fee each): set-up bulks no other pay claimed,
    # then owed rows and new work, set up afresh BULK_SIZE at a time.
    claimed = {r.bulk_id for r in recorded if r.state != BonusPayment.State.SET_UP and r.bulk_id}
    set_up: dict[str, list[Decimal]] = {}
    for r in recorded:
        if r.state == BonusPayment.State.SET_UP and r.bulk_id not in claimed:
            set_up.setdefault(r.bulk_id, []).append(r.amount)
    fresh = [r.amount for r in sorted(recorded, key=lambda r: r.pk) if r.state == BonusPayment.State.OWED]
    fresh += [o.amount for o in new]
    to_pay = [*set_up.values(), *(fresh[i : i + BULK_SIZE] for i in range(0, len(fresh), BULK_SIZE))]
    paid: dict[str, list[Decimal]] = {}
    for r in recorded:
        if r.state == BonusPayment.State.PAID:
            paid.setdefault(r.bulk_id or str(r.pk), []).append(r.amount)
    paying = [r for r in recorded if r.state == BonusPayment.State.PAYING]
    settle = dt.timedelta(seconds=settings.PROLIFIC_BONUS_SETTLE_SECONDS)
    return BonusPreview(
        rule=rule,
        rows=rows,
        to_pay=bonus_costs(to_pay, batch.provider),
        paid=bonus_costs(list(paid.values()), batch.provider),
        unconfirmed=len(paying),
        needs_person=sum(1 for r in paying if r.pay_attempted is None or timezone.now() - r.pay_attempted >= settle),
    )
