"""Coverage of the label-based intervals on a realistic simulated crowd (issue 40, items 2 and 4).

Studies from :func:`genderbias.crowd.simulation.coverage.coverage_study`: a *synthetic* truth with the SIGIR
2020 study's class shares (so the test runs without the reference data), 1,000 queries, three
workers per query out of 40 with class confusion, unequal accuracy and activity, spammers, a lazy
worker and a gold question in every HIT; the crowd model fitted with gold, each query read through
its *held-out* posterior (:func:`genderbias.crowd.estimation.held_out_posteriors`) and the model
refitted in every bootstrap draw; the report's estimator
(:func:`genderbias.crowd.label_uncertainty.combined_summary`) and the calibration report's de-noised accuracy
(:func:`genderbias.crowd.reliability.crowd_reliability`).

The full simulation (hundreds of studies at 1,000 queries, tens at 3,750, 200 resamples each) is run by
``manage.py crowd_coverage`` (docs/benchmarks.md, figures in docs/metrics.md). The bootstrap's own intervals
(percentile, basic, normal, BC, BCa) stayed below 0.93 at 1,000 queries; the crossed ones (the bootstrap plus the
workers' variance component, :func:`genderbias.stats.intervals.extra_variance`) reach it; the product's is ``crossed`` since
issue 58's crowd model, under which ``crossed_net`` fell short (docs/metrics.md, "The workers' variance"). This test runs a smaller
set within CI's budget and asserts one-sided bounds that a coverage at the measured level passes and a gross
failure does not.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from genderbias.crowd.aggregation import dawid_skene
from genderbias.crowd.label_probabilities import crowd_quality
from genderbias.crowd.simulation import coverage
from genderbias.crowd.simulation import studies as cs

MODERATE_STUDIES = 10
HEAVY_STUDIES = 3
#: Resamples per study: 100 (the benchmark's 200 halved, for CI's budget; the percentile's ends are noisier).
SAMPLES = 100


@pytest.mark.slow
def test_moderate_crowd_coverage_and_heavy_crowd_warning():
    """10 moderate and 3 heavy studies of 1,000 queries, 100 resamples each, with the product's interval (since
    2026-11-29 the rule ``checked``: ``normal`` where the crowd model is trusted, else what follows) (issue 55: 24 and 5 before, 2.4×
    the CPU for bounds that only catch a gross failure either way), with the product's interval
    (:data:`genderbias.stats.intervals.LABEL_INTERVAL`, ``crossed``: its jackknife over the workers costs 20 refits a
    figure; when it was ``crossed_net``, with the answers' too, about 1.7 s a study (3.6 → 5.3 s), so the studies
    went from 30 + 10 to 24 + 5 to keep CI's cost where it was).

    Measured with ``manage.py crowd_coverage`` (200 resamples; docs/quality.md, "Coverage on every crowd, now"):
    the product's interval now (``crossed``, with the reach where the check warns) covered value, difference and
    de-noised accuracy in 0.988, 0.975, 0.975 of 80 moderate studies and 0.988, 1.000, 1.000 of 80 heavy ones.
    Before (docs/metrics.md, "Coverage, as simulated"):
    ``crossed_net`` (the product's then, with the crowd model before issue 58) covered value, difference and
    de-noised accuracy in 0.966, 0.956 and 0.929 of 294 studies at 1,000 queries (s.e. 0.011–0.015; seeds [2040, 0…148] and [2040, 1000…1144];
    the first block alone 0.940, 0.940, 0.919) and in 0.970, 0.990, 0.950 of 100 at 3,750. The 24 studies this test
    ran before (seeds [2040, 0…23], 100 resamples): 22, 21 and 20 of 24 (0.917, 0.875, 0.833), warned 6 of 24; its
    first 10 are these. Asserted, one-sided: each of value, difference and de-noised accuracy covered in ≥ 6 of the
    10 studies, and value and difference together in ≥ 15 of 20. Binomial (studies independent; the two figures
    of a study are correlated, which makes the joint bound a little looser than stated): a correct 0.93
    procedure fails a figure's bound with probability 0.0003 and the joint one with 0.002; a 0.90 procedure
    with 0.002 and 0.011, an 0.80 one with 0.033 and 0.20, a 0.60 one with 0.37 and 0.87, the two-level
    bootstrap's 0.26 with 0.98 and 1.0.
    These bounds catch a gross failure (the two-level bootstrap of docs/metrics.md covered 0.26, the heavy
    crowd 0.51), not a shortfall of a few points: issue 40's "≥ 0.93" needs hundreds of studies (a test that
    tells 0.95 from 0.90 with a false-failure rate of 0.3% and fails a 0.90 procedure 91% of the time needs
    about 450), which is the benchmark's job (``manage.py crowd_coverage``), not CI's. The in-sample
    posteriors' bias is tested directly in ``tests/genderbias/crowd/test_estimation.py``.

    Heavy crowd (35% spammers, accuracy 0.55–0.85): its corrected value and difference come out too high (by
    1.9 and 1.6 bootstrap s.d. over 80 studies of the benchmark), beyond what the bootstrap's interval holds
    (``crossed_net`` covered 0.73 and 0.69 over 51 studies, all warned). Every study is warned, and where it
    is warned the interval reaches down (``<figure>:reach`` positive: the calibration bias plus twice the
    draws' drift, :meth:`genderbias.crowd.label_uncertainty.CorrectedFit.reach`), asserted in each of the 3 here; what
    that does to coverage is the benchmark's to measure (docs/quality.md "Too sure, and by how much").
    """
    moderate = pd.DataFrame(
        [
            coverage.coverage_study(
                np.random.default_rng([2040, s]), cs.MODERATE, 1000, s, SAMPLES, constructions=False
            )
            for s in range(MODERATE_STUDIES)
        ]
    )
    heavy = pd.DataFrame(
        [
            coverage.coverage_study(np.random.default_rng([2041, s]), cs.HEAVY, 1000, s, SAMPLES, constructions=False)
            for s in range(HEAVY_STUDIES)
        ]
    )
    print("moderate", coverage.coverage_table(moderate), "heavy", coverage.coverage_table(heavy), sep="\n")
    for figure in coverage.COVERED:
        assert moderate[figure].sum() >= 6, moderate.mean(numeric_only=True)
    assert moderate["value"].sum() + moderate["difference"].sum() >= 15, moderate.mean(numeric_only=True)
    # Every heavy study is warned, and its interval reaches towards where the truth lies: the corrected
    # value and difference come out too high on this crowd (+1.9 and +1.6 bootstrap s.d. over 80 studies).
    assert heavy["warning"].all(), heavy.mean(numeric_only=True)
    assert (heavy["value:reach"] > 0).all() and (heavy["difference:reach"] > 0).all(), heavy.filter(like="reach")
    assert moderate["warning"].sum() <= 5, moderate.mean(
        numeric_only=True
    )  # 6 of 24 before; P(≥ 6 of 10 | 0.25) = 0.02


def test_a_spammer_only_crowd_warns_and_a_good_crowd_does_not():
    rng = np.random.default_rng(5)
    truth = cs.synthetic_truth(rng, 600)
    good = cs.Crowd(accuracy=(0.9, 0.97), spammers=0.0, lazy=0)
    spam = cs.Crowd(accuracy=(0.9, 0.97), spammers=0.9, lazy=1)
    for crowd, warned in ((good, False), (spam, True)):
        judgments, gold = cs.crowd_judgments(rng, truth, crowd)
        quality = crowd_quality(dawid_skene(judgments, gold=gold))
        assert quality["warning"] is warned, quality
        assert 0 <= quality["uninformative"] <= 1 and 0 < quality["workers"] <= crowd.workers


def test_every_construction_from_the_same_draws_and_the_reports_own_interval():
    """One small study: every construction of genderbias.stats.intervals is scored, the unsuffixed figure is the
    product's construction's, and the coverage study's interval is the report's
    (:func:`genderbias.crowd.label_uncertainty.combined_summary` on the same draws)."""
    from genderbias.crowd import label_uncertainty
    from genderbias.crowd.label_probabilities import LabelModel
    from genderbias.stats import intervals, significance

    out = coverage.coverage_study(np.random.default_rng([9, 0]), cs.MODERATE, 300, 0, samples=40)
    for figure in coverage.COVERED:
        # The product's interval is the construction its rule takes by the check of the figure's own fit, joined
        # with a moved copy where that check warns.
        product = intervals.construction_for(trusted=figure != "denoised" and out["trusted"])
        assert out[figure] >= out[f"{figure}:{product}"]
        assert out[f"{figure}:width"] >= out[f"{figure}:width_{product}"] - 1e-12
        if not out.get(f"{figure}:reach"):
            assert out[figure] == out[f"{figure}:{product}"]
            assert out[f"{figure}:width"] == pytest.approx(out[f"{figure}:width_{product}"])
        assert all(isinstance(out[f"{figure}:{c}"], bool) for c in intervals.CONSTRUCTIONS)
        assert out[f"{figure}:sd"] > 0 and np.isfinite(out[f"{figure}:error"]) and np.isfinite(out[f"{figure}:shift"])
    table = coverage.coverage_table(pd.DataFrame([out, out]))
    assert {f"difference:{c}" for c in intervals.CONSTRUCTIONS} <= set(table.index)

    rng = np.random.default_rng([9, 1])
    drawn = cs.study(rng, cs.synthetic_truth(rng, 300))
    ds = dawid_skene(drawn.judgments, gold=drawn.gold)
    table = ds.held_out.loc[drawn.qids, list(cs.LABELS)]
    long = pd.concat(
        [
            pd.DataFrame({"run": run, "qid": drawn.qids, "metric": "ARaB", "variant": "tf", "cutoff": 10, "value": v})
            for run, v in (("A", drawn.a), ("B", drawn.b))
        ],
        ignore_index=True,
    )
    summary = significance.summarise(long, baseline="A", samples=40, seed=3)
    model = LabelModel(table, ds, drawn.qids)
    report = label_uncertainty.combined_summary(
        significance.wide_values(long), model, set(drawn.qids), summary, baseline="A", samples=40, seed=3
    ).set_index("run")
    fit = label_uncertainty.CorrectedFit(model, 40, 3)
    _, low, high, p = fit.interval((drawn.b - drawn.a)[:, None])
    # The crossed intervals hold the percentile one; the net one lies between them.
    _, p_low, p_high, _ = fit.interval((drawn.b - drawn.a)[:, None], construction="percentile")
    _, c_low, c_high, _ = fit.interval((drawn.b - drawn.a)[:, None], construction="crossed")
    _, n_low, n_high, _ = fit.interval((drawn.b - drawn.a)[:, None], construction="crossed_net")
    assert c_low[0] <= n_low[0] <= p_low[0] <= p_high[0] <= n_high[0] <= c_high[0]
    assert c_high[0] - c_low[0] > p_high[0] - p_low[0]  # 300 queries, 40 workers: the workers' variance is not 0
    assert (report.loc["B", "difference_combined_low"], report.loc["B", "difference_combined_high"]) == pytest.approx(
        (low[0], high[0])
    )
    assert report.loc["B", "p_value"] == pytest.approx(p[0])  # one run against the baseline: Holm leaves it
    _, low, high, _ = fit.interval(drawn.a[:, None])
    assert (report.loc["A", "combined_low"], report.loc["A", "combined_high"]) == pytest.approx((low[0], high[0]))


def test_reading_a_file_that_is_not_an_out_file_names_it(tmp_path):
    """``crowd_coverage --read`` of a missing file or of another CSV: an error naming the file, no traceback."""
    from django.core.management import CommandError, call_command

    other = tmp_path / "other.csv"
    other.write_text("a,b\n1,2\n")
    with pytest.raises(CommandError, match=r"--read .*other\.csv, line 1: not a crowd_coverage --out file"):
        call_command("crowd_coverage", read=str(other))
    with pytest.raises(CommandError, match=r"--read .*missing\.csv"):
        call_command("crowd_coverage", read=str(tmp_path / "missing.csv"))


# --- issue 66: crowds of many kinds, the oracle, a crowd model that can say an asymmetric crowd ---------------


def _kind(name: str, n: int, seed: int = 0):
    crowd = cs.crowd_named(name, n)
    rng = np.random.default_rng([66, seed])
    return crowd, cs.study(rng, cs.synthetic_truth(rng, n, crowd.label_shares), crowd)


def test_each_crowd_kind_does_what_its_name_says():
    """Read off the answers, not the simulator's parameters: escalation adds votes only where they disagree
    and up to its cap; fatigue makes a worker's late answers worse than its early ones; colluders answer "n"
    whatever the truth; the asymmetric crowd is right less often on f, m and o than on n; peerannot's
    simulator deals between 1 and 3 votes a query."""
    _, drawn = _kind("escalation", 600)
    queries = drawn.judgments[drawn.judgments["item"].str.startswith("q")]
    per_query = queries.groupby("item")["label"]
    votes, top = per_query.size(), per_query.agg(lambda x: x.value_counts().iloc[0])
    assert votes.min() == 2 and votes.max() <= 5 and (votes > 2).any()
    stopped = votes < 5  # a query stops short of the cap only once a label has more than half its votes
    assert (top[stopped] * 2 > votes[stopped]).all()
    assert (top[votes == 2] == 2).all()  # two agreeing votes are never escalated

    _, drawn = _kind("fatigue", 1000)
    truth = {q: cs.LABELS[t] for q, t in zip(drawn.qids, drawn.truth, strict=True)}
    queries = drawn.judgments[drawn.judgments["item"].isin(truth)].copy()
    queries["right"] = queries["label"] == queries["item"].map(truth)
    queries["order"] = queries.groupby("worker").cumcount()
    busy = queries[queries.groupby("worker")["order"].transform("max") >= 300]
    assert busy["right"][busy["order"] < 100].mean() > busy["right"][busy["order"] >= 200].mean() + 0.05

    crowd, drawn = _kind("colluders", 600)
    answers = drawn.judgments.groupby("worker")["label"].agg(lambda x: set(x))
    assert (answers == {"n"}).sum() >= crowd.lazy - 1  # every colluder who answered (one may have drawn no HIT)

    _, drawn = _kind("asymmetric", 1000)
    truth = {q: cs.LABELS[t] for q, t in zip(drawn.qids, drawn.truth, strict=True)}
    queries = drawn.judgments[drawn.judgments["item"].isin(truth)]
    right = (queries["label"] == queries["item"].map(truth)).groupby(queries["item"].map(truth)).mean()
    assert right["n"] > right[["f", "m"]].max() + 0.08 and right["f"] > right["o"]

    _, drawn = _kind("peerannot", 600)
    votes = drawn.judgments.groupby("item").size()
    assert len(votes) == 600 and set(votes.unique()) == {1, 2, 3} and not drawn.gold


@pytest.mark.slow
def test_a_crowd_that_errs_by_label_gets_a_model_that_says_so_and_an_unbiased_value():
    """Issue 66, item 1: 12 studies of 1,000 queries on the class-asymmetric crowd (Prolific-like: 11–22 answers a
    participant, accuracy by true label shifted, f↔o and m↔o confused, n read as m more than as f). The value of
    run A and the difference B − A on each query's held-out posterior, minus the same on the true labels, in the
    study's bootstrap s.d. (0.0125 and 0.0062 at 1,000 queries: the oracle's, the spread of the class means
    over 200 resamples of the true labels).

    Measured (these 12): the model chosen is one coin on the crowd's accuracy by label in 12 of 12, bias
    +0.37 (MC s.e. 0.12) and +0.27 (0.16) s.d.; forced to one coin for every label (the model before) +1.73 and
    +1.56 s.d. (the coverage benchmark, 40 studies: +0.16 and +0.07 now, +1.50 and +1.35 before, coverage 1.000
    and 0.975 now, 0.900 and 0.900 before; docs/quality.md, "Crowds nobody here tuned for"). Asserted: at least 10
    of 12 choose the coin by label; the chosen model's mean bias within 0.5 s.d. + 2 MC s.e. for both; one coin's
    beyond 0.8 s.d. (so the test tells the two models apart)."""
    from genderbias.crowd import class_means

    chosen, forced, models = [], [], []
    for s in range(12):
        _, drawn = _kind("asymmetric", 1000, s)
        values = np.column_stack([drawn.a, drawn.b - drawn.a])
        onehot = np.eye(4)[drawn.truth]
        weights = np.random.default_rng(s).multinomial(len(values), np.full(len(values), 1 / len(values)), 200)
        two = np.column_stack([drawn.truth == 0, drawn.truth != 0]).astype(float)  # never singular in a draw
        sd = class_means.class_means(two, values, weights.astype(float))[:, 0, :].std(axis=0, ddof=1)
        true = class_means.class_means(onehot, values)[0]
        for model, errors in (("auto", chosen), ("one-coin", forced)):
            ds = dawid_skene(drawn.judgments, gold=drawn.gold, model=model)
            held = ds.held_out.loc[drawn.qids, list(cs.LABELS)].to_numpy()
            errors.append((class_means.class_means(held, values)[0] - true) / sd)
            if model == "auto":
                models.append(ds.encoded.choice.model)
    chosen, forced = np.array(chosen), np.array(forced)
    mc = chosen.std(axis=0, ddof=1) / np.sqrt(len(chosen))
    print("models", models, "bias", chosen.mean(axis=0), "MC s.e.", mc, "one coin", forced.mean(axis=0))
    assert models.count("by-label") >= 10, models
    assert (np.abs(chosen.mean(axis=0)) <= 0.5 + 2 * mc).all(), (chosen.mean(axis=0), mc)
    assert (forced.mean(axis=0) > 0.8).all(), forced.mean(axis=0)


def test_the_oracle_is_the_true_labels_class_means_under_the_same_bootstrap():
    """:func:`coverage.oracle_intervals` against the class means of the one-hot truth (another function,
    :func:`genderbias.crowd.class_means.class_means`) under the same multiplicities."""
    from genderbias.crowd import class_means
    from genderbias.stats import intervals

    _, drawn = _kind("zipf", 400)
    weights = np.random.default_rng(3).multinomial(400, np.full(400, 1 / 400), 300).astype(float)
    out = coverage.oracle_intervals(drawn, weights, weights)
    # Two classes, non-gendered or not (a draw without an "o" query leaves a four-class fit singular).
    onehot = np.column_stack([drawn.truth == 0, drawn.truth != 0]).astype(float)
    draws = class_means.class_means(onehot, (drawn.b - drawn.a)[:, None], weights)[:, 0, 0]
    point = class_means.class_means(onehot, (drawn.b - drawn.a)[:, None])[0, 0]
    low, high = intervals.bootstrap_interval(draws, point, 0.95, "percentile")
    assert out["difference:oracle_width"] == pytest.approx(high - low, rel=1e-9)
    assert out["difference:oracle_detected"] == bool(low > 0)
    right = (drawn.machine == drawn.truth).astype(float)
    denoised = (weights * right).sum(axis=1) / weights.sum(axis=1)
    low, high = intervals.bootstrap_interval(denoised, right.mean(), 0.95, "percentile")
    assert out["denoised:oracle_width"] == pytest.approx(high - low, rel=1e-9)


def test_the_command_runs_a_crowd_it_did_not_write_and_prints_the_oracle_beside_each_figure(tmp_path):
    """``crowd_coverage --crowd peerannot`` (peerannot's simulator deals and draws every answer), two small
    studies: the file holds each figure's width and the oracle's; the printout their table, with the width an
    interval needs and the power, read back from the file the same (``--read``)."""
    from io import StringIO

    from django.core.management import call_command

    out, again = StringIO(), StringIO()
    path = tmp_path / "peerannot.csv"
    options = {"crowd": "peerannot", "queries": 150, "studies": 2, "samples": 10, "product_only": True}
    call_command("crowd_coverage", out=str(path), stdout=out, **options)
    rows = pd.read_csv(path)
    assert len(rows) == 2 and (rows["difference:oracle_width"] > 0).all() and (rows["value:width"] > 0).all()
    printed = out.getvalue()
    assert "against the oracle" in printed
    table = coverage.width_table(rows)
    oracle_rows = printed.split("against the oracle", 1)[1].splitlines()
    line = next(x for x in oracle_rows if x.startswith("difference "))
    assert line.split()[1:4] == [f"{table.loc['difference', c]:.3f}" for c in ("coverage", "oracle_coverage")] + [
        f"{table.loc['difference', 'width_ratio']:.2f}"
    ]
    call_command("crowd_coverage", read=str(path), stdout=again)
    assert again.getvalue().split("\n", 1)[1].split("(")[0] == printed.split("\n", 1)[1].split("(")[0]


def test_the_peerannot_crowd_without_peerannot_names_the_option_and_writes_nothing(tmp_path, monkeypatch):
    """Without peerannot installed: an error naming ``--crowd`` and the requirements file, no traceback, no
    out file."""
    import sys

    from django.core.management import CommandError, call_command

    monkeypatch.setitem(sys.modules, "peerannot.helpers.simulations_strategies", None)  # import fails
    path = tmp_path / "peerannot.csv"
    with pytest.raises(CommandError, match=r"--crowd peerannot: .*requirements-no-deps\.txt"):
        call_command("crowd_coverage", crowd="peerannot", queries=100, studies=1, samples=5, out=str(path))
    assert not path.exists()


@pytest.mark.slow
def test_the_plan_promises_the_power_the_reports_interval_delivers():
    """Issue 66, item 4: each of 100 moderate studies of 400 queries (100 resamples) is the pilot of a study plan
    (:func:`genderbias.crowd.simulation.coverage.promised_power`, the plan's own arithmetic: the paired t-test at
    Δ/r, r its combined interval's width over the query-only one's, at the study's |S|), and the power delivered
    is the share of the studies whose product interval excludes 0 (the report's combined test).

    The promise is paired with the delivery per study: delivered − promised over the 100, with its Monte-Carlo
    s.e. (about 0.045). Asserted: within 3 s.e. (a promise that is exact fails with probability 0.003); the plan
    of before (the t-test at Δ, labels taken as known) above it. With ``crossed`` it was beyond 3 s.e. above; with
    the normal interval a trusted crowd model now gets (label_interval ``checked``) the delivered power is 0.60,
    between the plan's 0.51 and the labels-known 0.68, and 100 studies no longer tell those two apart at 3 s.e.
    The 12 crowds at 1,000 queries, 40 studies each: docs/quality.md, "What the plan promises, delivered"."""
    results = pd.DataFrame(
        [
            coverage.coverage_study(
                np.random.default_rng([2042, s]), cs.MODERATE, 400, s, SAMPLES, False, figures=("difference",)
            )
            for s in range(100)
        ]
    )
    row = coverage.width_table(results).loc["difference"]
    print(
        row[["power", "promised", "promised_gap", "promised_gap_se", "promised_query_only", "promised_query_only_gap"]]
    )
    assert abs(row["promised_gap"]) <= 3 * row["promised_gap_se"], row
    assert row["promised_query_only_gap"] < 0, row
