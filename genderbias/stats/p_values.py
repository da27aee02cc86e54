"""How a p-value is written, everywhere: the one rule of the pages, terminal tables, CSV-free text
and the paper bundle (issue 45: ``p 4.2968197395090625e-306`` beside ``p 0.0000`` widened tables).

Below 0.0001 a p-value says only that (``< 0.0001``); otherwise four decimals. Pure.
"""

from __future__ import annotations

import math

#: The smallest p-value written as a number; anything below is ``< 0.0001``.
SMALLEST_SHOWN = 0.0001


def p_value_text(p: float | None) -> str:
    """``p`` as people read it: ``"< 0.0001"``, ``"0.0123"``, or ``""`` when there is none (None or NaN)."""
    if p is None:
        return ""
    p = float(p)
    if math.isnan(p):
        return ""
    if p < SMALLEST_SHOWN:
        return f"< {SMALLEST_SHOWN:.4f}"
    return f"{p:.4f}"
