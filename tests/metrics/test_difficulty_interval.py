"""Item difficulty carried into the label-corrected intervals (issue 58, item 2): where the crowd model's
check finds the votes on a query not independent given its label (``misfit``), replicate crowds drawn
from the fit with the batch's spread of difficulty size the corrected figures' bias
(:meth:`annotation.machine.label_probabilities.LabelModel.difficulty_draws`,
:meth:`metrics.label_uncertainty.CorrectedFit.difficulty_bias`) and the interval reaches that far
(:func:`core.intervals.extended`). The truth is the simulation's (``benchmarks/crowd_simulation.py``,
``Crowd.difficulty``): hard truly gendered queries get unanimous "n" votes, so the corrected value of
run A (non-gendered class mean) is too high."""

from __future__ import annotations

import numpy as np
import pytest

from annotation.machine.label_probabilities import LabelModel, crowd_quality
from annotation.results.aggregation import dawid_skene
from benchmarks import crowd_simulation as cs
from core import intervals
from metrics import label_uncertainty


def _drawn(crowd: cs.Crowd, seed: int, n: int = 1000):
    rng = np.random.default_rng([2040, seed])
    drawn = cs.answered(cs.study(rng, cs.synthetic_truth(rng, n), crowd))
    ds = dawid_skene(drawn.judgments, gold=drawn.gold)
    table = ds.held_out.loc[drawn.qids, list(cs.LABELS)]
    return drawn, ds, table, LabelModel(table, ds, drawn.qids)


@pytest.mark.slow
def test_on_hard_queries_the_bias_is_sized_upwards_and_the_interval_reaches_down_by_it():
    """3 studies of the difficulty crowd (σ = 1, seeds [2040, s]), every one failing the check. Measured over
    20 such studies (``crowd_coverage --crowd difficulty``): the value's sized bias positive in 19 of 19
    where the check fired (mean +0.0063, where the true error is +0.018): asserted positive in each of the
    3 here, and below the true error plus 3 of the bootstrap's s.d. (it is sized short, never long:
    docs/quality.md). The interval is the one without the bias joined with itself moved down by it, p
    the larger of the two (computed here from the same draws without ``difficulty``)."""
    for seed in (1, 2, 4):
        drawn, ds, table, model = _drawn(cs.CROWDS["difficulty"], seed)
        assert "misfit" in crowd_quality(ds)["reasons"]
        with_bias = label_uncertainty.CorrectedFit(
            table, 40, 3, model.draws, leave_out=model.leave_out_draws,
            difficulty=lambda model=model: model.difficulty_draws(3),
        )  # fmt: skip
        plain = label_uncertainty.CorrectedFit(table, 40, 3, model.draws, leave_out=model.leave_out_draws)
        values = drawn.a[:, None]
        bias = with_bias.difficulty_bias(values)
        truth_labels = np.eye(len(cs.LABELS))[drawn.truth]
        true_error = (
            label_uncertainty.class_means(table.to_numpy(), values)[0, 0]
            - label_uncertainty.class_means(truth_labels, values)[0, 0]
        )
        assert bias[0] > 0, (seed, bias, true_error)
        point, low, high, p = with_bias.interval(values)
        p_point, p_low, p_high, p_p = plain.interval(values)
        assert point == pytest.approx(p_point)
        assert low == pytest.approx(p_low - bias) and high == pytest.approx(p_high)
        _, fitted, _ = plain.estimates(values)
        assert bias[0] < true_error + 3 * np.nanstd(fitted[:, 0], ddof=1)
        extra = plain.extra_variance(values)
        moved = intervals.bootstrap_p(
            fitted - bias, point - bias, intervals.LABEL_INTERVAL, None, label_uncertainty.MIN_USABLE_DRAWS, extra
        )
        assert p == pytest.approx(np.fmax(p_p, moved))


@pytest.mark.slow
def test_a_crowd_the_model_fits_keeps_its_interval():
    """A moderate study whose check passes (seed [2040, 0]: misfit z below 2): no replicates, no bias."""
    drawn, ds, table, model = _drawn(cs.MODERATE, 0)
    assert "misfit" not in crowd_quality(ds)["reasons"]
    assert model.difficulty_draws(3) is None
    fit = label_uncertainty.CorrectedFit(table, 40, 3, model.draws, difficulty=lambda: model.difficulty_draws(3))
    assert fit.difficulty_bias(drawn.a[:, None]) is None
