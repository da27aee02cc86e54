"""Helpers shared by the annotation commands (the leading underscore hides this from ``manage.py help``)."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterator
from contextlib import contextmanager
from decimal import Decimal

from django.core.management.base import CommandError

from annotation.models import Batch
from core.management.cli import command_errors as base_command_errors
from core.management.cli import get_named

_DURATION = re.compile(r"^\s*(\d+)\s*([smhd]?)\s*$")
_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


def duration(text: str) -> dt.timedelta:
    """``90`` or ``90s``, ``30m``, ``12h``, ``7d`` -> timedelta (for argparse ``type=``)."""
    match = _DURATION.match(text)
    if not match:
        raise ValueError(f"not a duration: {text!r} (use e.g. 45s, 30m, 12h, 7d)")
    return dt.timedelta(seconds=int(match.group(1)) * _UNITS[match.group(2)])


def money(text: str) -> Decimal:
    """An amount of dollars on the command line (for argparse ``type=``): plain ASCII digits with at
    most two decimals (:func:`core.amounts.parse_amount`); argparse names the option refusing it."""
    import argparse

    from core.amounts import AmountError, parse_amount

    try:
        return parse_amount(text, "amount")
    except AmountError as exc:
        raise argparse.ArgumentTypeError(exc.problem) from None


def qualifications(values: list[str] | None) -> dict:
    """``locale=US,GB``, ``approval-rate=95``, ``approved-hits=1000``, ``masters`` -> the batch's settings."""
    result: dict = {}
    for value in values or []:
        key, _, arg = value.partition("=")
        key = key.strip().lower()
        try:
            if key == "locale":
                result["locales"] = [c.strip().upper() for c in arg.split(",") if c.strip()]
                if not result["locales"]:
                    raise ValueError
            elif key == "approval-rate":
                result["min_approval_rate"] = int(arg)
                if not 0 <= result["min_approval_rate"] <= 100:
                    raise ValueError
            elif key == "approved-hits":
                result["min_approved_hits"] = int(arg)
                if result["min_approved_hits"] < 0:
                    raise ValueError
            elif key == "masters" and not arg:
                result["masters"] = True
            else:
                raise CommandError(
                    f"unknown --qualification {value!r}; use locale=US,GB, approval-rate=95, approved-hits=1000 or masters"
                )
        except ValueError:
            raise CommandError(f"bad value in --qualification {value!r}") from None
    return result


def get_batch(name: str) -> Batch:
    return get_named(Batch, name, "batch")


@contextmanager
def command_errors() -> Iterator[None]:
    """Service and provider errors (providers' are ``ServiceError``s) become clean command-line errors."""
    with base_command_errors(ValueError):
        yield


def format_cost(cost: dict) -> str:
    bonuses = cost.get("bonuses")
    extra = f" + up to ${bonuses} bonuses and their fee" if bonuses and bonuses not in ("0", "0.00") else ""
    return (
        f"{cost['assignments_total']} assignments × (${cost['per_assignment_reward']} reward + "
        f"${cost['per_assignment_fee']} fee){extra} = ${cost['total']}"
    )


def prolific_filter(text: str) -> dict:
    """``FILTER_ID=v1,v2`` -> one of Prolific's eligibility filters (selected values)."""
    key, _, values = text.partition("=")
    chosen = [v.strip() for v in values.split(",") if v.strip()]
    if not key.strip() or not chosen:
        raise ValueError(f"not a filter: {text!r} (use FILTER_ID=value1,value2, e.g. current-country-of-residence=1,2)")
    return {"filter_id": key.strip(), "selected_values": chosen}
