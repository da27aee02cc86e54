"""What a submission earned per hour: the *effective* rate (the reward over the time actually taken,
not the published estimate) by which Prolific judges a study's pay. Pure."""

from __future__ import annotations

import datetime as dt
import statistics
from collections.abc import Iterable
from decimal import ROUND_HALF_UP, Decimal


def seconds_taken(started: dt.datetime | None, completed: dt.datetime | None) -> int | None:
    """Whole seconds from start to completion; None when either is unknown or the order is impossible."""
    if started is None or completed is None or completed < started:
        return None
    return int((completed - started).total_seconds())


def hourly_rate(reward: Decimal, seconds: int | None) -> Decimal | None:
    """``reward`` per hour of ``seconds`` (cents rounded half up); None without a positive time."""
    if not seconds or seconds <= 0:
        return None
    return (Decimal(reward) * 3600 / seconds).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)


def median_or_none(values: Iterable[float | Decimal | int | None]) -> float | None:
    """The median of the known values (None when there are none)."""
    known = [float(v) for v in values if v is not None]
    return statistics.median(known) if known else None
