"""Helpers shared by the annotation commands (the leading underscore hides this from ``manage.py help``)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from decimal import Decimal

from django.core.management.base import CommandError

from annotation.models import Batch
from core.management.cli import command_errors as base_command_errors
from core.management.cli import get_named


def duration(text: str) -> dt.timedelta:
    """``90`` or ``90s``, ``30m``, ``12h``, ``7d`` -> timedelta (for argparse ``type=``: a ``ValueError``,
    which argparse reports as ``invalid duration value``), read as the batch options read it."""
    from annotation.crowd.providers.options import read_duration

    return read_duration("duration", text)


def money(text: str) -> Decimal:
    """An amount of dollars on the command line (for argparse ``type=``): plain ASCII digits with at
    most two decimals (:func:`core.amounts.parse_amount`); argparse names the option refusing it."""
    import argparse

    from core.amounts import AmountError, parse_amount

    try:
        return parse_amount(text, "amount")
    except AmountError as exc:
        raise argparse.ArgumentTypeError(exc.problem) from None


#: ``--qualification KEY=VALUE``'s keys, and the MTurk batch option each one sets.
QUALIFICATION_SPECS = {
    "locale": "locales",
    "approval-rate": "min_approval_rate",
    "approved-hits": "min_approved_hits",
    "masters": "masters",
}


def qualifications(values: list[str] | None) -> dict:
    """``locale=US,GB``, ``approval-rate=95``, ``approved-hits=1000``, ``masters`` -> the MTurk options' values,
    each read by the option's own check (:mod:`annotation.crowd.providers.options`)."""
    from annotation.crowd.providers.base import provider_class
    from annotation.crowd.providers.options import OptionError, options_by_name

    if not values:
        return {}
    from core.lazy_registry import UnknownName

    try:
        options = options_by_name(provider_class("mturk").own_options())
    except UnknownName:
        raise CommandError("--qualification sets MTurk's options, and MTurk is not installed") from None
    result: dict = {}
    for value in values or []:
        key, has_value, arg = value.partition("=")
        key = key.strip().lower()
        if key not in QUALIFICATION_SPECS or (key == "masters") == bool(has_value):
            raise CommandError(
                f"unknown --qualification {value!r}; use locale=US,GB, approval-rate=95, approved-hits=1000 or masters"
            )
        option = options[QUALIFICATION_SPECS[key]]
        try:
            parsed = True if key == "masters" else option.parse(arg)
        except OptionError:
            raise CommandError(f"bad value in --qualification {value!r}") from None
        if parsed is None:
            raise CommandError(f"bad value in --qualification {value!r}")
        result[option.name] = parsed
    return result


def get_batch(name: str) -> Batch:
    return get_named(Batch, name, "batch")


@contextmanager
def command_errors(*, flags: Mapping[str, str] | None = None) -> Iterator[None]:
    """Service and provider errors (providers' are ``ServiceError``s) become clean command-line errors;
    a field's error names the option (``flags``: :func:`core.management.cli.command_errors`)."""
    with base_command_errors(ValueError, flags=flags):
        yield


def format_cost(cost: dict) -> str:
    bonuses = cost.get("bonuses")
    extra = f" + up to ${bonuses} bonuses and their fee" if bonuses and bonuses not in ("0", "0.00") else ""
    return (
        f"{cost['assignments_total']} assignments × (${cost['per_assignment_reward']} reward + "
        f"${cost['per_assignment_fee']} fee){extra} = ${cost['total']}"
    )
