"""Money typed by a person, read as exact dollars: plain ASCII decimals, nothing else. Pure module.

Python's ``Decimal`` (and so Django's and DRF's ``DecimalField``) reads ``1_0`` as 10, ``٣`` as 3,
``０.５`` as 0.5, and takes ``1e2`` and ``NaN``: an amount other than the one on screen.
:func:`parse_amount` is the one reading of an amount for every input.
"""

from __future__ import annotations

import re
from decimal import Decimal

#: ASCII digits only (``\d`` would match every Unicode digit), at most two decimals, at most
#: twelve digits before the point (more than any amount here, and a bound on what is read).
AMOUNT = re.compile(r"[0-9]{1,12}(?:\.[0-9]{1,2})?")
CENT = Decimal("0.01")
#: What a person may type around an amount (ASCII spaces and tabs, no other white space).
AROUND = " \t"


class AmountError(ValueError):
    """An amount that is not plain dollars, or out of its range; ``str()`` names the field."""

    def __init__(self, field: str, problem: str) -> None:
        self.field = field
        self.problem = problem
        super().__init__(f"{field}: {problem}")


def parse_amount(
    value: object,
    field: str,
    *,
    minimum: Decimal | str = "0",
    maximum: Decimal | str | None = None,
) -> Decimal:
    """``value`` as whole-cent dollars in ``[minimum, maximum]``, or :class:`AmountError` naming ``field``.

    A string must be ASCII digits with at most one point and two decimals (``0.5``, ``12.00``;
    not ``1_0``, ``٣``, ``０.５``, ``1e2``, ``-1``, ``NaN``, ``.5``); an ``int`` or a ``Decimal`` (an amount
    the code already holds) must be finite whole cents. Floats are refused: they are not exact.

    >>> parse_amount("0.5", "bonus")
    Decimal('0.50')
    >>> parse_amount("12", "reward", minimum="0.01")
    Decimal('12.00')
    """
    low = Decimal(minimum)
    high = Decimal(maximum) if maximum is not None else None
    if isinstance(value, (bool, float)):
        raise AmountError(field, f"{value!r} is not an exact amount of dollars: give it as text, like 0.50")
    if isinstance(value, int):
        amount = Decimal(value)
    elif isinstance(value, Decimal):
        if not value.is_finite() or value != value.quantize(CENT, rounding="ROUND_DOWN"):
            raise AmountError(field, f"{value} is not whole cents")
        amount = value
    elif isinstance(value, str):
        text = value.strip(AROUND)
        if not AMOUNT.fullmatch(text):
            shown = value if len(value) <= 40 else value[:40] + "…"
            raise AmountError(
                field,
                f"{shown!r} is not an amount of dollars: use ASCII digits with at most two decimals (whole cents), like 0.50",
            )
        amount = Decimal(text)
    else:
        raise AmountError(field, f"expected an amount of dollars, got {type(value).__name__}")
    amount = amount.quantize(CENT)
    if amount < low:
        raise AmountError(field, f"must be at least {low.quantize(CENT)} (got {amount})")
    if high is not None and amount > high:
        raise AmountError(field, f"must be at most {high.quantize(CENT)} (got {amount})")
    return amount
