"""How far the label-corrected figures move if the labelling errors depend on the rankings.

The label-corrected estimator (:mod:`.class_means`) assumes errors independent of the ranking given the
true label; no label model can correct errors that are not. The researcher's sensitivity check: D is
defined as every answer's odds of being wrong × exp(D·z), z the baseline's standardised value on the
query (as ``Crowd.dependence`` simulates it), and :func:`dependence_table` gives the paired differences'
shift at each D.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np
import pandas as pd

from genderbias.crowd.class_means import class_means, label_map
from genderbias.crowd.label_uncertainty import _finite

__all__ = ["CHECKING", "DEPENDENCE_COLUMNS", "answer_rates", "dependence_table", "dependent_fit", "tilted"]

#: :func:`dependence_table`'s step, as its ``progress`` names it.
CHECKING = "checking labelling errors that depend on the rankings"

#: Columns of :func:`dependence_table`.
DEPENDENCE_COLUMNS = [
    "run",
    "metric",
    "variant",
    "cutoff",
    "dependence",
    "difference_corrected",
    "difference_combined_low",
    "difference_combined_high",
    "shift",
    "significant",
]


def tilted(probabilities: pd.DataFrame, z: np.ndarray, dependence: float) -> pd.DataFrame:
    """The label probabilities with each query's odds of *not* having its most likely label × exp(dependence ·
    z_q) (``z`` [N], 0 where none), the other labels keeping their proportions; a certain row stays certain.
    Not D's definition: acting on the posterior, it understates the move on crowds that err that way and
    has the opposite sign on crowds that do not (docs/metrics.md)."""
    pi = probabilities.to_numpy(dtype=np.float64)
    top = pi.argmax(axis=1)
    rows = np.arange(len(pi))
    p_top = pi[rows, top]
    with np.errstate(divide="ignore", invalid="ignore"):
        wrong_odds = (1.0 - p_top) / p_top * np.exp(dependence * np.asarray(z, dtype=np.float64))
        new_top = 1.0 / (1.0 + wrong_odds)
        scale = np.where(p_top < 1.0, (1.0 - new_top) / (1.0 - p_top), 0.0)
    out = pi * scale[:, None]
    out[rows, top] = np.where(p_top < 1.0, new_top, 1.0)
    return pd.DataFrame(out, index=probabilities.index, columns=probabilities.columns)


def standardised(values: np.ndarray) -> np.ndarray:
    """(v − mean)/s.d. over the finite values (population s.d., as the simulation's z); 0 where missing or constant."""
    values = np.asarray(values, dtype=np.float64)
    finite = np.isfinite(values)
    if finite.sum() < 2 or np.nanstd(values) == 0:
        return np.zeros(len(values))
    return np.where(finite, (values - np.nanmean(values)) / np.nanstd(values), 0.0)


def dependence_table(
    wide: Mapping[str, pd.DataFrame],
    probabilities: pd.DataFrame,
    combined: pd.DataFrame,
    baseline: str,
    dependences: list[float],
    simulate: Callable[[np.ndarray, np.ndarray, float], np.ndarray] | None = None,
    progress: Callable[[str, int, int], None] | None = None,
) -> pd.DataFrame:
    """How far each label-corrected paired difference (run − ``baseline``) and its combined interval move
    at each of ``dependences`` (:data:`DEPENDENCE_COLUMNS`): a sensitivity check, not an estimate.

    ``shift``: the corrected difference at D minus at 0 (D = 0 gives the report's figure); the interval is
    the report's moved by it (the tilt leaves its width alone to first order); ``significant``: the moved
    interval excludes 0. D > 0: labels less trustworthy where the baseline's value is high.
    ``simulate``: ``(z [N], differences [N × runs], D) → shifts [runs]`` as D is defined
    (:func:`.simulation.dependence.simulated_shift`); without it, the posterior :func:`tilted`.
    ``wide``, ``probabilities`` and ``combined``: :func:`.label_uncertainty.combined_summary`'s input,
    label table and output. ``progress``: told ``(CHECKING, done, total)`` per metric column and D (each a
    simulation of its own: minutes on a large batch).
    """
    qids = list(probabilities.index.astype(str))
    t, weighted = label_map(probabilities)
    columns = sorted({key for table in wide.values() for key in table.columns})
    base = wide[baseline].reindex(index=qids, columns=columns).to_numpy(dtype=np.float64)
    indexed = combined.set_index(["run", "metric", "variant", "cutoff"])
    others = [run for run in wide if run != baseline]
    differences = {
        run: wide[run].reindex(index=qids, columns=columns).to_numpy(dtype=np.float64) - base for run in others
    }
    shifts: dict[tuple[int, float], dict[str, float]] = {}
    checked = [
        j for j, key in enumerate(columns) if any((run, key[0], key[1], int(key[2])) in indexed.index for run in others)
    ]
    say = progress or (lambda step, done, total: None)
    total = len(checked) * len(dependences)
    say(CHECKING, 0, total)
    for n, j in enumerate(checked):
        z = standardised(base[:, j])
        matrix = np.column_stack([differences[run][:, j] for run in others]) if others else np.zeros((len(qids), 0))
        for i_d, d in enumerate(dependences):
            if simulate is not None:
                moved = np.asarray(simulate(z, matrix, float(d)), dtype=np.float64)
                shifts[j, float(d)] = dict(zip(others, moved.tolist(), strict=True))
            else:
                shifts[j, float(d)] = {
                    run: _tilted_mean(probabilities, z, float(d), matrix[:, i], t, weighted)
                    - _tilted_mean(probabilities, z, 0.0, matrix[:, i], t, weighted)
                    for i, run in enumerate(others)
                }
            say(CHECKING, n * len(dependences) + i_d + 1, total)
    rows = []
    for run in others:
        for j, key in enumerate(columns):
            label = (run, key[0], key[1], int(key[2]))
            if label not in indexed.index:
                continue
            report = indexed.loc[label]
            for d in dependences:
                shift = shifts[j, float(d)][run]
                point, low, high = (
                    _finite(report.get(c)) for c in
                    ("difference_corrected", "difference_combined_low", "difference_combined_high")
                )  # fmt: skip
                moved = [None if x is None else x + shift for x in (point, low, high)]
                rows.append(
                    {
                        "run": run, "metric": key[0], "variant": key[1], "cutoff": int(key[2]),
                        "dependence": float(d), "difference_corrected": moved[0],
                        "difference_combined_low": moved[1], "difference_combined_high": moved[2],
                        "shift": shift,
                        "significant": None if moved[1] is None or moved[2] is None
                        else bool(moved[1] > 0 or moved[2] < 0),
                    }
                )  # fmt: skip
    return pd.DataFrame(rows, columns=DEPENDENCE_COLUMNS)


def _tilted_mean(
    probabilities: pd.DataFrame, z: np.ndarray, dependence: float, values: np.ndarray, t: np.ndarray, weighted: bool
) -> float:
    """The corrected mean of ``values`` with the probabilities :func:`tilted`, in the untilted columns ``t``."""
    pi = tilted(probabilities, z, dependence).to_numpy(dtype=np.float64)
    p, w = (np.ones((len(pi), 1)), pi @ t[:, 0]) if weighted else (pi @ t, None)
    return float(class_means(p, values, row_weights=w)[0, 0])


#: :func:`dependent_fit`'s class shares: at most this many equal-count bands of z, each of :data:`MIN_BAND_QUERIES`.
DEPENDENCE_BANDS = 10
MIN_BAND_QUERIES = 50
#: Class shares of a band: half a query per label on top of its queries' probabilities (the crowd model's).
BAND_SHARE_PRIOR = 0.5
#: A worker's row for a true label: its odds of a wrong answer (at z = 0) with these pseudo-answers, right
#: and wrong, and its wrong answers' proportions with this many per cell.
ROW_PRIOR_RIGHT, ROW_PRIOR_WRONG, PATTERN_PSEUDO = 2.0, 1.0, 1.0
#: EM of :func:`dependent_fit` stops when no query's probability moves by more than this, or after the
#: iterations; each M-step takes this many Newton steps on the rows' log odds.
DEPENDENT_TOLERANCE = 1e-6
DEPENDENT_ITERATIONS = 200
NEWTON_STEPS = 5


def answer_rates(answers: pd.DataFrame, confusion: Mapping[str, pd.DataFrame], labels: list) -> np.ndarray:
    """[answers × true label × answer]: each answer's worker's fitted row."""
    matrices = {w: c.reindex(index=labels, columns=labels).to_numpy(dtype=np.float64) for w, c in confusion.items()}
    return np.stack([matrices[w] for w in answers["worker"].astype(str)])


def dependent_fit(
    answers: pd.DataFrame,
    gold: Mapping[str, str],
    probabilities: pd.DataFrame,
    z: np.ndarray,
    dependence: float,
    fitted: list[str] | None = None,
) -> tuple[pd.DataFrame, dict[str, pd.DataFrame]]:
    """The batch's crowd refitted as erring with dependence D: ``(label probabilities, each worker's row at
    z = 0)``, the rows of ``fitted`` (default: every row with an answer) re-estimated, the others kept.

    Dawid–Skene EM with each answer's error odds × exp(D·z_q): a worker's row per true label is its wrong
    odds (MAP with :data:`ROW_PRIOR_RIGHT`/:data:`ROW_PRIOR_WRONG`, Newton steps) and its wrong answers'
    proportions (:data:`PATTERN_PSEUDO`); class shares per band of z. Gold questions keep their label,
    untilted. Why the bands and the refit (docs/quality.md, item 5): the labels' shares move with the
    rankings' values, and posteriors fitted as if errors were independent already carry the dependent ones."""
    labels = list(probabilities.columns)
    k = len(labels)
    qids = list(probabilities.index.astype(str))
    gold = {str(item): str(label) for item, label in gold.items()}
    gold_items = sorted(set(gold) - set(qids))
    item_row = {q: i for i, q in enumerate(qids + gold_items)}
    items = answers["item"].astype(str).map(item_row)
    keep = items.notna().to_numpy()
    frame = answers.loc[keep]
    rows = items[keep].to_numpy(dtype=np.int64)
    if not len(frame):
        return probabilities.copy(), {}
    position = {label: i for i, label in enumerate(labels)}
    given = frame["label"].astype(str).map(position).to_numpy(dtype=np.int64)
    workers, worker = np.unique(frame["worker"].astype(str).to_numpy(), return_inverse=True)
    z = np.asarray(z, dtype=np.float64)
    is_query = rows < len(qids)
    factor = np.where(is_query, np.exp(dependence * z[np.minimum(rows, len(qids) - 1)]), 1.0)
    posteriors = np.vstack(
        [probabilities.to_numpy(dtype=np.float64), np.eye(k)[[position[gold[g]] for g in gold_items]].reshape(-1, k)]
    )
    chosen = set(qids if fitted is None else map(str, fitted))
    free = np.array([q in chosen for q in qids] + [False] * len(gold_items)) & np.isin(np.arange(len(posteriors)), rows)
    targets = np.flatnonzero(free)
    bands = max(1, min(DEPENDENCE_BANDS, len(targets) // MIN_BAND_QUERIES))
    band = np.empty(len(targets), dtype=np.int64)
    band[np.argsort(z[targets], kind="stable")] = np.arange(len(targets)) * bands // max(len(targets), 1)
    right = (given[:, None] == np.arange(k)[None, :]).astype(np.float64)  # answers × true label
    log_odds = np.zeros((len(workers), k))
    every = np.arange(len(frame))
    counted = free[rows]  # the answers on the queries being estimated, and their rows among them
    local = np.searchsorted(targets, rows[counted])
    for _ in range(DEPENDENT_ITERATIONS):
        weight = posteriors[rows]  # answers × true label
        shares = np.full((bands, k), BAND_SHARE_PRIOR)
        np.add.at(shares, band, posteriors[targets])
        shares /= shares.sum(axis=1, keepdims=True)
        wrong = np.full((len(workers), k, k), PATTERN_PSEUDO)
        np.add.at(wrong, (worker, slice(None), given), weight * (1.0 - right))
        wrong[:, np.eye(k, dtype=bool)] = 0.0
        wrong /= wrong.sum(axis=2, keepdims=True)
        for _ in range(NEWTON_STEPS):
            odds = np.exp(log_odds)
            p_wrong = odds[worker] * factor[:, None] / (1.0 + odds[worker] * factor[:, None])
            prior_wrong = odds / (1.0 + odds)
            score = ROW_PRIOR_WRONG - (ROW_PRIOR_RIGHT + ROW_PRIOR_WRONG) * prior_wrong
            curvature = (ROW_PRIOR_RIGHT + ROW_PRIOR_WRONG) * prior_wrong * (1.0 - prior_wrong)
            np.add.at(score, worker, weight * ((1.0 - right) - p_wrong))
            np.add.at(curvature, worker, weight * p_wrong * (1.0 - p_wrong))
            log_odds += np.clip(score / curvature, -3.0, 3.0)
        p_right = 1.0 / (1.0 + np.exp(log_odds)[worker] * factor[:, None])  # answers × true label
        rate = np.where(right > 0, p_right, (1.0 - p_right) * wrong[worker, :, given][every])
        log_lik = np.zeros((len(targets), k))
        np.add.at(log_lik, local, np.log(np.maximum(rate[counted], 1e-300)))
        log_post = log_lik + np.log(shares[band])
        new = np.exp(log_post - log_post.max(axis=1, keepdims=True))
        new /= new.sum(axis=1, keepdims=True)
        moved = np.abs(new - posteriors[targets]).max() if len(targets) else 0.0
        posteriors[targets] = new
        if moved <= DEPENDENT_TOLERANCE:
            break
    accuracy = 1.0 / (1.0 + np.exp(log_odds))  # workers × true label
    confusion = {
        str(w): pd.DataFrame(
            (1.0 - accuracy[i])[:, None] * wrong[i] + np.diag(accuracy[i]), index=labels, columns=labels
        )
        for i, w in enumerate(workers)
    }
    return pd.DataFrame(posteriors[: len(qids)], index=probabilities.index, columns=labels), confusion
