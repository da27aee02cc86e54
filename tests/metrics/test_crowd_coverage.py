"""Coverage of the label-corrected intervals on a realistic simulated crowd (issue 40, item 2).

Studies from :mod:`benchmarks.crowd_simulation`: a *synthetic* truth with the SIGIR 2020 study's
class shares (so the test runs without the reference data), 1,000 queries, three workers per
query out of 40 with class confusion, unequal accuracy and activity, spammers, a lazy worker
and a gold question in every HIT; the crowd model fitted with gold, refitted in every bootstrap
draw (:meth:`annotation.machine.label_probabilities.LabelModel.draws`), and the report's
estimator (:func:`metrics.label_uncertainty.combined_summary`).

Measured over 100 studies per crowd, 200 resamples each: moderate crowd 0.91 (value) and 0.91
(difference) at nominal 0.95; heavy crowd (35% spammers) 0.51, with the crowd-quality warning
raised in all of its studies and in 6% of the moderate ones. The issue's target of ≥ 0.93 at
moderate noise is **not reached yet** (docs/metrics.md says so); this test guards what holds.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from annotation.machine.label_probabilities import LabelModel, crowd_quality
from annotation.results.aggregation import dawid_skene
from benchmarks import crowd_simulation as cs
from metrics import label_uncertainty as lu
from metrics import significance


def _one_study(rng: np.random.Generator, crowd: cs.Crowd, n: int, seed: int, samples: int = 200) -> dict:
    study = cs.study(rng, cs.synthetic_truth(rng, n), crowd)
    ds = dawid_skene(study.judgments, gold=study.gold)
    table = ds.posteriors.loc[study.qids, list(cs.LABELS)]
    long = pd.concat(
        [
            pd.DataFrame({"run": run, "qid": study.qids, "metric": "ARaB", "variant": "tf", "cutoff": 10, "value": v})
            for run, v in (("A", study.a), ("B", study.b))
        ],
        ignore_index=True,
    )
    in_set = {q for q, row in zip(study.qids, table.to_numpy(), strict=True) if row.argmax() == 0}
    summary = significance.summarise(long[long["qid"].isin(in_set)], baseline="A", samples=samples, seed=seed)
    out = lu.combined_summary(
        significance.wide_values(long),
        table,
        in_set,
        summary,
        baseline="A",
        samples=samples,
        seed=seed,
        draws=LabelModel(table, ds, study.qids).draws,
    ).set_index("run")

    def covers(low, high, truth) -> bool:
        return low is not None and not pd.isna(low) and low <= truth <= high

    return {
        "value": covers(out.loc["A", "combined_low"], out.loc["A", "combined_high"], cs.MEAN_A[0]),
        "difference": covers(
            out.loc["B", "difference_combined_low"], out.loc["B", "difference_combined_high"], cs.MEAN_DIFFERENCE[0]
        ),
        "warning": crowd_quality(ds)["warning"],
    }


@pytest.mark.slow
def test_moderate_crowd_coverage_and_heavy_crowd_warning():
    """60 moderate and 40 heavy studies of 1,000 queries.

    Monte-Carlo standard error of a coverage near 0.91 over 60 draws: √(0.91·0.09/60) ≈ 0.037.
    Asserted: moderate coverage ≥ 0.91 − 2·0.037 ≈ 0.84 for the value and the difference (the
    measured 0.91 at 100 draws, one-sided 2 s.e.; the fixed-posterior interval measured 0.90 for
    the difference in the same runs); heavy crowd: the warning is raised in ≥ 95% of the studies
    whose interval missed the truth (measured 100%).
    """
    rng = np.random.default_rng(2040)
    moderate = pd.DataFrame([_one_study(rng, cs.MODERATE, 1000, seed) for seed in range(60)])
    heavy = pd.DataFrame([_one_study(rng, cs.HEAVY, 1000, seed) for seed in range(40)])
    print("moderate", moderate.mean().to_dict(), "heavy", heavy.mean().to_dict())
    se = np.sqrt(0.91 * 0.09 / len(moderate))
    assert moderate["value"].mean() >= 0.91 - 2 * se, moderate.mean()
    assert moderate["difference"].mean() >= 0.91 - 2 * se, moderate.mean()
    missed = heavy[~(heavy["value"] & heavy["difference"])]
    assert len(missed) and missed["warning"].mean() >= 0.95, heavy.mean()
    assert moderate["warning"].mean() <= 0.25, moderate.mean()


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
