"""Which interval a label-corrected figure gets (genderbias.crowd.figure_intervals, issue 81): with an audit
sample the PPI++ interval, checked against ppi-python's ppi_mean_ci inverted on a grid; a warning without one
withholds the interval; the sentence each surface prints."""

from __future__ import annotations

from statistics import NormalDist

import numpy as np
import pandas as pd
import pytest
from ppi_py import ppi_mean_ci
from scipy.stats import t as student_t

from genderbias.crowd import figure_intervals as fi
from genderbias.crowd.aggregation import majority_vote
from genderbias.crowd.simulation import studies as cs
from genderbias.labels import LABELS
from genderbias.ranking.defaults import LEVEL

ALPHA = 1 - LEVEL
KEY = ("RaB", "tf", 10)


def _study(seed: int = 3, queries: int = 300, audit: int = 80):
    """A study on the difficulty crowd (errors shared by query), the majority vote as every query's crowd label
    (None where disputed), an audit sample and two runs' values, as a report's wide tables."""
    rng = np.random.default_rng(seed)
    drawn = cs.study(rng, cs.synthetic_truth(rng, queries), cs.CROWDS["difficulty"])
    votes = majority_vote(drawn.judgments)["label"]
    qids = [str(q) for q in drawn.qids]
    predicted = {str(q): votes.get(q) for q in drawn.qids}
    audited = rng.choice(queries, size=audit, replace=False)
    audit_labels = {qids[i]: LABELS[drawn.truth[i]] for i in audited}
    columns = pd.MultiIndex.from_tuples([KEY])
    wide = {
        "A": pd.DataFrame(drawn.a[:, None], index=qids, columns=columns),
        "B": pd.DataFrame(drawn.b[:, None], index=qids, columns=columns),
    }
    summary = pd.DataFrame(
        [
            {"run": run, "metric": KEY[0], "variant": KEY[1], "cutoff": KEY[2], "value": 0.0, "ci_low": -0.1,
             "ci_high": 0.1, "p_value": 0.5 if run == "B" else None, "query_p_value": 0.5 if run == "B" else None,
             "corrected": 0.0, "combined_low": -1.0, "combined_high": 1.0, "label_share": 0.5,
             "difference_low": -0.1, "difference_high": 0.1, "difference_corrected": 0.0,
             "difference_combined_low": -1.0, "difference_combined_high": 1.0, "difference_label_share": 0.5}
            for run in ("A", "B")
        ]
    )  # fmt: skip
    return drawn, predicted, audited, audit_labels, wide, summary


def _ppi_inverted(v, in_truth, in_predicted, audited, step=0.0005):
    """ppi-python's ppi_mean_ci of (v − θ) · 1(T = n), λ tuned at each θ, inverted on a grid of θ. The library's
    quantile is Student's t on the audit's n queries less one; ppi_py's is normal: it gets the alpha whose normal
    quantile that is."""
    alpha = 2 * (1 - NormalDist().cdf(student_t.ppf(1 - ALPHA / 2, in_truth.sum() - 1)))
    kept = []
    for theta in np.arange(-0.6, 0.6, step):
        yhat = (v - theta) * in_predicted
        lo, hi = ppi_mean_ci((v[audited] - theta) * in_truth, yhat[audited], yhat, alpha=alpha)
        if lo[0] <= 0 <= hi[0]:
            kept.append(theta)
    return min(kept), max(kept)


def test_with_an_audit_sample_each_figure_is_ppi_inverted():
    drawn, predicted, audited, audit_labels, wide, summary = _study()
    out, choice = fi.choose_intervals(summary, wide, predicted, audit_labels, baseline="A")
    assert choice["kind"] == fi.AUDIT
    assert choice["sentence"] == "PPI++ on an audit sample of 80 expert labels: rests on no crowd model"
    in_truth = np.array([audit_labels[str(drawn.qids[i])] == "n" for i in audited], dtype=float)
    in_predicted = np.array([predicted[str(q)] == "n" for q in drawn.qids], dtype=float)
    a = out.set_index("run").loc["A"]
    lo, hi = _ppi_inverted(drawn.a, in_truth, in_predicted, audited)
    assert a["combined_low"] == pytest.approx(lo, abs=0.0005) and a["combined_high"] == pytest.approx(hi, abs=0.0005)
    b = out.set_index("run").loc["B"]
    lo, hi = _ppi_inverted(drawn.b - drawn.a, in_truth, in_predicted, audited)
    assert b["difference_combined_low"] == pytest.approx(lo, abs=0.0005)
    assert b["difference_combined_high"] == pytest.approx(hi, abs=0.0005)
    # The crowd model's figures (here -1 .. 1) are gone, and the p inverts the audit interval.
    assert (b["difference_combined_low"] > 0 or b["difference_combined_high"] < 0) == (b["p_value"] < ALPHA)


def test_the_p_inverts_the_interval():
    drawn, predicted, _, audit_labels, wide, summary = _study(seed=5)
    out, _ = fi.choose_intervals(summary, wide, predicted, audit_labels, baseline="A")
    b = out.set_index("run").loc["B"]
    # At α = p the interval's nearer end touches 0 (one run against the baseline: Holm leaves p as it is).
    qids = list(predicted)
    pos = {q: i for i, q in enumerate(qids)}
    from genderbias.machine.proportions import audit_difference

    at_p = audit_difference(
        list(audit_labels.values()), list(predicted.values()), [pos[q] for q in audit_labels],
        drawn.a, drawn.b, label="n", alpha=b["p_value"],
    )["ci"]  # fmt: skip
    assert min(abs(at_p[0]), abs(at_p[1])) == pytest.approx(0.0, abs=2e-3)


def test_a_warning_without_audit_withholds_every_interval():
    _, predicted, _, _, wide, summary = _study()
    out, choice = fi.choose_intervals(summary, wide, predicted, None, {"fires": True, "suggested_audit": 50}, "A")
    assert choice["kind"] == fi.MAY_NOT_COVER
    assert choice["sentence"] == "may not cover: errors shared by query; an audit sample of about 50 would settle it"
    for column in ("combined_low", "combined_high", "difference_combined_low", "difference_combined_high", "p_value"):
        assert out[column].isna().all()
    assert list(out["corrected"]) == list(summary["corrected"])


def test_no_audit_no_warning_keeps_the_crowd_models_interval():
    _, predicted, _, _, wide, summary = _study()
    out, choice = fi.choose_intervals(summary, wide, predicted, {}, {"fires": False}, "A")
    assert choice["kind"] == fi.CROWD
    assert choice["sentence"] == "crowd model (Dawid-Skene, gold-seeded): assumes independent errors; no audit sample"
    pd.testing.assert_frame_equal(out, summary)


def test_the_crowd_models_sentence_names_the_construction_its_trust_took():
    """Where the report knows whether the crowd model is trusted, its sentence says so and names the
    construction in the words the methods text uses (genderbias.stats.intervals.describe)."""
    from genderbias.stats import intervals

    plain = fi.interval_choice(shared={"fires": False})["sentence"]
    for trusted, construction in ((True, "normal"), (False, "crossed")):
        sentence = fi.interval_choice(shared={"fires": False, "trusted": trusted})["sentence"]
        assert sentence.startswith(plain + "; ") and sentence.endswith(intervals.DESCRIPTIONS[construction])
        assert ("not trusted" in sentence) is not trusted


def test_an_audit_with_fewer_than_two_of_the_class_is_not_used():
    choice = fi.interval_choice(audit_size=10, audit_of_class=1)
    assert choice["kind"] == fi.CROWD
    assert "an audit sample of 10 holds 1 non-gendered query" in choice["sentence"]
