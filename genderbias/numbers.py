"""Whole numbers typed by a person: plain ASCII decimals inside a stated range. Pure module.

Python reads far more than a person means: ``int("١٠")``, ``int("1_0")`` and ``int("+10")`` are 10,
``"²".isdigit()`` is true (and ``int("²")`` raises, a 500 wherever ``isdigit`` was trusted), and
``int("9" * 5000)`` refuses only past the interpreter's limit. :func:`parse_count` (one whole number),
:func:`parse_counts` (a bounded comma-separated list) and :func:`parse_decimal` are the one reading of what a
form, the API and a command take (``core.forms``, ``core.serializers``, ``core.management.cli``), each refusing
with a :class:`NumberError` naming the field and the bound. Amounts of money: :mod:`core.amounts`.
"""

from __future__ import annotations

import re

__all__ = ["DIGITS", "NumberError", "parse_count", "parse_counts", "parse_decimal"]

#: ASCII digits only (``\d`` and ``str.isdigit`` accept every Unicode digit and superscript).
MAX_DIGITS = 18
DIGITS = re.compile(rf"[0-9]{{1,{MAX_DIGITS}}}")
#: A decimal as people type and paste it: an optional sign, ASCII digits with at most one point (digits
#: on at least one side: ``.5``, ``1.``, ``0.055174522848548305``), an optional exponent (``1e-3``).
DECIMAL = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
#: The longest decimal read (a bound on the work; a float's full repr is at most 24 characters).
MAX_DECIMAL_LENGTH = 100
#: What a person may type around a number (ASCII spaces and tabs).
AROUND = " \t"


class NumberError(ValueError):
    """A number that is not plain ASCII digits, or out of its range; ``str()`` names the field."""

    def __init__(self, field: str, problem: str) -> None:
        self.field = field
        self.problem = problem
        super().__init__(f"{field}: {problem}")


def _shown(value: str) -> str:
    return repr(value if len(value) <= 40 else value[:40] + "…")


def parse_count(value: object, field: str, *, minimum: int = 0, maximum: int) -> int:
    """``value`` as a whole number in ``[minimum, maximum]``, or :class:`NumberError` naming ``field``.

    A string must be ASCII digits (``10``, ``007``; not ``+10``, ``1_0``, ``١٠``, ``²``, ``①``,
    ``1e3``, ``10.0``); an ``int`` (not a bool) is taken as it is.

    >>> parse_count(" 10 ", "cutoff", minimum=1, maximum=100)
    10
    """
    if isinstance(value, bool):
        raise NumberError(field, f"{value!r} is not a whole number")
    if isinstance(value, int):
        number = value
    elif isinstance(value, str):
        text = value.strip(AROUND)
        if not DIGITS.fullmatch(text):
            if text.isascii() and text.isdigit():  # more digits than any bound: say the bound
                raise NumberError(field, f"must be at most {maximum} (got a {len(text)}-digit number)")
            raise NumberError(field, f"{_shown(value)} is not a whole number: use ASCII digits 0-9, like 10")
        number = int(text)
    else:
        raise NumberError(field, f"expected a whole number, got {type(value).__name__}")
    if number < minimum:
        raise NumberError(field, f"must be at least {minimum} (got {number})")
    if number > maximum:
        raise NumberError(field, f"must be at most {maximum} (got {number})")
    return number


def parse_counts(text: object, field: str, *, minimum: int = 0, maximum: int, most: int) -> tuple[int, ...]:
    """``"5,10,20"`` → ``(5, 10, 20)``: sorted, distinct, each by :func:`parse_count`, at least one and
    at most ``most`` of them; empty parts are skipped. :class:`NumberError` naming ``field`` otherwise."""
    if not isinstance(text, str):
        raise NumberError(field, f"expected comma-separated whole numbers, got {type(text).__name__}")
    parts = [part for part in text.split(",") if part.strip(AROUND)]
    if not parts:
        raise NumberError(field, "give at least one value, e.g. 1,2,3")
    if len(parts) > most:
        raise NumberError(field, f"at most {most} values (got {len(parts)})")
    values = {parse_count(part, field, minimum=minimum, maximum=maximum) for part in parts}
    return tuple(sorted(values))


def parse_decimal(value: object, field: str, *, minimum: float | None = None, maximum: float | None = None) -> float:
    """``value`` as a plain decimal number in ``[minimum, maximum]`` (either bound optional), or
    :class:`NumberError` naming ``field``: a string as people paste it (``.5``, ``+0.5``, ``1e-3``, a float's
    every decimal; at most :data:`MAX_DECIMAL_LENGTH` characters), never ``nan``, ``inf``, ``١.٥``, ``1_0``,
    ``0x1`` nor beyond a float's range; an int or a finite float is taken as it is.

    >>> parse_decimal("0.95", "target_accuracy", minimum=0, maximum=1)
    0.95
    """
    import math

    if isinstance(value, bool):
        raise NumberError(field, f"{value!r} is not a number")
    if isinstance(value, (int, float)):
        if not math.isfinite(value):
            raise NumberError(field, f"{value!r} is not a finite number")
        number = float(value)
    elif isinstance(value, str):
        text = value.strip(AROUND)
        if len(text) > MAX_DECIMAL_LENGTH:
            raise NumberError(
                field, f"{_shown(value)} is not a decimal number of at most {MAX_DECIMAL_LENGTH} characters"
            )
        if not DECIMAL.fullmatch(text):
            raise NumberError(
                field,
                f"{_shown(value)} is not a decimal number: use ASCII digits, a point and an exponent, like 0.5 or 1e-3",
            )
        number = float(text)
        if not math.isfinite(number):
            raise NumberError(field, f"{_shown(value)} is too large for a number (at most about 1.8e308)")
    else:
        raise NumberError(field, f"expected a number, got {type(value).__name__}")
    if minimum is not None and number < minimum:
        raise NumberError(field, f"must be at least {minimum:g} (got {number:g})")
    if maximum is not None and number > maximum:
        raise NumberError(field, f"must be at most {maximum:g} (got {number:g})")
    return number
