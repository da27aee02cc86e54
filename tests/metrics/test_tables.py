"""The papers' tables (metrics.tables): correlations by hand and against scipy; significance
marks under the project's one policy (Holm within each column's family) on a hand example."""

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from genderbias.stats.correlation import correlation
from metrics import tables


def frame(values: dict[tuple[str, str, str, int], list[float]]) -> pd.DataFrame:
    rows = [
        (run, f"q{i + 1}", metric, variant, cutoff, value)
        for (run, metric, variant, cutoff), column in values.items()
        for i, value in enumerate(column)
    ]
    return pd.DataFrame(rows, columns=["run", "qid", "metric", "variant", "cutoff", "value"])


def t2_p(t: float) -> float:
    """Two-sided p of Student's t with 2 degrees of freedom: 1 − t / sqrt(t² + 2)."""
    return 1.0 - abs(t) / math.sqrt(t * t + 2.0)


def test_correlation_by_hand():
    # x = 1, 2, 3, 4 and y = 1, 3, 2, 4: deviations ±1.5, ±0.5; Σdxdy = 2.25 − 0.25 − 0.25 + 2.25 = 4,
    # Σdx² = Σdy² = 5, so r = 0.8; with 2 degrees of freedom p = 1 − |r| = 0.2.
    # Kendall: of 6 pairs only (2, 3) is discordant, τ = (5 − 1)/6 = 2/3; exact p = P(≤ 1 or ≥ 5
    # inversions among the 24 permutations of 4) = (1 + 3 + 3 + 1)/24 = 1/3.
    x = pd.Series([0.1, 0.2, 0.3, 0.4], index=["q1", "q2", "q3", "q4"])
    y = pd.Series([0.1, 0.3, 0.2, 0.4], index=["q1", "q2", "q3", "q4"])
    result = correlation(x, y)
    assert result["n"] == 4
    assert result["pearson_r"] == pytest.approx(0.8)
    assert result["pearson_p"] == pytest.approx(0.2)
    assert result["kendall_tau"] == pytest.approx(2 / 3)
    assert result["kendall_p"] == pytest.approx(1 / 3)


def test_correlation_joins_on_queries_and_matches_scipy():
    rng = np.random.default_rng(3)
    x = pd.Series(rng.normal(size=30), index=[f"q{i}" for i in range(30)])
    y = pd.Series(x.to_numpy() * 0.5 + rng.normal(size=30), index=x.index)
    y.iloc[4] = np.nan  # undefined for one query: left out
    x = pd.concat([x, pd.Series([5.0], index=["only-x"])])
    result = correlation(x, y)
    kept = y.dropna().index
    pearson = stats.pearsonr(x[kept], y[kept])
    kendall = stats.kendalltau(x[kept], y[kept])
    assert result["n"] == 29
    assert result["pearson_r"] == pytest.approx(pearson.statistic)
    assert result["pearson_p"] == pytest.approx(pearson.pvalue)
    assert result["kendall_tau"] == pytest.approx(kendall.statistic)
    assert result["kendall_p"] == pytest.approx(kendall.pvalue)


def test_correlation_undefined_for_constant_or_too_few():
    index = ["q1", "q2", "q3"]
    assert correlation(pd.Series([1.0, 1, 1], index), pd.Series([1.0, 2, 3], index))["pearson_r"] is None
    assert correlation(pd.Series([1.0, 2], index[:2]), pd.Series([1.0, 2], index[:2]))["kendall_tau"] is None


BASE = [0.1, 0.2, 0.3]


def plus(values, deltas):
    return [v + d for v, d in zip(values, deltas, strict=True)]


# Differences against the baseline (3 queries, t with 2 degrees of freedom):
#   a RR:   0.10, 0.11, 0.09 → mean 0.1, sd 0.01, t = 0.1/(0.01/√3) = 17.32; p = 0.003317
#   b RR:   0.2, 0.3, 0.4    → mean 0.3, sd 0.1,  t = 5.196;                   p = 0.0351
#   a, b nDCG: 0.1, 0.2, 0.3 → mean 0.2, sd 0.1,  t = 3.464;                   p = 0.0742
# The policy (issue 26.8): family = every run against the baseline for one column's metric, variant
# and cutoff; Holm. Before, Bonferroni × 4 across the table gave these cells other p-values than the
# report's results (whose family was the whole report).
#   RR family {a 0.003317, b 0.0351}: a = 2 × 0.003317 = 0.006634 (*); b = max(0.006634, 1 × 0.0351)
#     = 0.0351 (*: the tests of the nDCG column no longer dilute it)
#   nDCG family {a 0.0742, b 0.0742}: 2 × 0.0742 = 0.1484 for both (no mark).
HAND = {
    ("base", "RR", "qrels", 10): BASE,
    ("a", "RR", "qrels", 10): plus(BASE, [0.10, 0.11, 0.09]),
    ("b", "RR", "qrels", 10): plus(BASE, [0.2, 0.3, 0.4]),
    ("base", "nDCG", "qrels", 10): BASE,
    ("a", "nDCG", "qrels", 10): plus(BASE, [0.1, 0.2, 0.3]),
    ("b", "nDCG", "qrels", 10): plus(BASE, [0.1, 0.2, 0.3]),
}


def test_marks_with_holm_within_each_columns_family():
    table = tables.build_table(frame(HAND), "ecir2024", baseline="base")
    assert [c["label"] for c in table["columns"]] == ["MRR@10", "nDCG@10"]
    assert table["missing"] == ["NFaiRR@10", "TExFAIR@10", "correlation TExFAIR–NFaiRR"]
    assert table["tests"] == 4
    cells = {row["run"]: row["cells"] for row in table["rows"]}
    expected_raw = {
        ("a", 0): t2_p(0.1 / (0.01 / math.sqrt(3))),
        ("b", 0): t2_p(0.3 / (0.1 / math.sqrt(3))),
        ("a", 1): t2_p(0.2 / (0.1 / math.sqrt(3))),
        ("b", 1): t2_p(0.2 / (0.1 / math.sqrt(3))),
    }
    expected = {
        ("a", 0): 2 * expected_raw[("a", 0)],
        ("b", 0): expected_raw[("b", 0)],
        ("a", 1): 2 * expected_raw[("a", 1)],
        ("b", 1): 2 * expected_raw[("b", 1)],
    }
    for (run, column), p in expected_raw.items():
        cell = cells[run][column]
        assert cell["p_raw"] == pytest.approx(p, rel=1e-6)
        assert cell["p_value"] == pytest.approx(expected[(run, column)], rel=1e-6)
    assert [cell["mark"] for cell in cells["a"]] == ["*", ""]
    assert [cell["mark"] for cell in cells["b"]] == ["*", ""]
    assert [cell["mark"] for cell in cells["base"]] == ["", ""] and cells["base"][0]["p_value"] is None
    assert table["significance"]["correction"] == "Holm" and table["significance"]["baseline"] == "base"
    assert cells["a"][0]["value"] == pytest.approx(0.3) and cells["a"][0]["queries"] == 3
    # No baseline, no tests and no marks.
    plain = tables.build_table(frame(HAND), "ecir2024")
    assert plain["tests"] == 0 and all(c["mark"] == "" for row in plain["rows"] for c in row["cells"])
    assert plain["significance"] is None


def test_ecir2024_correlations_per_run_and_text():
    data = {
        ("a", "TExFAIR", "rbdf", 10): [0.1, 0.2, 0.3, 0.4],
        ("a", "TExFAIR", "plain", 10): [0.4, 0.2, 0.3, 0.4],
        ("a", "NFaiRR", "collection", 10): [0.1, 0.3, 0.2, 0.4],
        ("a", "TExFAIR", "rbdf", 5): [0.4, 0.3, 0.2, 0.1],
        ("a", "NFaiRR", "collection", 5): [0.1, 0.3, 0.2, 0.4],
    }
    table = tables.build_table(frame(data), "ecir2024")
    assert table["cutoff"] == 10
    assert [c["label"] for c in table["columns"]] == ["NFaiRR@10", "TExFAIR@10"]
    (result,) = table["rows"][0]["correlations"]
    assert (result["a"], result["b"]) == ("TExFAIR@10", "NFaiRR@10")
    assert result["pearson_r"] == pytest.approx(0.8) and result["kendall_tau"] == pytest.approx(2 / 3)
    # One run: each statistic's family (that statistic of that pair across the runs) holds one
    # test, so Holm leaves p as it is (before: Bonferroni × 2 across r and τ gave 0.4).
    assert table["correlation_tests"] == 2 and result["pearson_p_corrected"] == pytest.approx(0.2)
    assert result["pearson_mark"] == "" and result["kendall_mark"] == ""
    at5 = tables.build_table(frame(data), "ecir2024", cutoff=5)
    assert at5["rows"][0]["correlations"][0]["pearson_r"] == pytest.approx(-0.8)
    text = tables.table_text(table)
    assert "r(TExFAIR@10,NFaiRR@10)" in text and "+0.800" in text and "not in this report: MRR, nDCG" in text
    # Any two metrics: TExFAIR plain against NFaiRR.
    chosen = tables.build_table(
        frame(data), "ecir2024", correlations=[(tables.parse_spec("TExFAIR:plain"), tables.parse_spec("NFaiRR"))]
    )
    assert chosen["correlations"] == [{"a": "TExFAIR[plain]@10", "b": "NFaiRR@10"}]


def test_sigir2020_columns_and_errors():
    data = {
        ("a", "RR", "qrels", 10): [1.0, 0.5],
        ("a", "R", "qrels", 100): [1.0, 0.0],
        **{("a", m, v, c): [0.1, 0.2] for m in ("RaB", "ARaB") for v in ("tf", "bool") for c in (5, 10)},
    }
    table = tables.build_table(frame(data), "sigir2020")
    labels = [c["label"] for c in table["columns"]]
    assert labels[:2] == ["MRR@10", "Recall@100"]
    assert labels[2:6] == ["RaB[tf]@5", "RaB[tf]@10", "ARaB[tf]@5", "ARaB[tf]@10"]
    assert labels[6:] == ["RaB[bool]@5", "RaB[bool]@10", "ARaB[bool]@5", "ARaB[bool]@10"]
    assert table["rows"][0]["cells"][0]["value"] == pytest.approx(0.75)
    with pytest.raises(ValueError, match="unknown layout"):
        tables.build_table(frame(data), "nature")
    with pytest.raises(ValueError, match="no cutoff 7"):
        tables.build_table(frame(data), "sigir2020", cutoff=7)
    with pytest.raises(ValueError, match="baseline 'z'"):
        tables.build_table(frame(data), "sigir2020", baseline="z")
    with pytest.raises(ValueError, match="bad metric"):
        tables.parse_spec("Foo@3")
