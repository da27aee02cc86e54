"""Label uncertainty in bias figures (genderbias.crowd.label_uncertainty): the corrected class mean, its
combined interval, and the promise that the combined interval covers the true-set value.

The simulation makes its own truth: queries of four classes (n, f, m, o) whose per-query values
depend on the class (gendered queries are more biased, the case label noise distorts), crowds
of three votes each right 80% of the time, a share labelled by a machine right 90% of the time,
and a few researcher rulings. The label probabilities are the exact posteriors of that process
(calibrated, as Dawid–Skene with gold and the calibration sample estimate them).

Posteriors too sure, carried into the label-corrected intervals (issue 58, item 2): where the crowd
model's check warns, replicate crowds drawn from the fit with the batch's spread of difficulty, refitted,
show how much too sure the model is (a temperature); the batch's posteriors tempered by it move the
corrected figures by their bias (:meth:`genderbias.crowd.label_probabilities.LabelModel.recalibrated`,
:meth:`genderbias.crowd.label_uncertainty.CorrectedFit.calibration_bias`) and the interval reaches that far
(:func:`genderbias.stats.intervals.extended`). The truth is the simulation's (``genderbias/crowd/simulation/studies.py``,
``Crowd.difficulty``): hard truly gendered queries get unanimous "n" votes, so the corrected value of
run A (non-gendered class mean) is too high.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from genderbias.crowd import class_means, label_uncertainty
from genderbias.crowd import label_uncertainty as lu
from genderbias.crowd.aggregation import dawid_skene
from genderbias.crowd.label_probabilities import LabelModel, crowd_quality
from genderbias.crowd.simulation import studies as cs
from genderbias.stats import intervals, significance

LABELS = ["n", "f", "m", "o"]
PRIOR = np.array([0.6, 0.15, 0.15, 0.10])
#: Class means of run A and of the paired difference B − A: gendered queries lean harder.
MEAN_A = np.array([0.05, 0.40, 0.50, 0.10])
MEAN_DIFFERENCE = np.array([0.02, 0.15, 0.25, 0.05])


def _posterior_from_votes(votes: np.ndarray, accuracy: float) -> np.ndarray:
    """Exact posterior over the 4 labels given each query's votes (each right w.p. ``accuracy``,
    wrong uniformly over the other three labels)."""
    wrong = (1 - accuracy) / 3
    counts = np.stack([(votes == c).sum(axis=1) for c in range(4)], axis=1)  # [n × 4]
    log_like = counts * np.log(accuracy) + (votes.shape[1] - counts) * np.log(wrong)
    log_post = log_like + np.log(PRIOR)
    post = np.exp(log_post - log_post.max(axis=1, keepdims=True))
    return post / post.sum(axis=1, keepdims=True)


def simulate(rng: np.random.Generator, n: int = 1000):
    """One study: per-query values of runs A and B, label probabilities, the point-estimate set, the truth."""
    truth = rng.choice(4, size=n, p=PRIOR)
    a = MEAN_A[truth] + rng.normal(0, 0.2, n)
    b = a + MEAN_DIFFERENCE[truth] + rng.normal(0, 0.1, n)
    source = rng.choice(3, size=n, p=[0.75, 0.2, 0.05])  # crowd, machine, ruling
    crowd_votes = np.where(rng.random((n, 3)) < 0.8, truth[:, None], (truth[:, None] + rng.integers(1, 4, (n, 3))) % 4)
    machine_vote = np.where(rng.random(n) < 0.9, truth, (truth + rng.integers(1, 4, n)) % 4)[:, None]
    post = np.where(
        (source == 0)[:, None],
        _posterior_from_votes(crowd_votes, 0.8),
        _posterior_from_votes(machine_vote, 0.9),
    )
    post[source == 2] = np.eye(4)[truth[source == 2]]
    qids = [f"q{i}" for i in range(n)]
    probabilities = pd.DataFrame(post, index=qids, columns=LABELS)
    in_set = {q for q, row in zip(qids, post, strict=True) if row.argmax() == 0}
    return qids, a, b, probabilities, in_set


def _report(qids, a, b, probabilities, in_set, samples=400, seed=0) -> pd.DataFrame:
    long = pd.concat(
        [
            pd.DataFrame({"run": run, "qid": qids, "metric": "ARaB", "variant": "tf", "cutoff": 10, "value": v})
            for run, v in (("A", a), ("B", b))
        ],
        ignore_index=True,
    )
    point_set = long[long["qid"].isin(in_set)]
    summary = significance.summarise(point_set, baseline="A", samples=samples, seed=seed)
    wide = significance.wide_values(long)
    labels = LabelModel(probabilities)
    return lu.combined_summary(wide, labels, in_set, summary, baseline="A", samples=samples, seed=seed)


def test_class_means_recover_known_mixture_exactly():
    """Values that are exactly a mixture of class means with the given weights: β is those means."""
    p = np.array([[1, 0], [0, 1], [0.5, 0.5], [0.25, 0.75]])
    means = np.array([2.0, -1.0])
    values = p @ means
    assert np.allclose(class_means.class_means(p, values)[:, 0], means)


def test_class_means_leave_missing_values_out_per_column():
    p = np.array([[1, 0], [0, 1], [1, 0], [0, 1], [0.5, 0.5]])
    values = np.array([[1.0, 1.0], [3.0, 3.0], [1.0, np.nan], [3.0, 3.0], [2.0, 2.0]])
    beta = class_means.class_means(p, values)
    assert np.allclose(beta, [[1.0, 1.0], [3.0, 3.0]])


def test_one_hot_probabilities_give_the_set_mean_and_no_label_share():
    """Certain labels: the corrected value is the plain mean over S, and labels add no width."""
    rng = np.random.default_rng(3)
    qids = [f"q{i}" for i in range(60)]
    truth = rng.choice(2, size=60)
    probabilities = pd.DataFrame(np.eye(4)[truth], index=qids, columns=LABELS)
    a = rng.normal(0, 1, 60)
    b = a + rng.normal(0.1, 0.1, 60)
    in_set = {q for q, t in zip(qids, truth, strict=True) if t == 0}
    out = _report(qids, a, b, probabilities, in_set).set_index("run")
    assert out.loc["A", "corrected"] == pytest.approx(out.loc["A", "value"])
    # Resampling every query (not only S) lets |S| vary, so the width is close to, not equal to, S's.
    assert out.loc["A", "label_share"] < 0.15
    assert out.loc["B", "difference_corrected"] == pytest.approx(out.loc["B", "value"] - out.loc["A", "value"])


def test_p_value_follows_the_combined_interval_and_keeps_the_t_test_beside_it():
    rng = np.random.default_rng(5)
    out = _report(*simulate(rng)).set_index("run")
    b = out.loc["B"]
    excludes_zero = b["difference_combined_low"] > 0 or b["difference_combined_high"] < 0
    # One comparison: Holm leaves p as it is. A percentile-type p is 2(1 + m)/(B + 1) with B = 400 draws, never
    # below 2/401; the normal interval's (where the crowd check passes) is 2(1 − Φ(|θ̂|/s)), above 0.
    assert 0 < b["p_value"] <= 1
    if b["p_value"] < 0.05:
        assert excludes_zero
    if excludes_zero:
        assert b["p_value"] <= 0.05 + 2 / 401
    assert b["query_p_value"] is not None
    assert out.loc["A", "p_value"] is None  # the baseline is not tested against itself


@pytest.mark.slow
def test_combined_interval_covers_the_true_set_value_where_the_query_only_one_does_not():
    """Coverage over 150 simulated studies of 1,000 queries (nominal 95%; 300 before issue 55, half the CPU).

    Monte-Carlo standard error of a coverage near 0.95 over R = 150 draws: √(0.95·0.05/150) ≈
    0.018 (0.013 at 300); the combined interval is asserted within 3 s.e. (plus 0.01 for the percentile
    bootstrap's known slight under-coverage) of 0.95. The query-only interval, centred on a set
    that gendered queries contaminate, is asserted to cover clearly less. Measured (``pytest -s``):
    combined 0.96 (value) and 0.94 (difference); query-only 0.75 and 0.76 (300 draws). The query-only
    bound, 0.95 − 5 s.e. = 0.86, is still 3 of its own s.e. (0.035 at 0.75) above what it measured.
    """
    rng = np.random.default_rng(2026)
    draws = 150
    truth_a, truth_difference = MEAN_A[0], MEAN_DIFFERENCE[0]
    covered = {"query_a": 0, "combined_a": 0, "query_d": 0, "combined_d": 0}
    for r in range(draws):
        out = _report(*simulate(rng), samples=200, seed=r).set_index("run")
        a, b = out.loc["A"], out.loc["B"]
        covered["query_a"] += a["ci_low"] <= truth_a <= a["ci_high"]
        covered["combined_a"] += a["combined_low"] <= truth_a <= a["combined_high"]
        covered["query_d"] += b["difference_low"] <= truth_difference <= b["difference_high"]
        covered["combined_d"] += b["difference_combined_low"] <= truth_difference <= b["difference_combined_high"]
    rate = {k: v / draws for k, v in covered.items()}
    print("coverage over", draws, "draws:", rate)
    se = np.sqrt(0.95 * 0.05 / draws)
    for key in ("combined_a", "combined_d"):
        assert abs(rate[key] - 0.95) <= 3 * se + 0.01, rate
    assert rate["query_a"] < 0.95 - 5 * se, rate
    assert rate["query_d"] < 0.95 - 5 * se, rate


def test_contributions_rank_uncertain_influential_queries_first():
    """Four queries, gendered probability below ten queries' worth, so D is the π_n-weighted mean:
    π_n = (1, 1, 0.6, 0.5), the rest "m"; d = B − A = (0, 0, 3, 5); D = (1.8 + 2.5)/3.1 = 1.387097.

    Settling q3 as n: (3 + 2.5)/3.5 = 1.571429 (+0.184332); as m: 2.5/2.5 = 1 (−0.387097);
    expected shift 0.6·0.184332 + 0.4·0.387097 = 0.265438. Settling q4 as n: 6.8/3.6 = 1.888889
    (+0.501792); as m: 1.8/2.6 = 0.692308 (−0.694789); expected 0.598291. q1, q2 are certain: 0.
    """
    qids = ["q1", "q2", "q3", "q4"]
    a = pd.Series([0.0, 0.0, 0.0, 0.0], index=qids)
    b = pd.Series([0.0, 0.0, 3.0, 5.0], index=qids)
    pi_n = np.array([1.0, 1.0, 0.6, 0.5])
    probabilities = pd.DataFrame({"n": pi_n, "f": 0.0, "m": 1 - pi_n, "o": 0.0}, index=qids, columns=LABELS)
    difference, table = class_means.contributions(b, a, probabilities, {"q1", "q2", "q3", "q4"})
    assert difference == pytest.approx(4.3 / 3.1)
    assert list(table["qid"][:2]) == ["q4", "q3"]
    by = table.set_index("qid")
    assert by.loc["q4", "expected_shift"] == pytest.approx(
        0.5 * (6.8 / 3.6 - 4.3 / 3.1) + 0.5 * (4.3 / 3.1 - 1.8 / 2.6)
    )
    assert by.loc["q3", "if_non_gendered"] == pytest.approx(5.5 / 3.5 - 4.3 / 3.1)
    assert by.loc["q3", "if_gendered"] == pytest.approx(1.0 - 4.3 / 3.1)
    assert by.loc["q1", "expected_shift"] == pytest.approx(0.0)


def test_contributions_refit_the_class_means_with_gendered_labels():
    """With enough gendered probability for a column of its own, settling a query refits the
    least-squares class means: the result equals a fresh fit with that query's row made certain."""
    rng = np.random.default_rng(4)
    qids = [f"q{i}" for i in range(60)]
    pi_n = rng.uniform(0.0, 1.0, 60)
    probabilities = pd.DataFrame({"n": pi_n, "f": 1 - pi_n, "m": 0.0, "o": 0.0}, index=qids, columns=LABELS)
    a = pd.Series(0.0, index=qids)
    b = pd.Series(rng.normal(0.1, 0.3, 60), index=qids)
    difference, table = class_means.contributions(b, a, probabilities, set(qids[:30]))
    p, n_column, _ = class_means.design(probabilities)
    assert difference == pytest.approx(class_means.class_means(p, b.to_numpy())[n_column, 0])
    settled = probabilities.copy()
    settled.loc["q7"] = [1.0, 0.0, 0.0, 0.0]
    p7, _, _ = class_means.design(settled)
    refit = class_means.class_means(p7, b.to_numpy())[n_column, 0]
    assert table.set_index("qid").loc["q7", "if_non_gendered"] == pytest.approx(refit - difference)


def test_worked_example_of_the_docs():
    """docs/metrics.md, "Label uncertainty": five queries, labels n and m.

    PᵀP = [[2.36, 0.24], [0.24, 2.16]], Pᵀv = [0.94, 2.36], det 5.04:
    β_n = (0.94·2.16 − 0.24·2.36)/5.04 = 1.464/5.04 = 0.290476…,
    β_m = (2.36·2.36 − 0.24·0.94)/5.04 = 5.344/5.04 = 1.060317…; the set's plain mean is 1.3/3.
    """
    p = np.array([[1, 0], [1, 0], [0.6, 0.4], [0, 1], [0, 1]])
    v = np.array([0.1, 0.3, 0.9, 1.1, 0.9])
    beta = class_means.class_means(p, v)[:, 0]
    assert beta == pytest.approx([1.464 / 5.04, 5.344 / 5.04])
    assert v[:3].mean() == pytest.approx(1.3 / 3)


def _two_runs(qids, a, b, probabilities, in_set, samples=300):
    return _report(qids, a, b, probabilities, in_set, samples=samples).set_index("run")


def test_one_rare_ruling_does_not_wipe_out_the_intervals():
    """500 certain queries and one ruled "o": the "o" label is pooled, not a column of its own that
    most bootstrap draws miss (which left every interval and p undefined)."""
    rng = np.random.default_rng(11)
    qids = [f"q{i}" for i in range(501)]
    labels = np.zeros((501, 4))
    labels[:500, 0] = 1.0
    labels[500, 3] = 1.0
    probabilities = pd.DataFrame(labels, index=qids, columns=LABELS)
    a = rng.normal(0, 0.2, 501)
    b = a + 0.05 + rng.normal(0, 0.05, 501)
    out = _two_runs(qids, a, b, probabilities, set(qids[:500]))
    assert out.loc["A", "combined_low"] is not None and out.loc["B", "difference_combined_low"] is not None
    assert out.loc["B", "p_value"] is not None and out.loc["B", "p_value"] < 0.05


def test_near_certain_labels_add_almost_no_width():
    """1,000 queries 99.9% sure, a sliver of "o" on each (≈ 1 query's worth): the corrected value is
    the π_n-weighted mean, and the labels' share of the width stays small (it was about half)."""
    rng = np.random.default_rng(12)
    qids = [f"q{i}" for i in range(1000)]
    sliver = rng.uniform(0, 0.002, 1000)
    probabilities = pd.DataFrame({"n": 1 - sliver, "f": 0.0, "m": 0.0, "o": sliver}, index=qids, columns=LABELS)
    a = rng.normal(0, 0.2, 1000)
    b = a + rng.normal(0.01, 0.05, 1000)
    out = _two_runs(qids, a, b, probabilities, set(qids))
    assert out.loc["A", "corrected"] == pytest.approx(np.average(a, weights=1 - sliver))
    assert out.loc["A", "label_share"] < 0.15 and out.loc["B", "difference_label_share"] < 0.15


def test_design_pools_small_labels_and_keeps_rows_summing_to_one():
    frame = pd.DataFrame(
        {"n": [0.5] * 40, "f": [0.5] * 20 + [0.0] * 20, "m": [0.0] * 20 + [0.45] * 20, "o": [0.0] * 20 + [0.05] * 20}
    )
    p, n_column, row_weights = class_means.design(frame)
    assert row_weights is None and n_column == 0
    assert p.shape == (40, 3)  # n; f (10 queries' worth, its own); m and o pooled (9 + 1 = 10)
    assert np.allclose(p.sum(axis=1), 1.0)


def _drawn(crowd: cs.Crowd, seed: int, n: int = 1000):
    rng = np.random.default_rng([2040, seed])
    drawn = cs.answered(cs.study(rng, cs.synthetic_truth(rng, n), crowd))
    ds = dawid_skene(drawn.judgments, gold=drawn.gold)
    table = ds.held_out.loc[drawn.qids, list(cs.LABELS)]
    return drawn, ds, table, LabelModel(table, ds, drawn.qids)


@pytest.mark.slow
def test_on_hard_queries_the_bias_is_sized_upwards_and_the_interval_reaches_down_by_it():
    """3 studies of the difficulty crowd (σ = 1, seeds [2040, s]), every one failing the check. Measured over
    40 such studies (``crowd_coverage --crowd difficulty``, docs/quality.md "Too sure, and by how much"): the
    value's sized bias has mean +0.0128 where the true error's is +0.0161: asserted positive in each of the 3
    here, with the model found too sure (temperature above 1), and below the true error plus 3 of the
    bootstrap's s.d. The interval is the one without the bias joined with itself moved down by it, p
    the larger of the two (computed here from the same draws with the model told its check passes)."""
    for seed in (1, 2, 4):
        drawn, ds, table, model = _drawn(cs.CROWDS["difficulty"], seed)
        assert "misfit" in crowd_quality(ds)["reasons"]
        recalibrated = model.recalibrated(3)
        assert recalibrated.attrs["temperature"] > 1.0 and recalibrated.attrs["spread"] > 0
        with_bias = label_uncertainty.CorrectedFit(model, 40, 3)  # its recalibrated(3): the table above
        # The same model told its check passes: the same draws, no recalibration.
        plain = label_uncertainty.CorrectedFit(LabelModel(table, ds, drawn.qids, {"warning": False}), 40, 3)
        values = drawn.a[:, None]
        bias = with_bias.calibration_bias(values)
        truth_labels = np.eye(len(cs.LABELS))[drawn.truth]
        true_error = (
            class_means.class_means(table.to_numpy(), values)[0, 0]
            - class_means.class_means(truth_labels, values)[0, 0]
        )
        assert bias[0] > 0, (seed, bias, true_error)
        # The bias is the estimate's move when the table's crowd rows are tempered: least squares of the values
        # on the probabilities (the report's columns, label_map), computed here with numpy's own solver.
        columns, _ = class_means.label_map(table)

        def least_squares(probabilities, columns=columns, values=values):
            return np.linalg.lstsq(probabilities.to_numpy() @ columns, values[:, 0], rcond=None)[0][0]

        assert bias[0] == pytest.approx(least_squares(table) - least_squares(recalibrated.loc[table.index]))
        point, low, high, p = with_bias.interval(values)
        construction = with_bias.construction()  # where the check warns: the rule's widened construction
        assert construction == intervals.construction_for(trusted=False)
        p_point, p_low, p_high, p_p = plain.interval(values, construction=construction)
        _, fitted, _ = plain.estimates(values)
        # The reach: that bias plus twice the draws' drift over the estimate (percentile → basic interval).
        reach = bias + 2 * (np.nanmean(fitted, axis=0) - p_point)
        assert point == pytest.approx(p_point)
        assert low == pytest.approx(p_low - np.maximum(reach, 0)) and high == pytest.approx(
            p_high - np.minimum(reach, 0)
        )
        assert bias[0] < true_error + 3 * np.nanstd(fitted[:, 0], ddof=1)
        extra = plain.extra_variance(values, construction)
        moved = intervals.bootstrap_p(
            fitted - reach, point - reach, construction, None, label_uncertainty.MIN_USABLE_DRAWS, extra
        )
        assert p == pytest.approx(np.fmax(p_p, moved))


@pytest.mark.slow
def test_a_crowd_the_model_fits_keeps_its_interval():
    """A moderate study whose check passes (seed [2040, 0]: no reason to warn): no replicates, no bias."""
    drawn, ds, _, model = _drawn(cs.MODERATE, 0)
    assert not crowd_quality(ds)["warning"]
    assert model.recalibrated(3) is None
    fit = label_uncertainty.CorrectedFit(model, 40, 3)
    assert fit.calibration_bias(drawn.a[:, None]) is None
    # Trusted (the check passes; no sign of errors shared by query), the rule's construction: the refitted
    # bootstrap's normal interval, no jackknife over the workers; computed here from the draws with the statistics
    # module (an independent computation).
    found = model.shared_errors()
    assert model.trusted() and found.clear and not found.fires, found
    from statistics import NormalDist

    values = np.column_stack([drawn.a, drawn.b - drawn.a])
    point, low, high, _ = fit.interval(values)
    _, fitted, _ = fit.estimates(values)
    half = NormalDist().inv_cdf(0.975) * np.std(fitted, axis=0, ddof=1)
    assert fit.construction() == intervals.construction_for(trusted=True)
    assert fit.extra_variance(values) is None
    assert low == pytest.approx(point - half) and high == pytest.approx(point + half)
