"""Does each label-corrected interval cover its truth? One simulated study (:mod:`.studies`), its figures
computed as the reports compute them (same estimators, same seeds), and the tables over many studies
(the ``crowd_coverage`` command; measured: docs/quality.md, "The crowd model").
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from genderbias.crowd.aggregation import dawid_skene
from genderbias.crowd.class_means import class_means
from genderbias.crowd.denoised import (
    denoised_bias,
    denoised_fit,
    interval_construction,
    leave_out_estimates,
    refitted_draws,
)
from genderbias.crowd.label_probabilities import LabelModel, crowd_quality
from genderbias.crowd.label_uncertainty import MIN_USABLE_DRAWS, CorrectedFit
from genderbias.crowd.simulation.studies import (
    LABELS,
    MACHINE_ACCURACY,
    MEAN_A,
    MEAN_DIFFERENCE,
    Crowd,
    answered,
    study,
    synthetic_truth,
)
from genderbias.ranking.defaults import LEVEL
from genderbias.stats import intervals, plan_inputs, power
from genderbias.stats.significance import bootstrap_ci, resampling_weights

__all__ = [
    "COVERED", "bias_table", "coverage_study", "coverage_table", "floor_intervals", "known_posteriors",
    "oracle_intervals", "promised_power", "width_table",
]  # fmt: skip

#: What :func:`coverage_study` checks, in the order the coverage table prints them.
COVERED = ("value", "difference", "denoised")


def coverage_study(
    rng: np.random.Generator,
    crowd: Crowd,
    n: int,
    seed: int,
    samples: int = 200,
    constructions: bool = True,
    figures: tuple[str, ...] = COVERED,
) -> dict:
    """One study of ``n`` queries: does each interval cover its truth?

    ``value`` / ``difference``: run A's label-corrected value and B − A (:class:`.label_uncertainty.CorrectedFit`,
    ``samples`` refits) against :data:`MEAN_A` [n] and :data:`MEAN_DIFFERENCE` [n]; ``denoised``: the de-noised
    accuracy (every query sampled, one stratum) against :data:`MACHINE_ACCURACY`; ``warning``: the crowd-quality
    check. Each the product's interval; with ``constructions`` also ``<figure>:<construction>`` for every one of
    :data:`genderbias.stats.intervals.CONSTRUCTIONS` from the same draws (with ``:extra_`` and ``:widening_``
    for the crossed ones), and ``<figure>:error`` (estimate − truth), ``:shift`` (mean draw − estimate), both in
    bootstrap s.d., and ``:sd``. ``figures``: which of :data:`COVERED` to compute (the same draws either way).
    """
    unknown = set(figures) - set(COVERED)
    if unknown or not figures:
        raise ValueError(f"figures: some of {', '.join(COVERED)}, got {', '.join(map(repr, figures))}")

    drawn = answered(study(rng, synthetic_truth(rng, n, crowd.label_shares), crowd))
    qids = drawn.qids
    ds = dawid_skene(drawn.judgments, gold=drawn.gold)
    table = ds.held_out.loc[qids, list(LABELS)]
    quality = crowd_quality(ds, discarded=drawn.discarded)
    model = LabelModel(table, ds, qids, quality)
    product = dict.fromkeys(("value", "difference"), intervals.construction_for(trusted=model.trusted()))
    denoised_quality = None
    if "denoised" in figures:
        machine = {q: LABELS[m] for q, m in zip(qids, drawn.machine, strict=True)}
        denoised = denoised_fit(
            drawn.judgments, machine, dict.fromkeys(qids, 1.0), dict.fromkeys(qids, "s"), gold=drawn.gold
        )
        denoised_quality = crowd_quality(denoised.ds)
        product["denoised"] = interval_construction()
    names = intervals.CONSTRUCTIONS if constructions else tuple(dict.fromkeys(product[f] for f in figures))
    jackknife = any(intervals.needs_jackknife(c) for c in names)
    fitter = CorrectedFit(model, samples, seed, jackknife=jackknife)
    fitted = {
        "value": (*fitter.estimates(drawn.a[:, None]), MEAN_A[0]),
        "difference": (*fitter.estimates((drawn.b - drawn.a)[:, None]), MEAN_DIFFERENCE[0]),
    }
    left_out = {
        "value": lambda by: fitter.left_out_values(drawn.a[:, None], by),
        "difference": lambda by: fitter.left_out_values((drawn.b - drawn.a)[:, None], by),
    }
    denoised_reach = None
    if "denoised" in figures:
        draws, jack = refitted_draws(denoised, bootstrap=samples, seed=seed, jackknife=jackknife)
        fitted["denoised"] = (
            np.array([denoised.accuracy]),
            draws[:, None],
            None if jack is None else jack[:, None],
            MACHINE_ACCURACY,
        )
        cached: dict[str, np.ndarray] = {}

        def denoised_left_out(by: str) -> np.ndarray:
            if by not in cached:
                cached[by] = leave_out_estimates(denoised, by)
            return cached[by][:, None]

        left_out["denoised"] = denoised_left_out
        # Its interval reaches as far as its bias where the check of its fit warns, as the calibration report's.
        bias = denoised_bias(denoised, seed=seed, quality=denoised_quality)
        denoised_reach = None if bias is None else np.array([bias])
    out: dict = oracle_intervals(drawn, fitter.weights, resampling_weights(len(qids), samples, seed))
    out |= floor_intervals(drawn, fitter.weights, crowd.label_shares)
    for figure, (point, boot, jack, truth) in ((f, fitted[f]) for f in figures):
        usable = MIN_USABLE_DRAWS if figure != "denoised" else 0.0
        used = [n for n in names if constructions or n == product[figure]]
        for name in used:
            accel = intervals.acceleration(jack) if intervals.needs_jackknife(name) else None
            extra = intervals.extra_variance(name, left_out[figure]) if intervals.needs_workers(name) else None
            if extra is not None:
                out[f"{figure}:extra_{name}"] = float(extra[0])
            low, high = intervals.bootstrap_interval(boot, point, LEVEL, name, accel, usable, extra)

            def covers(low, high, truth=truth):
                return bool(not np.isnan(low[0]) and not np.isnan(high[0]) and low[0] <= truth <= high[0])

            out[f"{figure}:{name}"] = covers(low, high)
            out[f"{figure}:width_{name}"] = float(high[0] - low[0])
            if name == product[figure]:
                # The product's interval: extended by the bias of posteriors too sure where the model's check warns.
                values = {"value": drawn.a, "difference": drawn.b - drawn.a}.get(figure)
                bias = denoised_reach if values is None else fitter.reach(values[:, None], point, boot)
                low, high = intervals.extended(low, high, bias)
                out[figure] = covers(low, high)
                out[f"{figure}:width"] = float(high[0] - low[0])
                if figure == "difference":  # the planted difference is positive: is it found?
                    out["difference:detected"] = bool(low[0] > 0)
                out[f"{figure}:unextended"] = out[f"{figure}:{name}"]
                out[f"{figure}:reach"] = float(bias[0]) if bias is not None else 0.0
                calibration = denoised_reach if values is None else fitter.calibration_bias(values[:, None])
                out[f"{figure}:calibration_bias"] = float(calibration[0]) if calibration is not None else 0.0
        sd = float(np.nanstd(boot[:, 0], ddof=1))
        out[f"{figure}:sd"] = sd
        out[f"{figure}:error"] = (float(point[0]) - truth) / sd if sd > 0 else np.nan
        out[f"{figure}:shift"] = (float(np.nanmean(boot[:, 0])) - float(point[0])) / sd if sd > 0 else np.nan
        for name in (c for c in used if intervals.needs_workers(c)):  # how much wider than the bootstrap's
            out[f"{figure}:widening_{name}"] = float(intervals.widening(boot[:, :1], out[f"{figure}:extra_{name}"])[0])
    out |= promised_power(drawn, ds.labels.reindex(qids).to_numpy() == "n", out["difference:width"], samples, seed)
    if denoised_quality is not None:
        out["denoised_warning"] = denoised_quality["warning"]
    out["warning"], out["trusted"] = quality["warning"], model.trusted()
    out["misfit"], out["information"], out["model"] = quality["misfit"], quality["information"], quality["model"]
    return out


def promised_power(drawn, in_set: np.ndarray, combined_width: float, samples: int, seed: int) -> dict:
    """What the study plan would promise with this study as its pilot: r, the combined interval's width over
    the query-only one's on S (``in_set``) (``difference:width_factor``), and the simulated power at Δ/r
    (``difference:promised``) and at Δ (``difference:promised_query_only``) with |S| queries."""
    differences = (drawn.b - drawn.a)[in_set]
    low, high = bootstrap_ci(differences[:, None], samples, seed)
    factor = plan_inputs.label_width_factor([high[0] - low[0]], [combined_width])
    out = {"difference:width_factor": np.nan, "difference:promised": np.nan, "difference:promised_query_only": np.nan}
    if factor is None or len(differences) < 3:
        return out
    planned, size = MEAN_DIFFERENCE[0], len(differences)
    tested = plan_inputs.tested_difference(planned, factor)
    return out | {
        "difference:width_factor": factor,
        "difference:promised": power.simulated_power(differences, tested, size, seed=seed),
        "difference:promised_query_only": power.simulated_power(differences, planned, size, seed=seed),
    }


def oracle_intervals(drawn, weights: np.ndarray, machine_weights: np.ndarray) -> dict:
    """The yardstick of every width: the percentile interval the true labels give on the same resampled queries.
    ``<figure>:oracle`` (covers), ``<figure>:oracle_width``, ``difference:oracle_detected`` (excludes 0)."""
    non_gendered = (drawn.truth == 0).astype(np.float64)
    right = (drawn.machine == drawn.truth).astype(np.float64)
    columns = {
        "value": (drawn.a, non_gendered, weights, MEAN_A[0]),
        "difference": (drawn.b - drawn.a, non_gendered, weights, MEAN_DIFFERENCE[0]),
        "denoised": (right, np.ones(len(right)), machine_weights, MACHINE_ACCURACY),
    }
    out: dict = {}
    for figure, (values, kept, w, truth) in columns.items():
        point = (values * kept).sum() / kept.sum()
        draws = (w * kept * values).sum(axis=1) / (w * kept).sum(axis=1)
        low, high = intervals.bootstrap_interval(draws, point, LEVEL, "percentile")
        out[f"{figure}:oracle"] = bool(low <= truth <= high)
        out[f"{figure}:oracle_width"] = float(high - low)
        if figure == "difference":
            out["difference:oracle_detected"] = bool(low > 0)
    return out


def known_posteriors(drawn, shares: np.ndarray) -> np.ndarray | None:
    """[N × K]: each query's posterior under the workers' true confusions and class shares (answers read as
    independent given the label); None when the study does not carry them."""
    confusions = drawn.confusions
    if not confusions:
        return None
    row = {q: i for i, q in enumerate(drawn.qids)}
    answers = drawn.judgments[drawn.judgments["item"].isin(row)]
    index = answers["item"].map(row).to_numpy()
    log_rows = np.log(np.maximum(np.array([confusions[w] for w in answers["worker"]]), 1e-12))  # [J × T × G]
    given = np.array([LABELS.index(label) for label in answers["label"]])
    log_post = np.tile(np.log(np.asarray(shares, dtype=np.float64)), (len(drawn.qids), 1))
    np.add.at(log_post, index, log_rows[np.arange(len(given)), :, given])
    posteriors = np.exp(log_post - log_post.max(axis=1, keepdims=True))
    return posteriors / posteriors.sum(axis=1, keepdims=True)


def floor_intervals(drawn, weights: np.ndarray, shares: np.ndarray) -> dict:
    """The known-confusion floor (issue 81, item 5): the percentile interval of the value and difference on
    :func:`known_posteriors`, the narrowest a crowd-model interval can be when the model is right and its
    parameters known (below what can cover where answers are not independent given the label).
    ``<figure>:floor`` (covers), ``<figure>:floor_width``."""
    posteriors = known_posteriors(drawn, shares)
    if posteriors is None:
        return {}
    out: dict = {}
    for figure, values, truth in (
        ("value", drawn.a, MEAN_A[0]),
        ("difference", drawn.b - drawn.a, MEAN_DIFFERENCE[0]),
    ):
        point = float(class_means(posteriors, values)[0, 0])
        draws = class_means(posteriors, values, weights)[:, 0, 0]
        low, high = intervals.bootstrap_interval(draws, point, LEVEL, "percentile")
        out[f"{figure}:floor"] = bool(low <= truth <= high)
        out[f"{figure}:floor_width"] = float(high - low)
    return out


def width_table(results: pd.DataFrame) -> pd.DataFrame:
    """Per figure and per ``<figure>:<construction>``: coverage, the oracle's, the median width over the
    oracle's (and over the floor's); ``needed_ratio``: the width an interval needs to cover at the nominal rate;
    for the difference the power found beside the plan's promise (``promised_gap`` with its paired MC s.e.)."""
    rows = {}
    covered = coverage_table(results)["share"]  # the coverage as the coverage table says it
    for figure in COVERED:
        if f"{figure}:oracle_width" not in results:
            continue
        oracle = results[f"{figure}:oracle_width"].astype(float)
        named = [(figure, f"{figure}:width")]
        named += [(f"{figure}:{c}", f"{figure}:width_{c}") for c in intervals.CONSTRUCTIONS]
        for row, width in named:
            if width not in results:
                continue
            rows[row] = {
                "coverage": float(covered[row]),
                "oracle_coverage": results[f"{figure}:oracle"].astype(float).mean(),
                "width_ratio": float(np.nanmedian(results[width].astype(float) / oracle)),
            }
            if f"{figure}:floor_width" in results:  # the width over the known-confusion floor
                floor = results[f"{figure}:floor_width"].astype(float)
                rows[row]["floor_ratio"] = float(np.nanmedian(results[width].astype(float) / floor))
                rows[row]["floor_over_oracle"] = float(np.nanmedian(floor / oracle))
                rows[row]["floor_coverage"] = results[f"{figure}:floor"].astype(float).mean()
        if f"{figure}:width_percentile" in results:
            # The estimate's RMS error (in bootstrap s.d.) times the bootstrap interval's width, over the oracle's.
            rmse = float(np.sqrt(np.nanmean(results[f"{figure}:error"].astype(float) ** 2)))
            percentile = results[f"{figure}:width_percentile"].astype(float)
            rows[figure]["needed_ratio"] = rmse * float(np.nanmedian(percentile / oracle))
        if figure == "difference":
            detected = results["difference:detected"].astype(float)
            rows[figure]["power"] = detected.mean()
            rows[figure]["oracle_power"] = results["difference:oracle_detected"].astype(float).mean()
            if "difference:promised" in results:
                for name, column in (
                    ("promised", "difference:promised"),
                    ("promised_query_only", "difference:promised_query_only"),
                ):
                    promised = results[column].astype(float)
                    gap = (detected - promised).dropna()
                    rows[figure][name] = promised.mean()
                    rows[figure][f"{name}_gap"] = gap.mean()
                    rows[figure][f"{name}_gap_se"] = gap.std(ddof=1) / np.sqrt(len(gap)) if len(gap) > 1 else np.nan
    return pd.DataFrame(rows).T


def coverage_table(results: pd.DataFrame) -> pd.DataFrame:
    """Per figure, warning and ``<figure>:<construction>``: the share of studies, its MC s.e. and the studies."""
    columns = [*(f for f in COVERED if f in results), "warning"]
    columns += ["denoised_warning"] if "denoised_warning" in results else []
    columns += [f"{f}:{c}" for f in COVERED for c in intervals.CONSTRUCTIONS if f"{f}:{c}" in results]
    share = results[columns].astype(float).mean()
    return pd.DataFrame({"share": share, "mc_se": np.sqrt(share * (1 - share) / len(results)), "studies": len(results)})


def bias_table(results: pd.DataFrame) -> pd.DataFrame:
    """Per figure: mean estimate − truth and mean draw − estimate in bootstrap s.d. (with MC s.e.), and the
    errors' spread (1 when the bootstrap's spread is right)."""
    rows = {}
    for figure in COVERED:
        if f"{figure}:error" not in results:
            continue
        error, shift = results[f"{figure}:error"].astype(float), results[f"{figure}:shift"].astype(float)
        rows[figure] = {
            "error": error.mean(),
            "error_se": error.std(ddof=1) / np.sqrt(len(error)),
            "shift": shift.mean(),
            "shift_se": shift.std(ddof=1) / np.sqrt(len(shift)),
            "spread": error.std(ddof=1),
        }
        for name in ("crossed", "crossed_net"):  # the mean factor the interval is widened by
            if f"{figure}:widening_{name}" in results:
                rows[figure][f"widening_{name}"] = results[f"{figure}:widening_{name}"].astype(float).mean()
    return pd.DataFrame(rows).T
