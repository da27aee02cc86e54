"""Gender-bias metrics of rankings for every query at once, and every measure of one run (:func:`evaluate_run`),
as docs/metrics.md, "Definitions" defines them. Pure, so notebooks and tests use exactly the reports' code.

Every metric is computed from the ``[queries × depth]`` matrices of :mod:`genderbias.ranking.ranked_counts`:
RaB/ARaB by :func:`genderbias.ranking.rank_bias.rank_bias_of`; TExFAIR@k (Abolghasemi et al., ECIR 2024) here,
TE_G = Σ_{r ≤ min(k,n)} (count_G(d_r)/|d_r|)·w_r, TED = Σ_G |TE_G/(TE_f + TE_m) − ½|, ``rbdf`` 1 − TED·RBDF (the
paper's), ``plain`` 1 − TED; NFaiRR, the exposure measures and each
:class:`genderbias.ranking.group_measure.GroupMeasure` in their own modules.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import numpy as np
import pandas as pd
import polars as pl

from genderbias.ranking import effectiveness
from genderbias.ranking.defaults import (
    BACKGROUND_DEPTH,
    COLLECTION_BACKGROUND,
    DEFAULT_NORMALISER,
    DEFAULT_SAMPLES,
    DEFAULT_SEED,
    DEFAULT_THRESHOLD,
    DEFAULT_TIES,
)
from genderbias.ranking.exposure import ExposureSettings, alignment, exposure_columns
from genderbias.ranking.nfairr import nfairr_columns, nfairr_variant
from genderbias.ranking.rank_bias import rank_bias_ranges
from genderbias.ranking.ranked_counts import (
    RankedCounts,
    discounts,
    ranked_counts,
    tie_arrangements,
    tie_view,
    validate_cutoffs,
)
from genderbias.ranking.ties import TIE_AWARE, Orders, order_run, over_tie_orders, tie_summary
from genderbias.ranking.vocabulary import BY_NAME, EXPOSURE, GROUP_MEASURES, RAB_LIKE
from genderbias.text.tokenize import DEFAULT_TOKENIZER
from genderbias.text.wordlists import GenderWords, default_representative_wordlist, default_wordlist

if TYPE_CHECKING:
    from genderbias.crowd.label_probabilities import LabelModel

__all__ = ["evaluate", "evaluate_run", "exposure_fairness", "figures", "over_orders", "rank_bias", "texfair"]

RANK_BIAS_VARIANTS = BY_NAME["RaB"].variants  # ("tf", "bool"), shared by every RaB-like metric
TEXFAIR_VARIANTS = BY_NAME["TExFAIR"].variants  # ("rbdf", "plain"); the first is the paper's


# --- RaB / ARaB ------------------------------------------------------------------------


def rank_bias(
    run: pl.DataFrame, counts: pl.DataFrame, cutoffs: Sequence[int], variant: str, ties: str = DEFAULT_TIES
) -> pd.DataFrame:
    """RaB@t and ARaB@t per query with ``tf`` (ln(1+count)) or ``bool`` magnitudes, ties ordered by ``ties``, with
    the range over orders of ties (``RaB@t:low`` …) and ``tied@t``."""
    cutoffs = validate_cutoffs(cutoffs)
    return _rank_bias(ranked_counts(run, counts, max(cutoffs), ties), run, counts, cutoffs, variant)


def _rank_bias(ranked: RankedCounts, run, counts, cutoffs, variant: str, tied: RankedCounts | None = None):
    columns = rank_bias_ranges(ranked, run, counts, cutoffs, variant, tied)
    return pd.DataFrame(columns, index=pd.Index(ranked.qids, name="qid"))


def over_orders(ranked: RankedCounts, compute, orders: Orders | None) -> pd.DataFrame:
    """``compute(ranked)``'s columns per query; under tie-aware, the mean over ``orders`` where they
    apply, with the lowest and highest value over them (``name:low``, ``name:high``) and ``tied@k``."""
    columns = compute(ranked)
    if orders is not None:
        mean, low, high = over_tie_orders(
            orders, lambda rows, cols: compute(ranked.rearranged(rows, cols)), len(ranked.qids)
        )
        covered = np.zeros(len(ranked.qids), dtype=bool)
        covered[orders.rows] = True
        for name in list(columns):
            plain = columns[name]
            if name in mean:
                columns[name] = np.where(covered, mean[name], plain)
                columns[f"{name}:low"] = np.where(covered, low[name], plain)
                columns[f"{name}:high"] = np.where(covered, high[name], plain)
        for k in sorted({int(name.split("@")[1]) for name in mean if "@" in name}):
            columns[f"tied@{k}"] = ranked.tied(k)
    columns["n"] = ranked.n
    return pd.DataFrame(columns, index=pd.Index(ranked.qids, name="qid"))


# --- TExFAIR ---------------------------------------------------------------------------


def texfair(
    run: pl.DataFrame, counts: pl.DataFrame, cutoffs: Sequence[int], ties: str = DEFAULT_TIES, seed: int = 0
) -> pd.DataFrame:
    """TED@k, RBDF@k and TExFAIR@k (``rbdf``) / TExFAIR-plain@k (``plain``) per query.

    ``counts`` are of the representative word list; ``length`` (tokens) normalises the term
    frequencies (Σ_{t ∈ V_G} tf(t, d)/|d| = count_G(d)/|d|). Under ``tie-aware`` the values are
    means over the orders of ties (:func:`genderbias.ranking.ties.tie_orders`, ``seed`` for drawn orders).
    """
    cutoffs = validate_cutoffs(cutoffs)
    ranked = ranked_counts(run, counts, max(cutoffs), ties)
    return over_orders(ranked, lambda r: _texfair_columns(r, cutoffs), tie_arrangements(ranked, seed))


def _texfair_columns(ranked: RankedCounts, cutoffs: Sequence[int]) -> dict[str, np.ndarray]:
    w = discounts(ranked.depth)
    with np.errstate(invalid="ignore", divide="ignore"):
        share_f = np.where(ranked.length > 0, ranked.f / ranked.length, 0.0)
        share_m = np.where(ranked.length > 0, ranked.m / ranked.length, 0.0)
    exposure_f = np.cumsum(share_f * w, axis=1)
    exposure_m = np.cumsum(share_m * w, axis=1)
    gendered = np.cumsum(((ranked.f + ranked.m) > 0) * w, axis=1)
    position = np.cumsum(w)
    rows = np.arange(len(ranked.qids))
    columns = {}
    for k in cutoffs:
        te_f, te_m = ranked.at(exposure_f, k), ranked.at(exposure_m, k)
        total = te_f + te_m
        with np.errstate(invalid="ignore", divide="ignore"):
            p_f = np.where(total > 0, te_f / total, 0.5)
        ted = 2.0 * np.abs(p_f - 0.5)  # |p_f − ½| + |p_m − ½| with p_m = 1 − p_f
        last = np.minimum(k, ranked.n) - 1
        rbdf = ranked.at(gendered, k) / position[last] if len(rows) else np.zeros(0)
        columns[f"TED@{k}"] = ted
        columns[f"RBDF@{k}"] = rbdf
        columns[f"TExFAIR@{k}"] = 1.0 - ted * rbdf
        columns[f"TExFAIR-plain@{k}"] = 1.0 - ted
    return columns


# --- AWRF, rKL, rND, rRD ----------------------------------------------------------------


def exposure_fairness(
    run: pl.DataFrame,
    counts: pl.DataFrame,
    cutoffs: Sequence[int],
    settings: ExposureSettings | None = None,
    ties: str = DEFAULT_TIES,
    seed: int = 0,
) -> pd.DataFrame:
    """AWRF@k, rKL@k, rND@k, rRD@k per query (and ``n``) from the representative ``counts``
    (:mod:`genderbias.ranking.exposure`, default settings when None; a document missing from ``counts`` is neutral);
    under ``tie-aware`` the means over the orders of ties, as :func:`texfair`."""
    cutoffs = validate_cutoffs(cutoffs)
    ranked = ranked_counts(run, counts, max(cutoffs), ties)
    return _exposure(ranked, cutoffs, settings, tie_arrangements(ranked, seed))


def _exposure(ranked: RankedCounts, cutoffs, settings: ExposureSettings | None, orders: Orders | None) -> pd.DataFrame:
    settings = settings if settings is not None else ExposureSettings()
    return over_orders(ranked, lambda r: exposure_columns(r.f, r.m, r.n, cutoffs, settings), orders)


# --- everything for one run ----------------------------------------------------------------


def evaluate_run(
    run: pl.DataFrame,
    counts: pl.DataFrame,
    representative_counts: pl.DataFrame,
    cutoffs: Sequence[int],
    *,
    threshold: float = DEFAULT_THRESHOLD,
    background: pl.DataFrame | None = None,
    background_name: str = COLLECTION_BACKGROUND,
    comparison: Sequence[pl.DataFrame] = (),
    normaliser: str = DEFAULT_NORMALISER,
    exposure: ExposureSettings | None = None,
    ties: str = DEFAULT_TIES,
    seed: int = 0,
) -> pd.DataFrame:
    """All metrics of one run, long format: ``qid, metric, variant, cutoff, value, low, high, tied``.

    ``counts`` (the definitional list) feed RaB/ARaB; ``representative_counts`` NFaiRR, TExFAIR and the exposure
    metrics (under ``exposure``, default settings with ``threshold``). NFaiRR: :func:`nfairr_variant`,
    ``comparison`` and ``normaliser`` as in :func:`nfairr`. ``ties`` orders tied documents; ``low``/``high``: the
    range over orders of ties (exact for RaB, ARaB, NFaiRR; else over the averaged orders, NaN unless tie-aware);
    ``tied``: whether the query's top k holds a tie.
    """
    cutoffs = validate_cutoffs(cutoffs)
    depth = max(cutoffs)
    ranked = ranked_counts(run, counts, depth, ties)
    tied = tie_view(ranked, run, counts)
    parts = []
    for variant in RANK_BIAS_VARIANTS:
        table = _rank_bias(ranked, run, counts, cutoffs, variant, tied)
        for metric in RAB_LIKE:
            parts.append(_long(table, metric, variant, cutoffs, metric))
    representative = ranked_counts(run, representative_counts, depth, ties)
    representative_tied = tie_view(representative, run, representative_counts)
    fair = nfairr_columns(
        representative,
        run,
        representative_counts,
        cutoffs,
        threshold,
        background,
        comparison,
        normaliser,
        ties,
        representative_tied,
    )
    variant = nfairr_variant(background_name if background is not None else COLLECTION_BACKGROUND, normaliser)
    parts.append(_long(fair, "NFaiRR", variant, cutoffs, "NFaiRR"))
    orders = tie_arrangements(representative, seed)
    terms = over_orders(representative, lambda r: _texfair_columns(r, cutoffs), orders)
    for variant in TEXFAIR_VARIANTS:  # columns TExFAIR@k (the paper's) and TExFAIR-plain@k
        prefix = "TExFAIR" if variant == TEXFAIR_VARIANTS[0] else f"TExFAIR-{variant}"
        parts.append(_long(terms, "TExFAIR", variant, cutoffs, prefix))
    settings = exposure if exposure is not None else ExposureSettings(threshold=threshold)
    groups = _exposure(representative, cutoffs, settings, orders)
    for metric in EXPOSURE:
        variant = settings.awrf_variant() if metric == "AWRF" else settings.rank_variant()
        parts.append(_long(groups, metric, variant, cutoffs, metric))
    for measure in GROUP_MEASURES:  # each declared and computed by its own class (EE, GFR)
        values = over_orders(representative, lambda r, m=measure: _group_columns(m, r, cutoffs, settings), orders)
        parts.append(_long(values, measure.name, measure.variant(settings), cutoffs, measure.name))
    table = pd.concat(parts, ignore_index=True)
    flags = np.concatenate([tied.tied(k) for k in cutoffs])
    if all(len(part) == len(flags) and list(part["qid"][: len(tied.qids)]) == tied.qids for part in parts):
        table["tied"] = np.tile(flags, len(parts))  # every part: the queries in tied's order, cutoff by cutoff
        return table
    frame = pd.concat(pd.DataFrame({"qid": tied.qids, "cutoff": k, "tied": tied.tied(k)}) for k in cutoffs)
    frame = frame.astype({"qid": object, "cutoff": table["cutoff"].dtype})
    table = table.merge(frame, on=["qid", "cutoff"], how="left", sort=False)
    table["tied"] = table["tied"].fillna(False).astype(bool)
    return table


def _group_columns(measure, ranked: RankedCounts, cutoffs, settings: ExposureSettings) -> dict[str, np.ndarray]:
    a_f, a_m, _ = alignment(ranked.f, ranked.m, settings.threshold)
    return measure.columns(a_f, a_m, ranked.n, cutoffs, settings)


def _long(table: pd.DataFrame, metric: str, variant: str, cutoffs: Sequence[int], prefix: str) -> pd.DataFrame:
    frames = []
    for k in cutoffs:
        name = f"{prefix}@{k}"
        value = table[name].to_numpy(dtype=np.float64)
        frames.append(
            pd.DataFrame(
                {
                    "qid": table.index.to_numpy(dtype=object),
                    "metric": metric,
                    "variant": variant,
                    "cutoff": k,
                    "value": value,
                    "low": table[f"{name}:low"].to_numpy(dtype=np.float64) if f"{name}:low" in table else np.nan,
                    "high": table[f"{name}:high"].to_numpy(dtype=np.float64) if f"{name}:high" in table else np.nan,
                }
            )
        )
    return pd.concat(frames, ignore_index=True)


# --- the one pipeline: every measure of every run, summarised -------------------------------


class Counts(Protocol):
    """What the figures read of the texts: ``docid, f, m, length`` of ``docids`` under a word list and a
    tokenizer (:meth:`genderbias.api.inputs.Texts.counts`; the platform's over its count cache)."""

    def __call__(self, docids: pl.Series, wordlist: GenderWords, tokenizer: str) -> pl.DataFrame: ...


def figures(
    runs: Mapping[str, pl.DataFrame],
    counts: Counts,
    cutoffs: Sequence[int],
    *,
    wordlist: GenderWords | None = None,
    representative: GenderWords | None = None,
    tokenizer: str = DEFAULT_TOKENIZER,
    background: pl.DataFrame | None = None,
    background_name: str = COLLECTION_BACKGROUND,
    **settings,
) -> pd.DataFrame:
    """Long frame ``run, qid, metric, variant, cutoff, value, low, high, tied`` of every run (``qid, docid, rank,
    score``, at least as deep as the cutoffs) by :func:`evaluate_run` with ``settings``; NFaiRR's comparison is
    every run. ``counts`` is asked once per word list, for the documents the figures read. A query's values never
    depend on which other queries are asked for, so any subset is what the same call on that subset gives."""
    cutoffs = validate_cutoffs(cutoffs)
    ties = settings.get("ties", DEFAULT_TIES)
    read = [order_run(frame, order, max(cutoffs))["docid"] for frame in runs.values() for order in {ties, TIE_AWARE}]
    if background is not None:
        background = background.filter(pl.col("rank") <= BACKGROUND_DEPTH)
        read.append(background["docid"])
    docids = pl.concat(read).unique(maintain_order=True)
    definitional = counts(docids, wordlist or default_wordlist(), tokenizer)
    representative_counts = counts(docids, representative or default_representative_wordlist(), tokenizer)
    comparison = list(runs.values())
    parts = []
    for name, frame in runs.items():
        values = evaluate_run(
            frame, definitional, representative_counts, cutoffs, background=background,
            background_name=background_name, comparison=comparison, **settings,
        )  # fmt: skip
        values.insert(0, "run", name)
        parts.append(values)
    return pd.concat(parts, ignore_index=True)


@dataclass(frozen=True)
class Evaluation:
    """What :func:`evaluate` computes: the per-query figures and their summary."""

    #: ``run, qid, metric, variant, cutoff, value, low, high, tied``: bias and effectiveness.
    per_query: pd.DataFrame
    #: One row per run × metric × variant × cutoff: ``value, queries, ci_low, ci_high, p_value, tie_low,
    #: tie_high`` (and with labels the label-corrected columns, :data:`LABEL_UNCERTAINTY_COLUMNS`).
    summary: pd.DataFrame
    #: Per run, per cutoff: how many of its queries' top k hold a tied document (:func:`tie_summary`).
    tied_queries: dict[str, dict[str, int]]
    #: The asked queries the qrels do not judge; per run the judged ones it does not return.
    unjudged: list[str]
    unreturned: dict[str, list[str]]
    #: With labels: which interval the label-corrected figures got and why (:func:`figure_intervals.interval_choice`).
    label_interval: dict | None = None


def evaluate(
    runs: Mapping[str, pl.DataFrame],
    counts: Counts,
    cutoffs: Sequence[int],
    *,
    qids: Sequence[str] | None = None,
    qrels: pl.DataFrame | None = None,
    judged_by: str = "",
    measures: Sequence[str] = (),
    labels: LabelModel | None = None,
    in_set: Collection[str] | None = None,
    predicted: Mapping[str, str | None] | None = None,
    audit: Mapping[str, str] | None = None,
    baseline: str | None = None,
    samples: int = DEFAULT_SAMPLES,
    progress: Callable[[str, int, int], None] | None = None,
    **settings,
) -> Evaluation:
    """Every measure of every run over ``qids`` (default: the runs' queries), summarised: a report's one pipeline.
    Bias figures by :func:`figures` (``settings``: its keywords); with ``qrels`` also the effectiveness
    ``measures`` (variant ``judged_by``), every asked query a row. The summary over ``in_set`` (default: all):
    :func:`significance.summarise` (``samples``, ``baseline``) and :func:`tie_summary`; with a label model
    (``labels``; ``predicted``: each judged query's label; ``audit``: an expert sample's) the label-corrected
    figures and their intervals (:func:`figure_intervals.choose_intervals`). ``progress(step, done, total)``."""
    # Here, not at the top: scipy and the crowd models would double the import of every measure (pools, calc).
    from genderbias.crowd import figure_intervals, label_uncertainty
    from genderbias.stats import significance

    progress = progress or (lambda step, done, total: None)
    seed = settings.get("seed", DEFAULT_SEED)
    per_query = figures(runs, counts, cutoffs, **settings)
    qids = list(qids) if qids is not None else list(dict.fromkeys(per_query["qid"]))
    unjudged: list[str] = []
    unreturned: dict[str, list[str]] = {}
    if qrels is not None:
        parts = []
        for name, frame in runs.items():
            values = effectiveness.effectiveness(frame, qrels, measures, qids=qids)
            values.insert(0, "run", name)
            values.insert(3, "variant", judged_by)
            parts.append(values)
            unreturned[name] = effectiveness.unreturned_queries(frame, qrels, qids)
        per_query = pd.concat([per_query, *parts], ignore_index=True)
        judged = set(qrels["qid"].unique().to_list())
        unjudged = [qid for qid in qids if qid not in judged]
    measured = per_query
    if in_set is not None:
        measured = per_query[per_query["qid"].isin(in_set)]
        unjudged = [q for q in unjudged if q in in_set]
        unreturned = {run: [q for q in found if q in in_set] for run, found in unreturned.items()}
    step = "intervals and tests over the queries (bootstrap)"
    progress(step, 0, 1)
    summary = significance.summarise(measured, baseline=baseline, samples=samples, seed=seed)
    progress(step, 1, 1)
    label_interval = None
    if labels is not None and len(summary):
        wide = significance.wide_values(per_query)
        summary = label_uncertainty.combined_summary(
            wide, labels, set(in_set), summary, baseline=baseline, samples=samples, seed=seed, progress=progress
        )
        # Which interval each label-corrected figure gets: PPI++ on an audit sample, the crowd model's, or
        # none where errors are shared by query (issue 81).
        verdict = figure_intervals.shared_errors_verdict(labels)
        summary, label_interval = figure_intervals.choose_intervals(
            summary, wide, predicted or {}, audit, verdict, baseline=baseline
        )
    ranges, tied_queries = tie_summary(measured)
    if len(summary):
        summary = summary.merge(ranges, on=["run", "metric", "variant", "cutoff"], how="left")
    return Evaluation(per_query, summary, tied_queries, unjudged, unreturned, label_interval)
