"""AWRF and rKL/rND/rRD (genderbias.ranking.exposure): hand-computed examples from the papers' definitions,
edge cases, the vectorised code against a plain per-query loop, and FairRankTune where its
definitions coincide with ours (crisp groups)."""

import math

import numpy as np
import polars as pl
import pytest

from genderbias.ranking import exposure, measures
from genderbias.ranking.exposure import ExposureSettings

# The worked example of docs/metrics.md ("Exposure-based group fairness"): one query, four
# documents with representative counts (f, m), τ = 1:
#   d1 (3, 0): gendered, a_f = 1        d2 (0, 0): neutral (f + m = 0 ≤ τ)
#   d3 (1, 3): gendered, a_f = 1/4      d4 (0, 2): gendered, a_f = 0
EXAMPLE_F = np.array([[3.0, 0.0, 1.0, 0.0]])
EXAMPLE_M = np.array([[0.0, 0.0, 3.0, 2.0]])
EXAMPLE_N = np.array([4])


def jsd(p: float, t: float) -> float:
    """JSD((p, 1 − p), (t, 1 − t)) in nats, written out scalar by scalar (0·ln 0 = 0)."""

    def kl(a, b):
        return sum(x * math.log(x / y) for x, y in ((a, b), (1 - a, 1 - b)) if x > 0)

    middle = (p + t) / 2
    return kl(p, middle) / 2 + kl(t, middle) / 2


def test_awrf_of_the_worked_example_by_hand():
    # dcg weights w = 1, 1/log2 3, 1/2, 1/log2 5. ε_f = 1·1 + (1/2)·(1/4) = 1.125;
    # ε_m = (1/2)·(3/4) + 1/log2 5 = 0.375 + 0.430677 = 0.805677; P_f = 1.125/1.930677 = 0.582697.
    e_f, e_m = exposure.group_exposure(EXAMPLE_F, EXAMPLE_M, EXAMPLE_N, 4)
    assert e_f[0] == pytest.approx(1.125, abs=1e-12)
    assert e_m[0] == pytest.approx(0.375 + 1 / math.log2(5), abs=1e-12)
    share = 1.125 / (1.125 + 0.375 + 1 / math.log2(5))
    assert share == pytest.approx(0.582697, abs=1e-6)
    # JSD against (½, ½): M = (0.541349, 0.458651); ½ KL(P‖M) + ½ KL(T‖M) = 0.003447; AWRF = 0.996553.
    value = exposure.awrf(EXAMPLE_F, EXAMPLE_M, EXAMPLE_N, 4)[0]
    assert value == pytest.approx(1 - jsd(share, 0.5), abs=1e-12)
    assert value == pytest.approx(0.996553, abs=1e-6)
    # The same with scipy's Jensen–Shannon distance (squared), as TREC Fair's evaluation code does.
    from scipy.spatial.distance import jensenshannon

    assert value == pytest.approx(1 - jensenshannon([share, 1 - share], [0.5, 0.5]) ** 2, abs=1e-12)
    # At cutoff 2 only d1 is gendered: P = (1, 0); JSD = ½ ln(4/3) + ½ (½ ln(2/3) + ½ ln 2) = 0.215762.
    assert exposure.awrf(EXAMPLE_F, EXAMPLE_M, EXAMPLE_N, 2)[0] == pytest.approx(1 - 0.215762, abs=1e-6)


def test_awrf_weights_and_target():
    # trec weights: 1, 1, 1/log2 3, 1/2 → ε_f = 1 + 1/(4 log2 3), ε_m = 3/(4 log2 3) + 1/2.
    trec = ExposureSettings(weights="trec")
    e_f, e_m = exposure.group_exposure(EXAMPLE_F, EXAMPLE_M, EXAMPLE_N, 4, trec)
    assert (e_f[0], e_m[0]) == pytest.approx((1 + 0.25 / math.log2(3), 0.75 / math.log2(3) + 0.5), abs=1e-12)
    # geometric p = 0.5: 1/2, 1/4, 1/8, 1/16 → ε_f = 1/2 + 1/32 = 17/32, ε_m = 3/32 + 1/16 = 5/32: P_f = 17/22.
    geometric = ExposureSettings(weights="geometric", p=0.5)
    e_f, e_m = exposure.group_exposure(EXAMPLE_F, EXAMPLE_M, EXAMPLE_N, 4, geometric)
    assert (e_f[0], e_m[0]) == pytest.approx((17 / 32, 5 / 32), abs=1e-12)
    assert exposure.awrf(EXAMPLE_F, EXAMPLE_M, EXAMPLE_N, 4, geometric)[0] == pytest.approx(1 - jsd(17 / 22, 0.5))
    # A target of 17/22 female makes that list perfectly fair.
    fair = ExposureSettings(weights="geometric", p=0.5, target=17 / 22)
    assert exposure.awrf(EXAMPLE_F, EXAMPLE_M, EXAMPLE_N, 4, fair)[0] == pytest.approx(1.0, abs=1e-12)


def test_rank_fairness_of_the_worked_example_by_hand():
    step2 = ExposureSettings(step=2)
    # Cut points 2 and 4 (δ = 1/log2 2 = 1 and 1/log2 4 = 1/2); q = ½ (female protected).
    # i = 2: one gendered document (d1), S = 1 → P = 1.  i = 4: three gendered, S = 1 + 1/4 → P = 5/12.
    # rND = (1·|1 − ½| + ½·|5/12 − ½|) / ((1 + ½)·½) = (13/24)/(3/4) = 13/18.
    assert exposure.rank_fairness(EXAMPLE_F, EXAMPLE_M, EXAMPLE_N, 4, "rND", step2)[0] == pytest.approx(13 / 18)
    # rKL: KL((1, 0)‖½) = ln 2; KL((5/12, 7/12)‖½) = 5/12 ln(5/6) + 7/12 ln(7/6) = 0.013954;
    # Z = (1 + ½)·ln 2 (a one-sided prefix): (ln 2 + ½·0.013954)/(1.5 ln 2) = 0.673377.
    kl = 5 / 12 * math.log(5 / 6) + 7 / 12 * math.log(7 / 6)
    expected = (math.log(2) + kl / 2) / (1.5 * math.log(2))
    assert expected == pytest.approx(0.673377, abs=1e-6)
    assert exposure.rank_fairness(EXAMPLE_F, EXAMPLE_M, EXAMPLE_N, 4, "rKL", step2)[0] == pytest.approx(expected)
    # rRD: R = ½/½ = 1; i = 2 all protected: R_2 = ∞, term 0; i = 4: R_4 = (5/12)/(7/12) = 5/7,
    # term 1 − 5/7 = 2/7; Z = (1 + ½)·1: (½·2/7)/1.5 = 2/21.
    assert exposure.rank_fairness(EXAMPLE_F, EXAMPLE_M, EXAMPLE_N, 4, "rRD", step2)[0] == pytest.approx(2 / 21)
    # With the paper's step 10 the list (4 < 10) has the one cut point 4: rND = |5/12 − ½|/½ = 1/6.
    assert exposure.rank_fairness(EXAMPLE_F, EXAMPLE_M, EXAMPLE_N, 4, "rND")[0] == pytest.approx(1 / 6)
    assert exposure.rank_fairness(EXAMPLE_F, EXAMPLE_M, EXAMPLE_N, 4, "rRD")[0] == pytest.approx(2 / 7)
    # Male protected: P_i = 1 − (female share); rND is symmetric, rRD is not (i = 2: P = 0, term R = 1;
    # i = 4: P = 7/12, R_4 = 7/5 > 1, term 0): (1·1 + 0)/1.5 = 2/3.
    male = ExposureSettings(step=2, protected="male")
    assert exposure.rank_fairness(EXAMPLE_F, EXAMPLE_M, EXAMPLE_N, 4, "rND", male)[0] == pytest.approx(13 / 18)
    assert exposure.rank_fairness(EXAMPLE_F, EXAMPLE_M, EXAMPLE_N, 4, "rRD", male)[0] == pytest.approx(2 / 3)


def test_one_sided_lists_are_the_most_unfair_and_balanced_ones_fair():
    f = np.array([[5.0] * 20, [0.0] * 20, [2.0] * 20])
    m = np.array([[0.0] * 20, [4.0] * 20, [2.0] * 20])
    n = np.array([20, 20, 20])
    for measure in ("rKL", "rND"):
        assert exposure.rank_fairness(f, m, n, 20, measure).tolist() == pytest.approx([1.0, 1.0, 0.0])
    # rRD counts only the protected (female) group's under-representation.
    assert exposure.rank_fairness(f, m, n, 20, "rRD").tolist() == pytest.approx([0.0, 1.0, 0.0])
    assert exposure.awrf(f, m, n, 20).tolist() == pytest.approx([1 - jsd(1, 0.5), 1 - jsd(0, 0.5), 1.0])
    assert 1 - jsd(1, 0.5) == pytest.approx(1 - (1.5 * math.log(2) - 0.75 * math.log(3)), abs=1e-12)


def test_edge_cases_empty_all_neutral_and_short_lists():
    empty = np.zeros((0, 5))
    for measure in ("rKL", "rND", "rRD"):
        assert exposure.rank_fairness(empty, empty, np.zeros(0, dtype=int), 5, measure).shape == (0,)
    assert exposure.awrf(empty, empty, np.zeros(0, dtype=int), 5).shape == (0,)
    # All neutral (f + m ≤ τ = 1 everywhere): no group is exposed: AWRF 1, rKL = rND = rRD = 0.
    f = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
    m = np.array([[0.0, 1.0, 0.0], [0.0, 0.0, 0.0]])
    n = np.array([3, 1])
    assert exposure.awrf(f, m, n, 10).tolist() == [1.0, 1.0]
    for measure in ("rKL", "rND", "rRD"):
        assert exposure.rank_fairness(f, m, n, 10, measure).tolist() == [0.0, 0.0]
    # τ = 0 makes those one-word documents gendered: d1 female, d2 male.
    loose = ExposureSettings(threshold=0, step=1)
    assert exposure.rank_fairness(f, m, n, 10, "rND", loose)[0] > 0
    # n < k: a list of 3 at cutoff 10 or 30 is the list at cutoff 3; values past n (padding) are ignored.
    f = np.array([[3.0, 0.0, 1.0, 9.0, 9.0]])
    m = np.array([[0.0, 2.0, 3.0, 0.0, 0.0]])
    n = np.array([3])
    for measure in ("rKL", "rND", "rRD"):
        at3 = exposure.rank_fairness(f, m, n, 3, measure)[0]
        assert exposure.rank_fairness(f, m, n, 10, measure)[0] == at3
        assert exposure.rank_fairness(f, m, n, 30, measure)[0] == at3
    assert exposure.awrf(f, m, n, 10)[0] == exposure.awrf(f, m, n, 3)[0]
    # Cutoff 1: the one cut point is rank 1 (δ_1 = 1).
    assert exposure.rank_fairness(f, m, n, 1, "rND")[0] == 1.0


def test_settings_are_checked():
    for bad in (
        {"weights": "log"},
        {"p": 0.0},
        {"p": 1.0},
        {"target": 0.0},
        {"target": 1.5},
        {"protected": "other"},
        {"step": 0},
        {"step": 2.5},
        {"step": 10**30},
        {"threshold": -1},
    ):
        with pytest.raises(ValueError):
            ExposureSettings(**bad).validate()
    ExposureSettings().validate()
    assert ExposureSettings().awrf_variant() == "dcg" and ExposureSettings().rank_variant() == "female"
    chosen = ExposureSettings(weights="geometric", p=0.3, target=0.4, protected="male", step=5)
    assert chosen.awrf_variant() == "geometric:0.3,t=0.4"
    assert chosen.rank_variant() == "male,t=0.4,step=5"
    assert chosen.protected_share == pytest.approx(0.6)


# --- the vectorised code against a plain loop over queries ----------------------------------------


def naive(f_row, m_row, n, cutoff, measure, settings):
    """One query, straight from the definitions in genderbias/ranking/exposure.py's docstring."""
    docs = [(f_row[r], m_row[r]) for r in range(min(cutoff, n))]
    aligned = [(f / (f + m), m / (f + m)) if f + m > settings.threshold else None for f, m in docs]
    if measure == "AWRF":
        e_f = e_m = 0.0
        for r, a in enumerate(aligned, start=1):
            if settings.weights == "dcg":
                w = 1 / math.log2(r + 1)
            elif settings.weights == "trec":
                w = 1 / math.log2(max(r, 2))
            else:
                w = settings.p * (1 - settings.p) ** (r - 1)
            if a is not None:
                e_f += w * a[0]
                e_m += w * a[1]
        return 1.0 if e_f + e_m == 0 else 1 - jsd(e_f / (e_f + e_m), settings.target)
    q = settings.target if settings.protected == "female" else 1 - settings.target
    length = len(docs)
    cuts = sorted({i for i in range(settings.step, length + 1, settings.step)} | ({length} if length else set()))
    top = bottom = 0.0
    for i in cuts:
        gendered = [a for a in aligned[:i] if a is not None]
        if not gendered:
            continue
        share = sum(a[0] if settings.protected == "female" else a[1] for a in gendered) / len(gendered)
        delta = 1 / math.log2(max(i, 2))
        if measure == "rND":
            term, largest = abs(share - q), max(q, 1 - q)
        elif measure == "rKL":
            term = sum(x * math.log(x / y) for x, y in ((share, q), (1 - share, 1 - q)) if x > 0)
            largest = max(-math.log(q), -math.log(1 - q))
        else:
            ratio = q / (1 - q)
            current = math.inf if share == 1 else share / (1 - share)
            term, largest = max(0.0, ratio - current), ratio
        top += delta * term
        bottom += delta * largest
    return 0.0 if bottom == 0 else top / bottom


@pytest.mark.parametrize(
    "choice",
    [
        ExposureSettings(),
        ExposureSettings(weights="trec", target=0.3, protected="male", step=3),
        ExposureSettings(weights="geometric", p=0.2, target=0.6, step=1, threshold=2),
    ],
)
def test_vectorised_equals_a_loop_over_queries(choice):
    rng = np.random.default_rng(7)
    queries, depth = 60, 25
    f = rng.poisson(0.8, size=(queries, depth)).astype(float)
    m = rng.poisson(1.2, size=(queries, depth)).astype(float)
    n = rng.integers(0, depth + 1, size=queries)
    n[:3] = (0, 1, depth)
    for cutoff in (1, 5, 10, 20, 30):
        columns = exposure.exposure_columns(f, m, n, [cutoff], choice)
        for measure in exposure.METRICS:
            expected = [naive(f[i], m[i], n[i], cutoff, measure, choice) for i in range(queries)]
            assert columns[f"{measure}@{cutoff}"] == pytest.approx(expected, abs=1e-12), (measure, cutoff)


def test_through_measures_with_polars_frames():
    # The worked example as a run: docid order, a document missing from the counts is neutral.
    run = pl.DataFrame({"qid": ["q"] * 5, "docid": ["d1", "d2", "d3", "d4", "zz"], "rank": [1, 2, 3, 4, 5]})
    counts = pl.DataFrame({"docid": ["d1", "d2", "d3", "d4"], "f": [3, 0, 1, 0], "m": [0, 0, 3, 2], "length": [9] * 4})
    table = measures.exposure_fairness(run, counts, [4, 5], ExposureSettings(step=2))
    assert table.loc["q", "rND@4"] == pytest.approx(13 / 18)
    assert table.loc["q", "AWRF@4"] == pytest.approx(0.996553, abs=1e-6)
    # Rank 5 (missing, neutral) adds a cut point at 5 where the gendered documents are the same three.
    assert table.loc["q", "rND@5"] == pytest.approx((13 / 24 + (1 / math.log2(5)) / 12) / (0.75 + 0.5 / math.log2(5)))
    long = measures.evaluate_run(run, counts, counts, [4], exposure=ExposureSettings(weights="trec", protected="male"))
    variants = dict(zip(long["metric"], long["variant"], strict=False))
    assert variants["AWRF"] == "trec" and variants["rKL"] == variants["rRD"] == "male"


# --- FairRankTune, where its definitions coincide with ours (crisp groups) -----------------------


def crisp_world(seed: int, length: int):
    """A ranking of ``length`` documents, each wholly female (f = 3) or wholly male (m = 3)."""
    rng = np.random.default_rng(seed)
    female = rng.random(length) < 0.4
    female[:2] = (True, False)  # both groups present
    return female, np.where(female, 3.0, 0.0)[None, :], np.where(female, 0.0, 3.0)[None, :]


@pytest.mark.parametrize(("seed", "length", "p"), [(1, 8, 0.5), (2, 25, 0.2), (3, 40, 0.05)])
def test_group_attention_equals_fairranktune_awrf(seed, length, p):
    import pandas as pd
    from FairRankTune import Metrics

    female, f, m = crisp_world(seed, length)
    items = [f"d{i}" for i in range(length)]
    groups = {item: ("f" if is_f else "m") for item, is_f in zip(items, female, strict=True)}
    _, attention = Metrics.AWRF(pd.DataFrame({"ranking": items}), groups, p, "MaxMinDiff")
    # FairRankTune: 100·p(1−p)^(r−1) summed per group, divided by the group's size.
    sizes = {"f": int(female.sum()), "m": int((~female).sum())}
    settings = ExposureSettings(weights="geometric", p=p)
    e_f, e_m = exposure.group_exposure(f, m, np.array([length]), length, settings)
    assert e_f[0] == pytest.approx(attention["f"] * sizes["f"] / 100, rel=1e-12)
    assert e_m[0] == pytest.approx(attention["m"] * sizes["m"] / 100, rel=1e-12)
    # AWRF from FairRankTune's group attention and scipy's Jensen–Shannon: the same value.
    from scipy.spatial.distance import jensenshannon

    totals = np.array([attention["f"] * sizes["f"], attention["m"] * sizes["m"]])
    expected = 1 - jensenshannon(totals / totals.sum(), [0.5, 0.5]) ** 2
    assert exposure.awrf(f, m, np.array([length]), length, settings)[0] == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize(("seed", "length"), [(4, 6), (5, 30), (6, 75)])
def test_discounted_kl_equals_fairranktune_ndkl(seed, length):
    """Geyik et al.'s NDKL is the rKL-style discounted KL with every rank a cut point, δ_i =
    1/log2(i + 1), the list's own group shares as reference and Σ δ_i as normaliser."""
    import pandas as pd
    from FairRankTune import Metrics

    female, f, m = crisp_world(seed, length)
    items = [f"d{i}" for i in range(length)]
    groups = {item: ("f" if is_f else "m") for item, is_f in zip(items, female, strict=True)}
    expected = Metrics.NDKL(pd.DataFrame({"ranking": items}), groups)
    a_f, _, gendered = exposure.alignment(f, m)
    total, weights, _ = exposure.discounted_sums(
        a_f, gendered, np.array([length]), length, "rKL", q=np.array([female.mean()]), step=1, discount="dcg"
    )
    # FairRankTune adds 1e-7 to every probability before its KL: agreement to about 1e-6.
    assert total[0] / weights[0] == pytest.approx(expected, abs=2e-6)
    assert expected > 0.01  # not a trivial agreement on 0
