"""How large an expert audit sample to draw (pure: the study plan calls it too).

Rule of thumb of issue 81: about 25 audited queries of the class of interest give the
prediction-powered interval its coverage (docs/quality.md, "Audit samples"), so the sample is
25 / the class's expected share, rounded up, at least 50 (below that PPI++'s tuned interval
under-covers), at most the batch's queries.
"""

from __future__ import annotations

import math

#: Audited queries of the class of interest the interval needs.
PER_CLASS = 25
#: The smallest audit sample drawn by default.
MINIMUM = 50


def planned_audit_size(population: int, expected_share: float = 0.5) -> int:
    """The default audit size for a batch of ``population`` queries whose class of interest is
    expected to be ``expected_share`` of them (0 < share <= 1)."""
    if population < 1:
        raise ValueError(f"a batch of {population} queries has nothing to audit")
    if not 0 < expected_share <= 1:
        raise ValueError(f"the expected share must be in (0, 1], got {expected_share}")
    return min(population, max(MINIMUM, math.ceil(PER_CLASS / expected_share - 1e-9)))
