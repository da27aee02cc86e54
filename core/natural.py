"""Natural order of identifiers such as query ids: numeric parts compare as numbers ("2" < "10",
"q2" < "q10"), the rest as text. Pure; the one order every table of a page sorts qids by."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import TypeVar

T = TypeVar("T")
_PARTS = re.compile(r"(\d+)")


def natural_key(value: object) -> tuple:
    """A sort key for ``value`` in natural order; numbers before text at the same place, so the key
    of any two values compares (``"10" < "a"``), and ties broken by the text itself."""
    text = str(value)
    parts = _PARTS.split(text)
    return (tuple((0, int(part), "") if part.isdigit() else (1, 0, part.casefold()) for part in parts if part), text)


def natural_sorted(items: Iterable[T], key: Callable[[T], object] | None = None) -> list[T]:
    """``items`` sorted by ``natural_key(key(item))`` (the item itself without ``key``)."""
    return sorted(items, key=lambda item: natural_key(key(item) if key else item))
