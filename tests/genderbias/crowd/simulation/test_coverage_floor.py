"""The known-confusion floor (genderbias.crowd.simulation.coverage.floor_intervals): the label-corrected figures on
the posteriors the workers' true confusions give, set beside the true labels' interval (issue 81, item 5)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from genderbias.crowd.simulation import studies as cs
from genderbias.crowd.simulation.coverage import floor_intervals, known_posteriors, oracle_intervals
from genderbias.stats.significance import resampling_weights


def drawn_study(crowd, n=300, seed=7):
    rng = np.random.default_rng(seed)
    return cs.answered(cs.study(rng, cs.synthetic_truth(rng, n, crowd.label_shares), crowd))


def test_workers_who_never_err_give_the_true_labels_interval():
    # Every worker right every time, none a spammer or lazy: the true confusions make each posterior the truth,
    # so the floor is the oracle's interval to the digit (same resampled queries, same percentile interval).
    crowd = replace(cs.MODERATE, accuracy=(1.0, 1.0), spammers=0.0, lazy=0)
    drawn = drawn_study(crowd, n=1000)  # enough "o" queries that every resample has some (else its fit is singular)
    weights = resampling_weights(len(drawn.qids), 100, 0)
    assert known_posteriors(drawn, crowd.label_shares).argmax(axis=1) == pytest.approx(drawn.truth)
    floor, oracle = floor_intervals(drawn, weights, crowd.label_shares), oracle_intervals(drawn, weights, weights)
    for figure in ("value", "difference"):
        assert floor[f"{figure}:floor_width"] == pytest.approx(oracle[f"{figure}:oracle_width"], rel=1e-9)


def test_spammers_answers_say_nothing_and_noisy_workers_widen_it():
    # A crowd of spammers only: every posterior is the class shares, whatever was answered.
    spam = replace(cs.MODERATE, spammers=1.0, lazy=0)
    drawn = drawn_study(spam)
    shares = spam.label_shares / spam.label_shares.sum()
    assert known_posteriors(drawn, spam.label_shares) == pytest.approx(np.tile(shares, (len(drawn.qids), 1)))
    # The moderate crowd errs: its floor is wider than the true labels' interval on the same queries.
    drawn = drawn_study(cs.MODERATE, n=1000)
    weights = resampling_weights(len(drawn.qids), 200, 0)
    floor = floor_intervals(drawn, weights, cs.MODERATE.label_shares)
    oracle = oracle_intervals(drawn, weights, weights)
    assert floor["value:floor_width"] > oracle["value:oracle_width"]
