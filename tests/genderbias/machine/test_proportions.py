"""Batch category shares by PPI++ (genderbias.machine.proportions): worked examples and coverage simulations."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from genderbias.labels import LABELS
from genderbias.machine.proportions import category_proportions

HUMAN = list("nnfmnfnnmn")
MACHINE_SAMPLE = list("nffnnfnnmn")
MACHINE_REST = list("nnnfmmnnnfnnmmnnnnfm")
Z95 = stats.norm.ppf(0.975)


def _indicator(values, label) -> np.ndarray:
    return np.array([v == label for v in values], dtype=float)


# --- worked examples -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("label", ["n", "f", "m"])
def test_classic_ppi_matches_the_published_estimator(label):
    # PPI (λ = 1), Angelopoulos et al. 2023: θ = mean(Ŷ_unl) + mean(Y − Ŷ),
    # CI = θ ± z · sqrt(var(Ŷ_unl)/N + var(Y − Ŷ)/n), population variances (ppi_py uses ndarray.std, ddof 0).
    # The unlabelled set is the machine labels of the whole batch: sample + rest, N = 30.
    y, yhat = _indicator(HUMAN, label), _indicator(MACHINE_SAMPLE, label)
    yhat_batch = _indicator(MACHINE_SAMPLE + MACHINE_REST, label)
    n, big_n = 10, 30
    theta = yhat_batch.mean() + (y - yhat).mean()
    # No floor: the sample holds 2 or more of every class and of its rest, above Agresti-Coull's
    # n (z²/2)/(n + z²) = 1.39, though f's and m's Y − Ŷ hold a single disagreement each.
    half = Z95 * np.sqrt(np.var(yhat_batch, ddof=0) / big_n + np.var(y - yhat, ddof=0) / n)

    result = category_proportions(HUMAN, MACHINE_SAMPLE, MACHINE_REST, lam=1)[label]
    assert result["estimate"] == pytest.approx(theta)
    assert result["ci"] == pytest.approx([max(theta - half, 0), min(theta + half, 1)])
    assert result["machine_only"] == pytest.approx(yhat_batch.mean())
    # Classical CLT interval of a share: p ± z sqrt(p (1 − p) / n).
    p = y.mean()
    assert result["sample_only"] == pytest.approx(p)
    s = Z95 * np.sqrt(p * (1 - p) / n)
    assert result["sample_ci"] == pytest.approx([max(p - s, 0), min(p + s, 1)])


def test_n_share_by_hand():
    # Category n: Y = 1100101101 (mean .6), Ŷ = 1001101101 (mean .6), Y − Ŷ = 0,1,0,−1,0,0,0,0,0,0 (mean 0, var .2);
    # the batch has 6 + 12 = 18 machine n of 30 (var .6 · .4 = .24).
    # θ = 18/30 + 0 = .6; se² = .24 / 30 + .2 / 10 = .008 + .02 = .028, se = .167332; half = 1.959964 · .167332
    result = category_proportions(HUMAN, MACHINE_SAMPLE, MACHINE_REST, lam=1)["n"]
    assert result["estimate"] == pytest.approx(0.6)
    assert result["ci"] == pytest.approx([0.6 - 1.959964 * 0.167332, 0.6 + 1.959964 * 0.167332], abs=1e-5)
    assert result["sample_only"] == pytest.approx(0.6)
    assert result["machine_only"] == pytest.approx(0.6)


def test_weighted_classic_ppi_matches_the_weighted_estimator():
    # With weights w, ppi_py rescales them to mean 1 (w̃ = w n / Σw):
    # θ = mean(Ŷ_unl) + mean(w̃ (Y − Ŷ)), se² = var(Ŷ_unl)/N + var(w̃ (Y − Ŷ))/n.
    w = np.array([1.0, 2, 1, 3, 1, 2, 1, 1, 4, 1])
    y, yhat = _indicator(HUMAN, "n"), _indicator(MACHINE_SAMPLE, "n")
    yhat_batch = _indicator(MACHINE_SAMPLE + MACHINE_REST, "n")
    wt = w * 10 / w.sum()
    theta = yhat_batch.mean() + (wt * (y - yhat)).mean()
    half = Z95 * np.sqrt(yhat_batch.var() / 30 + (wt * (y - yhat)).var() / 10)
    result = category_proportions(HUMAN, MACHINE_SAMPLE, MACHINE_REST, weights=w, lam=1)["n"]
    assert result["estimate"] == pytest.approx(theta)
    assert result["ci"] == pytest.approx([theta - half, theta + half])
    assert result["sample_only"] == pytest.approx((w * y).sum() / w.sum())


@pytest.mark.parametrize("lam", [None, 0.0, 0.5, 1.0])
def test_stratum_weights_give_the_classical_stratified_estimator_for_any_lambda(lam):
    # Strata = machine labels: θ = Σ_s (N_s / N) · mean of Y over the sampled queries of stratum s.
    # The weights N_s / n_s of strata n: 6 sampled of 18; f: 3 of 6; m: 1 of 6.
    weights = [3.0, 2.0, 2.0, 3.0, 3.0, 2.0, 3.0, 3.0, 6.0, 3.0]
    result = category_proportions(HUMAN, MACHINE_SAMPLE, MACHINE_REST, weights=weights, lam=lam)
    for label in "nfm":
        by_stratum = {
            s: np.mean([h == label for h, m in zip(HUMAN, MACHINE_SAMPLE, strict=True) if m == s]) for s in "nfm"
        }
        expected = 18 / 30 * by_stratum["n"] + 6 / 30 * by_stratum["f"] + 6 / 30 * by_stratum["m"]
        assert result[label]["estimate"] == pytest.approx(expected)


def test_returns_every_label_with_clamped_intervals():
    result = category_proportions(HUMAN, MACHINE_SAMPLE, MACHINE_REST)
    assert list(result) == list(LABELS)
    for row in result.values():
        assert set(row) == {"estimate", "ci", "machine_only", "sample_only", "sample_ci"}
        assert 0 <= row["ci"][0] <= row["estimate"] <= row["ci"][1] <= 1
        assert 0 <= row["sample_ci"][0] <= row["sample_ci"][1] <= 1
    # f: the sample's share is .2 with a classical half-width above .2, so the raw lower bound is negative.
    assert result["f"]["sample_ci"][0] == 0.0
    # o: never given by the machine nor the humans: λ cannot be tuned (0/0); the sample alone says 0, its
    # variance floored at p0 (1 − p0), p0 = (z²/2)/(10 + z²) (Agresti-Coull with no member): "rare", not a
    # precise zero.
    p0 = (Z95**2 / 2) / (10 + Z95**2)
    high = Z95 * np.sqrt(p0 * (1 - p0) / 10)
    o = result["o"]
    assert (o["estimate"], o["machine_only"], o["sample_only"]) == (0.0, 0.0, 0.0)
    assert o["ci"] == pytest.approx([0.0, high]) and o["sample_ci"] == pytest.approx([0.0, high])


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        ((HUMAN[:9], MACHINE_SAMPLE, MACHINE_REST), {}, "same queries"),
        (([], [], MACHINE_REST), {}, "at least 2"),
        ((["n"], ["n"], MACHINE_REST), {}, "at least 2"),
        (([*HUMAN[:9], "x"], MACHINE_SAMPLE, MACHINE_REST), {}, r"human has labels outside .*'x'"),
        ((HUMAN, MACHINE_SAMPLE, [*MACHINE_REST, "?"]), {}, "machine_rest has labels outside"),
        ((HUMAN, MACHINE_SAMPLE, MACHINE_REST), {"weights": [1.0] * 9}, "one value per sample query"),
        ((HUMAN, MACHINE_SAMPLE, MACHINE_REST), {"weights": [1.0] * 9 + [0.0]}, "positive"),
        ((HUMAN, MACHINE_SAMPLE, MACHINE_REST), {"weights": [1.0] * 9 + [np.nan]}, "finite"),
        ((HUMAN, MACHINE_SAMPLE, MACHINE_REST), {"alpha": 1.5}, "alpha"),
        ((HUMAN, MACHINE_SAMPLE, MACHINE_REST), {"lam": float("inf")}, "lam"),
        ((HUMAN, MACHINE_SAMPLE, MACHINE_REST), {"labels": ()}, "empty"),
        ((HUMAN, MACHINE_SAMPLE, MACHINE_REST), {"labels": ("n", "n", "f", "m")}, "duplicates"),
    ],
)
def test_invalid_input(args, kwargs, message):
    with pytest.raises(ValueError, match=message):
        category_proportions(*args, **kwargs)


# --- simulations ---------------------------------------------------------------------------------------------

TRUE_SHARES = [0.47, 0.20, 0.32, 0.01]  # n f m o, as in the study
# Machine confusion, rows = true label, columns = machine label (n f m o). About 81 % right; its errors are
# skewed: a quarter of female and male queries (names, say) are called non-gendered, so it over-counts n.
CONFUSION = np.array(
    [
        [0.92, 0.03, 0.04, 0.01],
        [0.25, 0.70, 0.04, 0.01],
        [0.25, 0.02, 0.72, 0.01],
        [0.30, 0.10, 0.10, 0.50],
    ]
)
BATCH, SAMPLE, SEEDS = 2000, 200, 400


def _batch(rng):
    truth = rng.choice(4, size=BATCH, p=TRUE_SHARES)
    machine = (rng.random(BATCH)[:, None] > CONFUSION.cumsum(axis=1)[truth]).sum(axis=1)
    return truth, np.minimum(machine, 3)


def _stratified_sample(rng, machine):
    """Proportional allocation by machine label (at least 2 per stratum), weights N_s / n_s, computed here."""
    picked, weights = [], []
    for s in np.unique(machine):
        members = np.flatnonzero(machine == s)
        n_s = max(2, round(SAMPLE * len(members) / BATCH))
        picked.append(rng.choice(members, size=n_s, replace=False))
        weights.append(np.full(n_s, len(members) / n_s))
    return np.concatenate(picked), np.concatenate(weights)


def _run(seed: int, *, stratified: bool):
    rng = np.random.default_rng(seed)
    truth, machine = _batch(rng)
    if stratified:
        sample, weights = _stratified_sample(rng, machine)
    else:
        sample, weights = rng.choice(BATCH, size=SAMPLE, replace=False), None
    rest = np.setdiff1d(np.arange(BATCH), sample)
    codes = np.array(LABELS)
    result = category_proportions(
        codes[truth[sample]].tolist(),
        codes[machine[sample]].tolist(),
        codes[machine[rest]].tolist(),
        weights=weights,
    )
    return result, np.bincount(truth, minlength=4) / BATCH


@pytest.fixture(scope="module")
def simulations():
    return {
        design: [_run(seed, stratified=design == "stratified") for seed in range(SEEDS)]
        for design in ("stratified", "random")
    }


def _covers(interval, value) -> bool:
    return interval[0] <= value <= interval[1]


@pytest.mark.slow
@pytest.mark.parametrize("design", ["stratified", "random"])
@pytest.mark.parametrize("label", ["n", "f", "m"])
def test_ppi_interval_covers_the_batch_share(simulations, design, label):
    # 95 % nominal; over 400 batches the binomial sd of the coverage rate is 1.1 %, so >= .92 is ~3 sd below.
    k = LABELS.index(label)
    coverage = np.mean([_covers(r[label]["ci"], truth[k]) for r, truth in simulations[design]])
    assert coverage >= 0.92


@pytest.mark.parametrize("design", ["stratified", "random"])
def test_the_machine_alone_is_biased(simulations, design):
    # The machine over-counts n by about .25 · (.20 + .32) − .08 · .47 + .30 · .01 ≈ .095; even a binomial interval around its
    # share (as if its labels were the truth) almost never holds the batch's true share.
    runs = simulations[design]
    bias = np.mean([r["n"]["machine_only"] - truth[0] for r, truth in runs])
    assert 0.07 < bias < 0.11
    shares = np.array([r["n"]["machine_only"] for r, _ in runs])
    half = Z95 * np.sqrt(shares * (1 - shares) / BATCH)
    truths = np.array([truth[0] for _, truth in runs])
    covered = np.abs(shares - truths) <= half
    assert np.mean(covered) < 0.01
    # ... while the PPI estimate is unbiased (mean error within 3 standard errors of 0).
    errors = np.array([r["n"]["estimate"] - truth[0] for r, truth in runs])
    assert abs(errors.mean()) < 3 * errors.std(ddof=1) / np.sqrt(len(errors))


@pytest.mark.parametrize("design", ["stratified", "random"])
@pytest.mark.parametrize("label", ["n", "f", "m"])
def test_ppi_interval_is_not_wider_than_the_sample_alone(simulations, design, label):
    widths = np.array(
        [
            [r[label]["ci"][1] - r[label]["ci"][0], r[label]["sample_ci"][1] - r[label]["sample_ci"][0]]
            for r, _ in simulations[design]
        ]
    )
    ppi, sample = widths.mean(axis=0)
    assert ppi <= sample


def test_weights_are_what_make_an_equal_allocation_sample_valid():
    # 50 queries per machine-label stratum (all of a smaller one): the sample over-represents the rare strata.
    # Weighted by N_s / n_s the interval keeps its coverage; unweighted, the rectifier mean(Y − Ŷ) is taken over
    # the wrong mix of strata and the interval misses the batch share of n far more often than 5 %.
    covered: dict[bool, list[bool]] = {True: [], False: []}
    codes = np.array(LABELS)
    for seed in range(150):
        rng = np.random.default_rng(seed)
        truth, machine = _batch(rng)
        sizes = np.bincount(machine, minlength=4)
        sample = np.concatenate(
            [
                rng.choice(np.flatnonzero(machine == s), size=min(50, sizes[s]), replace=False)
                for s in np.unique(machine)
            ]
        )
        rest = np.setdiff1d(np.arange(BATCH), sample)
        weights = sizes[machine[sample]] / np.minimum(50, sizes[machine[sample]])
        for weighted in (True, False):
            result = category_proportions(
                codes[truth[sample]].tolist(),
                codes[machine[sample]].tolist(),
                codes[machine[rest]].tolist(),
                weights=weights if weighted else None,
            )
            covered[weighted].append(_covers(result["n"]["ci"], np.mean(truth == 0)))
    assert np.mean(covered[True]) >= 0.92
    assert np.mean(covered[False]) < 0.90
