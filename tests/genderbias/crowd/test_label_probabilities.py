"""The fitted label model a report takes whole (:class:`genderbias.crowd.label_probabilities.LabelModel`, issue 65):
fitted from a batch's answers (``task, worker, label``) and gold, it holds the table of label probabilities
and knows its bootstrap refits; :func:`genderbias.crowd.label_uncertainty.combined_summary` takes it in place
of the closures it once took (``draws=``, ``leave_out=``, ``recalibrated=``).

On one simulated batch (a moderate crowd of 300 queries, seed [65, 2]; 10 queries ruled, 20 accepted from a
machine): each row of the table is its source's (the gold-seeded Dawid–Skene's held-out posterior, computed
here by :func:`genderbias.crowd.aggregation.dawid_skene`, or the ruling's and the machine's rows as given),
a refit's crowd rows are the crowd model refitted on the query weights (computed here by
:func:`genderbias.crowd.resampling.bootstrap_posteriors`) and the other rows held, and the report's
label-corrected value is the least-squares class mean on the table (numpy's own solver).

Each machine-accepted label's probabilities from the blind sample (genderbias.crowd.label_probabilities).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from genderbias.crowd import class_means, label_uncertainty, resampling
from genderbias.crowd import label_probabilities as lp
from genderbias.crowd.aggregation import dawid_skene
from genderbias.crowd.label_probabilities import LabelModel, confidence_rows, crowd_quality, one_hot
from genderbias.crowd.simulation import studies
from genderbias.labels import LABELS
from genderbias.stats import significance


def _batch():
    rng = np.random.default_rng([65, 2])
    drawn = studies.answered(studies.study(rng, studies.synthetic_truth(rng, 300), studies.MODERATE))
    qids = drawn.qids
    ruled, accepted = qids[:10], qids[10:30]
    machine = [LABELS[m] for m in drawn.machine[10:30]]
    others = pd.concat(
        [
            pd.DataFrame(one_hot(LABELS, [LABELS[t] for t in drawn.truth[:10]]), index=ruled, columns=LABELS),
            pd.DataFrame(confidence_rows(LABELS, machine, np.linspace(0.6, 0.95, 20)), index=accepted, columns=LABELS),
        ]
    )
    answers = drawn.judgments.rename(columns={"item": "task"})
    return drawn, others, LabelModel.fit(answers, drawn.gold, others=others, discarded=drawn.discarded)


def test_the_label_model_holds_each_querys_row_from_its_source():
    drawn, others, model = _batch()
    ds = dawid_skene(drawn.judgments, gold=drawn.gold)
    crowd = [q for q in drawn.qids if q not in others.index]
    assert sorted(model.table.index) == sorted(drawn.qids) and list(model.table.columns) == list(LABELS)
    assert np.array_equal(model.table.loc[crowd].to_numpy(), ds.held_out.loc[crowd, list(LABELS)].to_numpy())
    assert np.array_equal(model.table.loc[others.index].to_numpy(), others.to_numpy())
    assert sorted(model.crowd_qids) == sorted(crowd)
    assert model.quality == crowd_quality(ds, discarded=drawn.discarded)
    empty = LabelModel.fit(drawn.judgments.iloc[:0].rename(columns={"item": "task"}), {}, others=others)
    assert empty.crowd is None and empty.quality is None and empty.recalibrated() is None
    assert np.array_equal(empty.table.loc[others.index].to_numpy(), others.to_numpy())


def test_a_refit_moves_the_crowds_rows_and_holds_the_others():
    _, others, model = _batch()
    weights = significance.resampling_weights(len(model.table), 3, 5)
    # The gold questions (no row of the table) kept once each, as a jackknife keeps them.
    refits = model.draws(weights, 5, resample_others=False)
    encoded = model.crowd.encoded
    row = {q: i for i, q in enumerate(model.table.index)}
    item_weights = np.stack(
        [[w[row[str(item)]] if str(item) in row else 1.0 for item in encoded.items] for w in weights]
    )
    start = model.crowd.posteriors.to_numpy(dtype=np.float64)
    expected = resampling.bootstrap_posteriors(encoded, item_weights, start)
    items = {str(item): i for i, item in enumerate(encoded.items)}
    for q in (model.crowd_qids[0], model.crowd_qids[-1]):
        assert np.array_equal(refits[:, row[q], :], expected[:, items[q], :])
    told = []  # the refits counted as they go, a chunk of draws at a time (a job's page shows the count)
    many = significance.resampling_weights(len(model.table), 120, 5)
    model.draws(many, 5, progress=lambda done, total: told.append((done, total)))
    step = resampling.CHUNK
    assert told == [(min(done, 120), 120) for done in range(step, 120 + step, step)] and len(told) > 1
    for q in others.index:
        assert np.array_equal(refits[:, row[q], :], np.broadcast_to(others.loc[q].to_numpy(np.float32), (3, 4)))


def test_each_draw_is_refitted_as_it_would_be_alone():
    """EM stops each draw by its own rule: refitted beside others (one call), a draw gets what a call for it
    alone gives, so a bootstrap's figures do not depend on how its draws were chunked."""
    from genderbias.crowd.estimation import fit

    _, _, model = _batch()
    encoded = model.crowd.encoded
    weights = np.random.default_rng(7).multinomial(encoded.n_items, np.full(encoded.n_items, 1 / encoded.n_items), 6)
    start = model.crowd.posteriors.to_numpy(dtype=np.float64)
    together = fit(encoded, weights, start, max_iter=50, tol=1e-5)
    alone = [fit(encoded, weights[d : d + 1], start, max_iter=50, tol=1e-5) for d in range(len(weights))]
    assert together.iterations == max(a.iterations for a in alone) and together.converged
    assert len({a.iterations for a in alone}) > 1  # the draws settle at different rounds
    for d, single in enumerate(alone):
        assert np.allclose(together.posteriors[d], single.posteriors[0], rtol=0, atol=1e-12)
        assert np.allclose(together.held_out[d], single.held_out[0], rtol=0, atol=1e-12)
        assert np.allclose(together.confusion[d], single.confusion[0], rtol=0, atol=1e-12)


def test_a_report_takes_the_label_model_whole():
    drawn, _, model = _batch()
    qids = drawn.qids
    long = pd.concat(
        [
            pd.DataFrame({"run": run, "qid": qids, "metric": "ARaB", "variant": "tf", "cutoff": 10, "value": v})
            for run, v in (("A", drawn.a), ("B", drawn.b))
        ],
        ignore_index=True,
    )
    members = {q for q in qids if model.table.loc[q].idxmax() == "n"}
    summary = significance.summarise(long[long["qid"].isin(members)], baseline="A", samples=40, seed=3)
    report = label_uncertainty.combined_summary(
        significance.wide_values(long), model, members, summary, baseline="A", samples=40, seed=3
    ).set_index("run")
    columns, _ = class_means.label_map(model.table)
    design = model.table.loc[qids].to_numpy() @ columns
    for run, values in (("A", drawn.a), ("B", drawn.b)):
        assert report.loc[run, "corrected"] == pytest.approx(np.linalg.lstsq(design, values, rcond=None)[0][0])
        assert report.loc[run, "combined_low"] < report.loc[run, "corrected"] < report.loc[run, "combined_high"]
    difference = np.linalg.lstsq(design, drawn.b - drawn.a, rcond=None)[0][0]
    assert report.loc["B", "difference_corrected"] == pytest.approx(difference)


def test_a_band_is_the_crowds_label_distribution_smoothed():
    """Twelve sample queries the machine called n (too few for 4 bands of 10: one band); the crowd
    said n 9 times, f twice, o once. With 0.5 added to each label: (9.5, 2.5, 0.5, 1.5) / 14."""
    human = ["n"] * 9 + ["f"] * 2 + ["o"]
    got = lp.band_distributions(LABELS, ["n"] * 12, np.linspace(0.6, 0.99, 12), human, [1.0] * 12, ["n"], [0.95])
    assert got[0] == pytest.approx(np.array([9.5, 2.5, 0.5, 1.5]) / 14)


def test_bands_follow_the_confidence_and_the_design_weights():
    """40 sample queries called f: the 20 least confident were all crowd n, the 20 most confident
    crowd f. Two bands of 20 (BANDS = 4 quantile bands, each ≥ 10); weights double the first half."""
    conf = np.linspace(0.5, 0.99, 40)
    human = ["n"] * 20 + ["f"] * 20
    weights = [2.0] * 20 + [1.0] * 20
    unsure, sure = lp.band_distributions(LABELS, ["f"] * 40, conf, human, weights, ["f", "f"], [0.52, 0.98])
    # A band of 10 crowd-n queries (weights rescaled to its 10 queries): (10.5, 0.5, 0.5, 0.5) / 12.
    assert unsure == pytest.approx(np.array([10.5, 0.5, 0.5, 0.5]) / 12)
    assert sure == pytest.approx(np.array([0.5, 10.5, 0.5, 0.5]) / 12)


def test_a_label_the_sample_never_shows_takes_the_machines_confidence():
    got = lp.band_distributions(LABELS, ["n"] * 12, [0.9] * 12, ["n"] * 12, [1.0] * 12, ["o"], [0.7])
    assert got[0] == pytest.approx([0.1, 0.1, 0.1, 0.7])
    assert lp.confidence_rows(LABELS, ["o"], [0.7])[0] == pytest.approx(got[0])
