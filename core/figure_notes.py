"""What is said about a figure beyond its value, decided once (:func:`figure_notes`): its range over the
orders of tied documents, whether that range holds 0, whether the crowd check warns of its
label-corrected interval; and how a p-value is written (:func:`p_value_text`). Every output formats
these; none decides again. Pure (no Django)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from genderbias.ranking.vocabulary import RAB_LIKE


def _missing(value) -> bool:
    """None, NaN (float or numpy) or pandas' NA, without importing pandas (this loads at start-up)."""
    if value is None:
        return True
    try:
        return bool(value != value)
    except TypeError:  # pandas' NA has no truth value
        return True


def range_contains_zero(metric: str, low, high) -> bool:
    """Whether a signed metric's (RaB-like) range over orders of ties holds 0: the ranking does not
    decide the sign of the bias."""
    present = not _missing(low) and not _missing(high)
    return metric in RAB_LIKE and present and low <= 0 <= high


#: What is said of a figure whose range over the orders of ties holds 0 (every output says it in these words).
SIGN_WARNING = "the ranking does not decide the sign"
#: What is said of a figure whose label-corrected interval the crowd check does not trust.
CROWD_WARNING = "the intervals with labels may be too narrow (the crowd check warns)"


@dataclass(frozen=True)
class FigureNotes:
    """What the report says about one figure beyond its value and interval (:func:`figure_notes`)."""

    tie_low: float | None = None
    tie_high: float | None = None
    sign_undecided: bool = False
    crowd_warning: bool = False

    @property
    def tie_range(self) -> tuple[float, float] | None:
        """(lowest, highest) over the orders of tied documents; None where no order of ties moves it."""
        return None if self.tie_low is None else (self.tie_low, self.tie_high)

    @property
    def flagged(self) -> bool:
        """Whether anything is said of the figure beyond its value and interval."""
        return self.tie_low is not None or self.crowd_warning

    def texts(self, digits: int = 4) -> list[str]:
        """The notes in words, as the command line and the CSV give them."""
        said = []
        if self.tie_low is not None:
            said.append(f"ties {self.tie_low:.{digits}f} … {self.tie_high:.{digits}f}")
        if self.sign_undecided:
            said.append(f"holds 0: {SIGN_WARNING}")
        if self.crowd_warning:
            said.append(CROWD_WARNING)
        return said


def figure_notes(row, crowd_quality: dict | None = None) -> FigureNotes:
    """What is said about one figure of a report: ``row`` a summary row (mapping or named tuple:
    ``metric``, ``tie_low``, ``tie_high``, for a report on labels ``combined_low``), ``crowd_quality``
    :func:`genderbias.crowd.label_probabilities.crowd_quality`'s verdict."""

    def get(name):
        value = row.get(name) if isinstance(row, dict) else getattr(row, name, None)
        return None if value is None or (isinstance(value, float) and math.isnan(value)) else value

    low, high = get("tie_low"), get("tie_high")
    if low is None or high is None:
        low = high = None
    else:
        low, high = float(low), float(high)
    crowd = bool(crowd_quality and crowd_quality.get("warning")) and get("combined_low") is not None
    return FigureNotes(low, high, range_contains_zero(get("metric"), low, high), crowd)


#: The smallest p-value written as a number; anything below is ``< 0.0001``.
SMALLEST_SHOWN = 0.0001


def p_value_text(p: float | None) -> str:
    """``p`` as people read it, the one rule of pages, terminal tables and the paper bundle:
    ``"< 0.0001"``, ``"0.0123"``, or ``""`` when there is none (None or NaN)."""
    if p is None:
        return ""
    p = float(p)
    if math.isnan(p):
        return ""
    if p < SMALLEST_SHOWN:
        return f"< {SMALLEST_SHOWN:.4f}"
    return f"{p:.4f}"
