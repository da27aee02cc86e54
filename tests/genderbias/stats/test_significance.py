"""Paired t-test, the significance policy (Holm within a family) and bootstrap CIs."""

import math

import numpy as np
import pandas as pd
import pytest

from genderbias.stats.significance import against_baseline, bootstrap_ci, holm, paired_t_test, summarise, wide_values


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


def test_a_constant_non_zero_difference_is_decisive():
    # Every query 0.1 better: t = 0.1 / (0 / √n) = ∞, so p = 0 (scipy gives NaN; it used to be None).
    a = pd.Series([0.3, 0.5, 0.9], index=["x", "y", "z"])
    assert paired_t_test(a + 0.1, a) == (0.0, 3)
    assert paired_t_test(a, a + 0.1) == (0.0, 3)


# The project's correction is Holm's (issue 26.8: one policy; Bonferroni across "the report" or
# "the table" gave one comparison two p-values). By hand, p = 0.01, 0.04, 0.03 (m = 3), sorted
# 0.01, 0.03, 0.04: 3 × 0.01 = 0.03; max(0.03, 2 × 0.03) = 0.06; max(0.06, 1 × 0.04) = 0.06.
def test_holm_by_hand_in_the_given_order():
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert holm([0.01, None, 0.4]) == pytest.approx([0.02, None, 0.4])  # None aside, not counted
    adjusted = holm([0.3, 0.6, 0.01, float("nan")])  # 3 × 0.01; max(0.03, 2 × 0.3); max(0.6, 0.6)
    assert adjusted[:3] == pytest.approx([0.6, 0.6, 0.03]) and adjusted[3] is None
    assert holm([0.9, 0.3]) == [0.9, 0.6] and holm([0.9, 0.8]) == [1.0, 1.0] and holm([]) == []


def test_holm_equals_statsmodels():
    multitest = pytest.importorskip("statsmodels.stats.multitest")
    p = np.random.default_rng(3).uniform(0, 0.2, size=12)
    expected = multitest.multipletests(p, method="holm")[1]
    assert holm(list(p)) == pytest.approx(list(expected), abs=1e-15)


def test_family_is_every_run_against_the_baseline_for_one_measure():
    # Three runs against "base" on two measures: each measure's two comparisons are one family;
    # the other measure's tests do not change them.
    qids = [f"q{i}" for i in range(6)]
    rng = np.random.default_rng(0)
    rows = []
    for run in ("base", "x", "y"):
        for metric in ("RaB", "NFaiRR"):
            for qid in qids:
                rows.append(
                    {
                        "run": run,
                        "qid": qid,
                        "metric": metric,
                        "variant": "v",
                        "cutoff": 10,
                        "value": float(rng.normal()),
                    }
                )
    frame = pd.DataFrame(rows)
    tests = against_baseline(wide_values(frame), "base")
    assert set(tests) == {(r, m, "v", 10) for r in ("x", "y") for m in ("RaB", "NFaiRR")}
    for metric in ("RaB", "NFaiRR"):
        raw = [tests[(r, metric, "v", 10)][0] for r in ("x", "y")]
        assert [tests[(r, metric, "v", 10)][1] for r in ("x", "y")] == holm(raw)
        # the same family alone (the other measure dropped) gives the same p-values
        alone = against_baseline(wide_values(frame[frame["metric"] == metric]), "base")
        assert alone == {k: v for k, v in tests.items() if k[1] == metric}


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
