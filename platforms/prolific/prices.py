"""Prolific's prices (pure: no Django): its platform fee, a share of the total paid to participants.

33.3% for academic and non-profit accounts, 42.8% otherwise (prolific.com/pricing), VAT on top (in
Prolific's own cost calculator). The share is charged on the total, so it is rounded half-up to the cent
once per charge: a study's rewards, and each bulk bonus payment (docs/prolific.md, "Bonuses").
``per_assignment_fee`` is that total's average per place, for display.
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

from annotation.crowd.costs import CENT, Cost, share_of_total

ACADEMIC_FEE_RATE = Decimal("0.333")


def fee_rate(account_fee_rate: Decimal | str | None) -> Decimal:
    """The account's fee rate: its own where given, else the academic rate (33.3%)."""
    return ACADEMIC_FEE_RATE if account_fee_rate is None else Decimal(account_fee_rate)


def work_cost(reward: Decimal, count: int, account_fee_rate: Decimal | str | None = None) -> Cost:
    """``count`` places at ``reward``: the fee a share of the total paid, rounded once.

    >>> work_cost(Decimal("0.10"), 39).total
    Decimal('5.20')
    """
    return share_of_total(reward, fee_rate(account_fee_rate), count)


def bonus_fees(paid: list[Decimal], account_fee_rate: Decimal | str | None = None) -> tuple[Decimal, Decimal]:
    """The same share on bonuses ("our regular pricing structure also applies to bonus payments"), on
    the total: ``(rate, fee)``.

    >>> bonus_fees([Decimal("0.10")] * 3)
    (Decimal('0.333'), Decimal('0.10'))
    """
    rate = fee_rate(account_fee_rate)
    return rate, (sum(paid, Decimal("0.00")) * rate).quantize(CENT, rounding=ROUND_HALF_UP)
