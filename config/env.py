"""Typed reading of environment variables for the settings: a variable set but malformed stops
start-up naming it and what was expected (``DJANGO_DEBUG=ture`` is an error, never a silent
``False``); only an unset or empty one takes the default. Standard library only.
"""

from __future__ import annotations

import os
from decimal import Decimal, InvalidOperation
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def _raw(name: str) -> str | None:
    value = os.environ.get(name)
    if value is None or not value.strip():
        return None
    return value.strip()


def _bad(name: str, value: str, expected: str) -> ImproperlyConfigured:
    return ImproperlyConfigured(f"environment variable {name}={value!r}: expected {expected}")


def env_str(name: str, default: str = "") -> str:
    value = _raw(name)
    return default if value is None else value


def env_bool(name: str, default: bool = False) -> bool:
    value = _raw(name)
    if value is None:
        return default
    if value.lower() in _TRUE:
        return True
    if value.lower() in _FALSE:
        return False
    raise _bad(name, value, "a boolean: 1/0, true/false, yes/no or on/off")


def env_int(name: str, default: int, *, minimum: int | None = None, maximum: int | None = None) -> int:
    return _number(name, default, int, "a whole number", minimum, maximum)


def env_float(name: str, default: float, *, minimum: float | None = None, maximum: float | None = None) -> float:
    return _number(name, default, float, "a number", minimum, maximum)


def _number(name: str, default, read, what: str, minimum, maximum):
    """``read(value)`` (``int`` or ``float``: a finite one) within the bounds; ``what`` names the kind in a refusal."""
    value = _raw(name)
    if value is None:
        return default
    try:
        number = read(value)
    except ValueError:
        raise _bad(name, value, what) from None
    if number != number or number in (float("inf"), float("-inf")):
        raise _bad(name, value, f"a finite {what.removeprefix('a ')}")
    if minimum is not None and number < minimum:
        raise _bad(name, value, f"{what} of at least {minimum}")
    if maximum is not None and number > maximum:
        raise _bad(name, value, f"{what} of at most {maximum}")
    return number


def env_decimal(name: str, default: str) -> Decimal:
    value = _raw(name) or default
    try:
        number = Decimal(value)
    except InvalidOperation:
        raise _bad(name, value, "a decimal number such as 0.333") from None
    if not number.is_finite() or number < 0:
        raise _bad(name, value, "a non-negative decimal number")
    return number


def env_list(name: str, default: list[str]) -> list[str]:
    """Comma-separated values (``a,b,c``); empty items are dropped."""
    value = _raw(name)
    if value is None:
        return list(default)
    return [item.strip() for item in value.split(",") if item.strip()]


def env_paths(name: str) -> list[Path]:
    """Folders separated by the platform's path separator (``:`` on Linux), like ``PATH``."""
    value = _raw(name)
    if value is None:
        return []
    return [Path(item).expanduser() for item in value.split(os.pathsep) if item.strip()]


def env_path(name: str, default: Path) -> Path:
    value = _raw(name)
    return default if value is None else Path(value).expanduser()


def env_choice(name: str, default: str, choices: tuple[str, ...]) -> str:
    value = _raw(name)
    if value is None:
        return default
    if value not in choices:
        raise _bad(name, value, f"one of {', '.join(choices)}")
    return value


#: Program names under which the project's commands run (``python manage.py``, ``django-admin``).
_COMMAND_PROGRAMS = ("manage.py", "django-admin")


def help_only(argv: list[str]) -> bool:
    """Whether this process only prints command help: it uses no secret, so it must work on a
    production machine before the secrets are set."""
    if not argv or Path(argv[0]).name not in _COMMAND_PROGRAMS:
        return False
    args = argv[1:]
    return not args or args[0] == "help" or "--help" in args or "-h" in args
