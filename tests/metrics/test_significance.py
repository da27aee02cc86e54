"""Paired t-test, Bonferroni and bootstrap CIs."""

import math

import numpy as np
import pandas as pd
import pytest

from metrics.significance import bonferroni, bootstrap_ci, paired_t_test, summarise


def test_paired_t_test_by_hand():
    # differences 1, 2, 2: mean 5/3, sd sqrt(1/3), t = 5 with 2 degrees of freedom,
    # whose two-sided p is 1 − t/sqrt(2 + t²) = 1 − 5/sqrt(27)
    a = pd.Series([1.0, 2.0, 3.0, 9.0], index=["q1", "q2", "q3", "q4"])
    b = pd.Series([0.0, 0.0, 1.0], index=["q1", "q2", "q3"])  # q4 missing: left out
    p, common = paired_t_test(a, b)
    assert common == 3
    assert p == pytest.approx(1 - 5 / math.sqrt(27), abs=1e-9)


def test_paired_t_test_undefined_without_variation():
    a = pd.Series([1.0, 2.0], index=["x", "y"])
    assert paired_t_test(a, a)[0] is None
    assert paired_t_test(a.iloc[:1], a.iloc[:1])[0] is None


def test_bonferroni_multiplies_by_the_number_of_tests_and_caps():
    assert bonferroni([0.01, 0.4, None]) == [0.02, 0.8, None]
    corrected = bonferroni([0.3, 0.6, 0.01, float("nan")])
    assert corrected[0] == pytest.approx(0.9) and corrected[1] == 1.0 and corrected[3] is None


def test_bootstrap_ci_is_seeded_and_brackets_the_mean():
    values = np.arange(100, dtype=float)
    low, high = bootstrap_ci(values, samples=500, seed=1)
    again = bootstrap_ci(values, samples=500, seed=1)
    assert (low, high) == again
    assert low[0] < 49.5 < high[0]
    # the standard error of the mean is ~2.9, so the 95% interval is roughly ±5.7
    assert 3 < 49.5 - low[0] < 9 and 3 < high[0] - 49.5 < 9


def test_bootstrap_of_a_constant_is_the_constant():
    low, high = bootstrap_ci(np.full(10, 0.25), samples=50)
    assert low[0] == pytest.approx(0.25) and high[0] == pytest.approx(0.25)


def test_summarise_counts_queries_and_tests_against_the_baseline():
    rows = []
    for run, values in {"base": [0.1, 0.2, 0.3, 0.4], "model": [0.3, 0.5, 0.4, None]}.items():
        for qid, value in zip(["1", "2", "3", "4"], values, strict=True):
            if value is not None:
                rows.append({"run": run, "qid": qid, "metric": "RaB", "variant": "tf", "cutoff": 10, "value": value})
    summary = summarise(pd.DataFrame(rows), baseline="base", samples=200).set_index("run")
    assert summary.loc["model", "queries"] == 3
    assert summary.loc["model", "value"] == pytest.approx((0.3 + 0.5 + 0.4) / 3)
    assert summary.loc["base", "p_value"] is None
    # differences 0.2, 0.3, 0.1: t = 0.2 / (0.1/sqrt 3) = 2 sqrt 3, df 2; one test, so no inflation
    t = 2 * math.sqrt(3)
    assert summary.loc["model", "p_value"] == pytest.approx(1 - t / math.sqrt(2 + t * t), abs=1e-9)
