"""How large an expert audit sample to draw: the one rule the check for shared errors, the audit sample's
default draw and the study plan share (issue 81). Light (no numpy): commands name it in their ``--help``.
"""

from __future__ import annotations

import math

__all__ = ["AUDIT_CLASS_ITEMS", "MIN_AUDIT", "suggested_audit_size"]

#: Queries of the class of interest an audit needs, and the fewest queries an audit sample has: the prediction-
#: powered interval covers from 50 audited queries on (docs/quality.md, "Audit samples").
AUDIT_CLASS_ITEMS, MIN_AUDIT = 25, 50


def suggested_audit_size(expected_share: float) -> int:
    """Queries an expert audit needs to settle a figure about one class: :data:`AUDIT_CLASS_ITEMS` of it
    (``expected_share`` in (0, 1] of the batch), never fewer than :data:`MIN_AUDIT`."""
    share = float(expected_share)
    if not 0.0 < share <= 1.0:
        raise ValueError(f"expected_share {expected_share!r}: must lie in (0, 1]")
    return max(MIN_AUDIT, math.ceil(AUDIT_CLASS_ITEMS / share - 1e-9))
