"""The study plan's audit sample (issue 81, item 6): the size for a target width of the audit-based (PPI++)
interval, checked by drawing audits of that size from a generated study."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import norm

from genderbias.crowd.simulation import studies as cs
from genderbias.machine.proportions import audit_difference
from genderbias.stats import plan_inputs

DRAWS = 120


def test_the_formula_by_hand():
    # σ = 0.1, share 1,765/3,750, width 0.04: (2 · 1.959964 · 0.1 / 0.04)² = 96.04 → / 0.470667 = 204.05 → 205.
    share = 1765 / 3750
    assert plan_inputs.audit_size_for_width(0.1, share, 0.04) == 205
    assert plan_inputs.audit_hours(180, 20) == 1.0
    assert plan_inputs.audit_size_for_width(0.1, share, 1e-300) == 10**18  # beyond any batch, no overflow
    for bad in ((0.1, share, 0.0), (0.1, 0.0, 0.04), (float("nan"), share, 0.04)):
        with pytest.raises(ValueError):
            plan_inputs.audit_size_for_width(*bad)


def test_audits_of_the_planned_size_give_the_target_width():
    """A study of 3,750 queries with the SIGIR 2020 shares, runs A and B drawn as the simulated studies draw
    them (the paired difference B − A has s.d. 0.1 within a class: :data:`studies.SD_DIFFERENCE`, the σ given).
    Audits of the size planned for a width of 0.04 are drawn 120 times: with no prediction (the sample alone,
    as the size assumes) the median width of audit_difference's interval is the target within 5% (its Monte-
    Carlo s.e., 1.2533 · sd / √120, is about 0.9%); with the machine's labels as the prediction, PPI++ is
    narrower still."""
    rng = np.random.default_rng(81)
    truth = cs.synthetic_truth(rng, 3750)
    a, b = cs.values(rng, truth)
    machine = [cs.LABELS[m] for m in cs.machine_labels(rng, truth)]
    none: list[str | None] = [None] * len(truth)
    size = plan_inputs.audit_size_for_width(cs.SD_DIFFERENCE, 1765 / 3750, 0.04)
    assert size == math.ceil((2 * norm.ppf(0.975) * 0.1 / 0.04) ** 2 / (1765 / 3750))
    alone, helped = [], []
    for _ in range(DRAWS):
        audited = rng.choice(len(truth), size=size, replace=False)
        labels = [cs.LABELS[t] for t in truth[audited]]
        for predicted, widths in ((none, alone), (machine, helped)):
            low, high = audit_difference(labels, predicted, audited, a, b, label="n")["ci"]
            widths.append(high - low)
    alone, helped = np.array(alone), np.array(helped)
    mc_se = 1.2533 * alone.std(ddof=1) / math.sqrt(DRAWS)
    assert mc_se < 0.0005  # the tolerance below is many of its s.e.
    assert np.median(alone) == pytest.approx(0.04, rel=0.05)
    assert np.median(helped) < np.median(alone)
