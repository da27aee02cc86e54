"""``label_sensitivity --dependence`` against a simulation with a known dependence D (issue 58, item 5).

The docs' definition (docs/metrics.md, "Errors that depend on the rankings" and "The limit"): labelling
errors depend on the rankings by D when a worker's error odds on a query are multiplied by exp(D·z), z the
baseline's (run A's) standardised value on it; this is the simulation's ``Crowd(dependence=D)``
(``genderbias/crowd/simulation/studies.py``). The sensitivity check's ``shift`` at D is meant to say where the
label-corrected difference B − A stands against the truth when the batch's crowd erred that way.

The truth's move, computed here independently of the code under test: studies of 1,000 queries on the
moderate crowd, each drawn once per D with the same truth, the same values and the same random stream for
the crowd (so the draws are paired); in each, the report's corrected difference (Dawid–Skene held-out
posteriors, :func:`genderbias.crowd.class_means.class_means` with :func:`label_map`'s columns: what a report on
a batch's labels computes) and the true difference (mean of B − A over the truly non-gendered queries).
The truth's move at D = mean over studies of (true − corrected at D) − (true − corrected at D = 0): how far
the truth sits from the report because of the dependence. The tool's figure (``simulated``): the command's
``shift`` at D (``dependence_table`` with the service's :func:`genderbias.crowd.simulation.dependence.dependence_simulation`,
four replicate batches) on the study whose crowd erred with that D (what the check is for: where the truth
would stand if the batch's crowd erred so). Printed beside it: the same check on the study drawn with D = 0
(``simulated_on_independent``: a crowd that did not err so, the check's premise false), and the posterior tilt
that ``dependence_table`` falls back to without a crowd fit, on the study drawn with D (``tilt``) and with
D = 0 (``tilt_on_independent``).

Monte-Carlo error: the standard error of each mean over the studies (paired), printed with ``-s``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from genderbias.crowd import class_means, label_dependence
from genderbias.crowd.aggregation import dawid_skene
from genderbias.crowd.label_probabilities import LabelModel
from genderbias.crowd.simulation import studies as cs
from genderbias.crowd.simulation.dependence import dependence_simulation, simulated_shift

KEY = ("ARaB", "tf", 10)
DEPENDENCES = (0.0, 1.0, 3.0)
STUDIES = 4
QUERIES = 1000


def _corrected(probabilities: pd.DataFrame, values: np.ndarray) -> float:
    """The report's label-corrected mean of ``values`` (the point estimate of a report on a batch's labels)."""
    t, weighted = class_means.label_map(probabilities)
    pi = probabilities.to_numpy(dtype=np.float64)
    p, w = (np.ones((len(pi), 1)), pi @ t[:, 0]) if weighted else (pi @ t, None)
    return float(class_means.class_means(p, values[:, None], row_weights=w)[0, 0])


def _tool_shift(probabilities: pd.DataFrame, a: np.ndarray, b: np.ndarray, d: float, simulate=None) -> float:
    qids = list(probabilities.index)
    columns = pd.MultiIndex.from_tuples([KEY], names=["metric", "variant", "cutoff"])
    wide = {
        "A": pd.DataFrame(a[:, None], index=qids, columns=columns),
        "B": pd.DataFrame(b[:, None], index=qids, columns=columns),
    }
    combined = pd.DataFrame(
        [{"run": "B", "metric": KEY[0], "variant": KEY[1], "cutoff": KEY[2], "difference_corrected": 0.0,
          "difference_combined_low": -1.0, "difference_combined_high": 1.0}]
    )  # fmt: skip
    return float(
        label_dependence.dependence_table(wide, probabilities, combined, "A", [d], simulate=simulate).iloc[0]["shift"]
    )


def _draws(base: cs.Crowd, name: str, on_independent: bool = True) -> pd.DataFrame:
    """The studies' figures per D (``simulated_on_independent`` only with ``on_independent``: NaN else)."""
    rows = []
    for study in range(STUDIES):
        rng = np.random.default_rng(58_000 + study)
        truth = cs.synthetic_truth(rng, QUERIES)
        a, b = cs.values(rng, truth)
        qids = [f"q{i}" for i in range(QUERIES)]
        true_difference = float((b - a)[truth == 0].mean())
        independent = None
        for d in DEPENDENCES:
            crowd = cs.with_dependence(base, d)
            judgments, gold = cs.crowd_judgments(np.random.default_rng(59_000 + study), truth, crowd, a)
            fit = dawid_skene(judgments, gold=gold)
            probabilities = fit.held_out.loc[qids, list(cs.LABELS)]
            if d == 0.0:
                independent, independent_fit = probabilities, fit
            rows.append(
                {
                    "study": study,
                    "dependence": d,
                    "gap": true_difference - _corrected(probabilities, b - a),
                    # what the command computes on this study: the service's simulation from its own fit
                    "simulated": _tool_shift(
                        probabilities, a, b, d, dependence_simulation(LabelModel(probabilities, fit, qids), study)
                    ),
                    # the same question asked of the study whose crowd erred independently (D = 0)
                    "simulated_on_independent": _tool_shift(
                        independent,
                        a,
                        b,
                        d,
                        dependence_simulation(LabelModel(independent, independent_fit, qids), study),
                    )
                    if on_independent
                    else np.nan,
                    "tilt": _tool_shift(probabilities, a, b, d),
                    "tilt_on_independent": _tool_shift(independent, a, b, d),
                }
            )
    frame = pd.DataFrame(rows)
    at_zero = frame[frame["dependence"] == 0.0].set_index("study")["gap"]
    frame["truth_move"] = frame["gap"] - frame["study"].map(at_zero)
    summary = frame.groupby("dependence")[
        ["truth_move", "simulated", "simulated_on_independent", "tilt", "tilt_on_independent"]
    ].agg(["mean", "sem"])
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(f"\n{STUDIES} studies of {QUERIES} queries, {name} crowd (mean, MC s.e.):\n{summary.round(4)}")
    return frame


@pytest.fixture(scope="module")
def draws() -> pd.DataFrame:
    return _draws(cs.MODERATE, "moderate")


def _means(frame: pd.DataFrame, column: str) -> tuple[pd.Series, pd.Series]:
    grouped = frame.groupby("dependence")[column]
    return grouped.mean(), grouped.sem()


@pytest.mark.slow
def test_the_simulation_moves_the_truth_measurably(draws):
    """The test below has power: at D = 1 and 3 the truth's move is more than 4 Monte-Carlo standard errors
    from 0 (paired draws), and 0 at D = 0 by construction."""
    move, se = _means(draws, "truth_move")
    assert move[0.0] == 0.0
    for d in (1.0, 3.0):
        assert abs(move[d]) > 4 * se[d], (d, move[d], se[d])


@pytest.mark.slow
@pytest.mark.xfail(
    strict=True,
    reason="the posterior tilt (dependence_table without the crowd's answers) does not reproduce a crowd whose "
    "errors depend on the rankings (at D = 1 the truth moves about −0.014, the tilt about −0.001"
    "; docs/metrics.md, 'The sensitivity check on one's own batch')",
)
def test_the_posterior_tilt_moves_with_the_truth(draws):
    """The fallback without a crowd fit, held to the same standard: same sign as the truth's move, and within
    a quarter of it plus 3 Monte-Carlo standard errors. It fails: the tilt is kept only where no answers exist."""
    move, move_se = _means(draws, "truth_move")
    tool, tool_se = _means(draws, "tilt")
    assert tool[0.0] == 0.0
    for d in (1.0, 3.0):
        assert np.sign(tool[d]) == np.sign(move[d]), (d, tool[d], move[d])
        tolerance = 0.25 * abs(move[d]) + 3 * float(np.hypot(move_se[d], tool_se[d]))
        assert abs(tool[d] - move[d]) <= tolerance, (d, tool[d], move[d], tolerance)


@pytest.mark.slow
def test_the_simulated_shift_moves_with_the_truth(draws):
    """The command's shift (:func:`genderbias.crowd.simulation.dependence.simulated_shift` as the service builds it from a
    batch's fitted crowd) on the studies whose crowd truly erred with D: same sign as the truth's move, and
    within a quarter of it plus 3 Monte-Carlo standard errors (the studies' spread, which includes the
    replicates'). Measured (4 studies; mean, MC s.e.): the truth −0.0143 (0.0021) at D = 1 and −0.0521 (0.0055)
    at D = 3, the shift −0.0114 (0.0011) and −0.0358 (0.0076) (with each replicate's crowd model chosen again,
    before 2026-11-28: −0.0088 (0.0016) and −0.0373 (0.0061); 6 studies gave −0.0137 and −0.0414); before the
    check refitted the crowd as erring with D (:func:`genderbias.crowd.label_dependence.dependent_fit`) it said
    −0.004 and +0.025 (docs/quality.md, item 5)."""
    move, move_se = _means(draws, "truth_move")
    simulated, simulated_se = _means(draws, "simulated")
    assert simulated[0.0] == 0.0
    for d in (1.0, 3.0):
        assert np.sign(simulated[d]) == np.sign(move[d]), (d, simulated[d], move[d])
        tolerance = 0.25 * abs(move[d]) + 3 * float(np.hypot(move_se[d], simulated_se[d]))
        assert abs(simulated[d] - move[d]) <= tolerance, (d, simulated[d], move[d], tolerance)


@pytest.mark.slow
@pytest.mark.xfail(
    strict=True,
    reason="on a crowd that did not err with D, the check (which reads the answers as if it had) has the wrong "
    "sign at D = 3 (+0.031 against the truth's move −0.052 had the same truth been answered with D; "
    "docs/metrics.md, 'The sensitivity check on one's own batch')",
)
def test_the_simulated_shift_on_an_independent_crowd_moves_with_the_truth(draws):
    """The other counterfactual, held to the same standard: the check on the study drawn with D = 0 against the
    move the truth makes when the same queries are answered with D. It fails at D = 3: the check's premise (this
    crowd erred with D) is false there, and it reads the high-z answers as less trustworthy than they were."""
    move, move_se = _means(draws, "truth_move")
    simulated, simulated_se = _means(draws, "simulated_on_independent")
    for d in (1.0, 3.0):
        assert np.sign(simulated[d]) == np.sign(move[d]), (d, simulated[d], move[d])
        tolerance = 0.25 * abs(move[d]) + 3 * float(np.hypot(move_se[d], simulated_se[d]))
        assert abs(simulated[d] - move[d]) <= tolerance, (d, simulated[d], move[d], tolerance)


def test_a_replicate_that_keeps_too_little_of_a_label_is_read_with_its_own_columns():
    """The batch keeps 15 queries' worth of Other, a mean of its own; replicate batches that keep a third of a
    query's worth still give a shift: each replicate's corrected mean is the one a report on it would print, Other
    joining the largest gendered label there (docs/metrics.md; with the batch's columns it was undefined, as on the
    demo's batch at D = 1). Expected: the difference of the two replicates' class means of n, by least squares
    written here."""
    rng = np.random.default_rng(81)
    labels = list(cs.LABELS)
    rows = [[0.94, 0.02, 0.02, 0.02]] * 25 + [[0.02, 0.94, 0.02, 0.02]] * 10 + [[0.02, 0.02, 0.94, 0.02]] * 10
    rows += [[0.02, 0.02, 0.02, 0.94]] * 15  # every label's column its own in the batch's report
    qids = [f"q{i}" for i in range(len(rows))]
    probabilities = pd.DataFrame(rows, index=qids, columns=labels)
    answers = pd.DataFrame(
        [(q, f"w{j}", labels[int(np.argmax(row))]) for q, row in zip(qids, rows, strict=True) for j in range(3)],
        columns=["item", "worker", "label"],
    )
    row = pd.DataFrame(np.full((4, 4), 0.05) + np.eye(4) * 0.8, index=labels, columns=labels)
    confusion = {f"w{j}": row for j in range(3)}
    values = rng.normal(size=len(qids))
    # Two replicate readings without Other, f and m drawn at random: the untilted one, then the tilted one
    readings = []
    for _ in range(2):
        pi = rng.dirichlet([1.0, 1.0, 1.0], size=len(qids)) * (1 - 0.3 / len(qids))
        readings.append(
            pd.DataFrame(np.column_stack([pi, np.full(len(qids), 0.3 / len(qids))]), index=qids, columns=labels)
        )
    calls = iter(readings)

    shift, _ = simulated_shift(
        answers, {}, confusion, probabilities, rng.normal(size=len(qids)), values, 1.0,
        lambda redrawn: next(calls), draws=1,
    )  # fmt: skip

    def mean_n(reading: pd.DataFrame) -> float:
        largest = "f" if reading["f"].sum() >= reading["m"].sum() else "m"
        design = reading[["n", "f", "m"]].assign(**{largest: reading[largest] + reading["o"]}).to_numpy()
        return float(np.linalg.lstsq(design, values, rcond=None)[0][0])

    assert np.isfinite(shift)
    assert shift == pytest.approx(mean_n(readings[0]) - mean_n(readings[1]), abs=1e-12)
