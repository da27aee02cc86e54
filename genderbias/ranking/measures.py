"""Gender-bias metrics of rankings: RaB, ARaB, NFaiRR and TExFAIR, for every query at once.

Pure module (numpy, pandas, polars; no Django) so that notebooks and tests use exactly the
code the reports use. Every metric is computed from a dense ``[queries × depth]`` matrix of
per-rank values and cumulative sums along the ranks: one pass per run, no Python loop per
query (see ``docs/metrics.md``, "Benchmark").

Inputs
------
- ``run``: polars frame ``qid, docid, rank`` (``genderbias.files.runs.read_run``: ranks 1..n per
  query), already limited to the queries of interest. The documents ranked ≤ the largest cutoff
  are taken and re-numbered 1, 2, … in rank order (closing gaps left by removed rows).
- ``counts``: polars frame ``docid, f, m, length`` (``genderbias.text.magnitudes.document_counts``):
  tokens that are female words, male words, and all tokens, under one word list and tokenizer.

Definitions (``k`` a cutoff, ``n`` the documents the run has for the query, w_r = 1/log2(r+1))
-----------------------------------------------------------------------------------------------
- **RaB@t / ARaB@t** (Rekabsaz & Schedl, SIGIR 2020): the arithmetic of
  :func:`genderbias.ranking.rank_bias.rank_bias_of`, so the project has one implementation.

Tied documents (equal scores within a query) are ordered by ``ties`` (:mod:`genderbias.ranking.ties`): under
``tie-aware`` (the default) every figure is its expectation over all orders of each tie group, and
each comes with its lowest and highest value over those orders (``name:low``, ``name:high``) and
whether the query's top k holds a tie (``tied@k``).
- **NFaiRR@k** (Rekabsaz, Kopeinik & Schedl, SIGIR 2021): a document is neutral (ω = 1) when
  f + m ≤ τ, else ω = 1 − Σ_g |M_g/(f+m) − ½|. FaiRR@k = Σ_{r ≤ min(k,n)} ω(d_r)·w_r.
  IFaiRR@k with the collection as background (default) = Σ_{r ≤ k} w_r, since the collection
  always has k neutral documents. With a background run, IFaiRR@k is the best reordering (ω
  descending) of a candidate set per query, chosen by the *normaliser*:

  * ``comparison`` (default): the background run's top :data:`BACKGROUND_DEPTH` documents
    together with the top documents of *every run of the comparison* (the runs of one report).
    The denominator is the same for every run compared, so a fairer document never lowers a
    run's score (NFaiRR is monotone in FaiRR), runs and their paired t-tests share one scale,
    and NFaiRR ≤ 1 because every run's own documents are candidates.
  * ``exact``: the background alone, as the reference code (CPJKU) did; values above 1 are
    possible and reported as such. A query the background lacks has IFaiRR = 0.

  NFaiRR = FaiRR / IFaiRR; when IFaiRR = 0 (only one-sided candidates, or none) NFaiRR is
  undefined (NaN) and the query is left out of the mean.
- **TExFAIR@k** (Abolghasemi et al., ECIR 2024): TE_G = Σ_{r ≤ min(k,n)} (count_G(d_r)/|d_r|)·w_r;
  p(G) = TE_G / (TE_f + TE_m); TED = Σ_G |p(G) − ½|; RBDF = Σ_{r ≤ min(k,n)} 1[f+m > 0]·w_r ÷
  Σ_{r ≤ min(k,n)} w_r. Variant ``rbdf``: 1 − TED·RBDF (the paper's); ``plain``: 1 − TED.
  No word of the list in the top k → TED = 0 and TExFAIR = 1.

- **AWRF@k, rKL@k, rND@k, rRD@k**: :mod:`genderbias.ranking.exposure` (group alignment from the same
  representative counts, soft f/(f+m), m/(f+m); neutral documents excluded from the groups).

A document missing from ``counts`` (not in the collection) is treated as a document with no
gendered word and length 0: magnitude 0 for RaB, neutral (ω = 1) for NFaiRR — the reference
code's intent, though it crashed there — and no exposure for TExFAIR. Runs imported through
``pooling`` are validated against their collection, so this only happens in pure use.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import polars as pl

from genderbias.options import CUTOFFS_OPTION
from genderbias.ranking.defaults import (
    BACKGROUND_DEPTH,
    COLLECTION_BACKGROUND,
    DEFAULT_NORMALISER,
    DEFAULT_THRESHOLD,
    DEFAULT_TIES,
    NORMALISERS,
    TIE_DRAWS,
)
from genderbias.ranking.exposure import ExposureSettings, exposure_columns
from genderbias.ranking.rank_bias import rank_bias_of, rank_matrices
from genderbias.ranking.ties import (
    FILE,
    TIE_AWARE,
    Orders,
    extreme_values,
    group_matrix,
    group_means,
    order_run,
    over_tie_orders,
    tie_orders,
    tied_within,
)
from genderbias.ranking.vocabulary import BY_NAME, EXPOSURE, RAB_LIKE
from genderbias.text.magnitudes import magnitudes_frame

RANK_BIAS_VARIANTS = BY_NAME["RaB"].variants  # ("tf", "bool"), shared by every RaB-like metric
TEXFAIR_VARIANTS = BY_NAME["TExFAIR"].variants  # ("rbdf", "plain"); the first is the paper's


def validate_cutoffs(cutoffs: Sequence[int]) -> list[int]:
    """Sorted distinct cutoffs, or ``ValueError``: the cutoffs' one check
    (:data:`genderbias.options.CUTOFFS_OPTION`)."""
    return list(CUTOFFS_OPTION.check(cutoffs))


def discounts(depth: int) -> np.ndarray:
    """Position weights w_r = 1/log2(r + 1) for r = 1..depth (the DCG discount)."""
    return 1.0 / np.log2(np.arange(2, depth + 2, dtype=np.float64))


@dataclass(frozen=True)
class RankedCounts:
    """Counts of a run's top documents as ``[queries × depth]`` matrices (0 past rank n).

    Under ``tie-aware`` (:mod:`genderbias.ranking.ties`) ``groups`` numbers each query's tie groups and
    ``full`` holds the counts over ``width`` ≥ depth ranks: the members of a group that straddles
    the depth too, which the expectation averages over.
    """

    qids: list[str]
    n: np.ndarray  # documents per query within depth
    f: np.ndarray
    m: np.ndarray
    length: np.ndarray
    found: np.ndarray  # bool: the document has counts (is in the collection)
    ordered: pl.DataFrame | None = None  # qid, docid, rank, group (:func:`genderbias.ranking.ties.order_run`)
    groups: np.ndarray | None = None  # [queries × width] tie groups; None: ties are not averaged over
    full: dict | None = None  # f, m, length, found over the width
    n_full: np.ndarray | None = None

    @property
    def depth(self) -> int:
        return self.f.shape[1]

    @property
    def tie_aware(self) -> bool:
        return self.groups is not None

    def at(self, matrix: np.ndarray, cutoff: int) -> np.ndarray:
        """Column ``min(cutoff, depth)`` of a cumulative matrix, i.e. the value at rank min(k, n)."""
        return matrix[:, min(cutoff, self.depth) - 1]

    def spread(self, values: pl.DataFrame) -> np.ndarray:
        """``values`` (``docid, value``) at every rank of the full width (0 past n or unknown)."""
        _, matrices, _ = rank_matrices(self.ordered, values, self.width)
        return matrices["value"]

    @property
    def width(self) -> int:
        return self.groups.shape[1] if self.groups is not None else self.depth

    def per_rank(self, values: np.ndarray) -> np.ndarray:
        """Per-rank values over the width → ``[queries × depth]``: each the mean over its tie group
        (its expectation over the orders of ties) when tie-aware, else as ranked."""
        if self.groups is not None:
            values = group_means(values, self.groups)
        return values[:, : self.depth]

    def extremes(self, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per-rank values ``[queries × depth]`` of the orders of ties giving a linear measure with
        non-increasing rank coefficients its lowest and its highest value (:func:`genderbias.ranking.ties.extreme_values`)."""
        low, high = extreme_values(values, self.groups)
        return low[:, : self.depth], high[:, : self.depth]

    def tied(self, cutoff: int) -> np.ndarray:
        """Per query: whether its top k holds a document tied with another."""
        if self.groups is None:
            return np.zeros(len(self.qids), dtype=bool)
        return tied_within(self.groups, self.n_full, cutoff)

    def rearranged(self, rows: np.ndarray, columns: np.ndarray) -> RankedCounts:
        """The ``rows`` (repeated as often as given) with their top ranks filled from ``columns`` of the full width."""
        take = {name: self.full[name][rows[:, None], columns] for name in ("f", "m", "length", "found")}
        qids = np.asarray(self.qids, dtype=object)[rows].tolist()
        return RankedCounts(qids, self.n[rows], take["f"], take["m"], take["length"], take["found"])


def _renumber(run: pl.DataFrame, depth: int, ties: str = FILE) -> pl.DataFrame:
    """The documents ranked ≤ ``depth`` under ``ties`` (:func:`genderbias.ranking.ties.order_run`), numbered
    1, 2, … within each query; under ``tie-aware`` also the members of a group straddling ``depth``.

    Filtering first keeps the work proportional to queries × depth, not to the run's full
    length (runs are often 1,000 deep); renumbering closes gaps left by removed rows.
    """
    return order_run(run, ties, depth)


def _qid_index(qids: pl.Series) -> pl.DataFrame:
    return qids.to_frame("qid").with_row_index("row").with_columns(pl.col("row").cast(pl.Int64))


def _dense(rows: np.ndarray, cols: np.ndarray, values: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    matrix = np.zeros(shape, dtype=values.dtype if values.dtype == np.bool_ else np.float64)
    matrix[rows, cols] = values
    return matrix


def ranked_counts(run: pl.DataFrame, counts: pl.DataFrame, depth: int, ties: str = DEFAULT_TIES) -> RankedCounts:
    """Join the top ``depth`` documents of every query with their counts, as dense matrices,
    ordered by ``ties`` (:mod:`genderbias.ranking.ties`; ``tie-aware`` keeps the tie groups and the full width)."""
    values = counts.select("docid", "f", "m", "length").with_columns(pl.lit(True).alias("found"))
    ordered = _renumber(run, depth, ties)
    width = max(depth, int(ordered["rank"].max() or 0)) if ties == TIE_AWARE and len(ordered) else depth
    qids, matrices, n = rank_matrices(ordered, values, width)
    groups = group_matrix(ordered, qids, width) if ties == TIE_AWARE else None
    top = {name: matrix[:, :depth] for name, matrix in matrices.items()}
    return RankedCounts(
        qids,
        np.minimum(n, depth),
        top["f"],
        top["m"],
        top["length"],
        top["found"],
        ordered=ordered,
        groups=groups,
        full=matrices if groups is not None else None,
        n_full=n,
    )


def _tie_view(ranked: RankedCounts, run: pl.DataFrame, counts: pl.DataFrame) -> RankedCounts:
    """The tie-aware view of ``ranked``'s run (itself when it is one): for the tie counts and ranges."""
    return ranked if ranked.tie_aware else ranked_counts(run, counts, ranked.depth, TIE_AWARE)


def _with_ties(columns: dict, tied: RankedCounts, cutoffs: Sequence[int], linear: dict | None = None) -> dict:
    """``tied@k`` per cutoff and, for ``linear`` (``name → (low, high)``), the range columns ``name:low``, ``name:high``."""
    for k in cutoffs:
        columns[f"tied@{k}"] = tied.tied(k)
    for name, (low, high) in (linear or {}).items():
        columns[f"{name}:low"], columns[f"{name}:high"] = low, high
    return columns


# --- RaB / ARaB ------------------------------------------------------------------------


def rank_bias(
    run: pl.DataFrame, counts: pl.DataFrame, cutoffs: Sequence[int], variant: str, ties: str = DEFAULT_TIES
) -> pd.DataFrame:
    """RaB@t and ARaB@t per query with ``tf`` (ln(1+count)) or ``bool`` magnitudes, the run's
    ties ordered by ``ties``; with the range over orders of ties (``RaB@t:low`` …) and ``tied@t``.

    Magnitudes from :func:`genderbias.text.magnitudes.magnitudes_frame`, the arithmetic from
    :func:`genderbias.ranking.rank_bias.rank_bias_of` (one implementation of each definition).
    """
    cutoffs = validate_cutoffs(cutoffs)
    return _rank_bias(ranked_counts(run, counts, max(cutoffs), ties), run, counts, cutoffs, variant)


def _differences(counts: pl.DataFrame, variant: str) -> pl.DataFrame:
    magnitudes = magnitudes_frame(counts, variant)
    return magnitudes.select("docid", (pl.col("m") - pl.col("f")).cast(pl.Float64).alias("value"))


def _rank_bias(ranked: RankedCounts, run, counts, cutoffs, variant: str, tied: RankedCounts | None = None):
    differences = _differences(counts, variant)
    values = ranked.spread(differences)
    columns = rank_bias_of(ranked.per_rank(values), ranked.n, cutoffs)
    tied = tied or _tie_view(ranked, run, counts)
    low, high = tied.extremes(values if tied is ranked else tied.spread(differences))
    lowest, highest = rank_bias_of(low, tied.n, cutoffs), rank_bias_of(high, tied.n, cutoffs)
    linear = {name: (lowest[name], highest[name]) for name in columns if name != "n"}
    return pd.DataFrame(_with_ties(columns, tied, cutoffs, linear), index=pd.Index(ranked.qids, name="qid"))


# --- NFaiRR ----------------------------------------------------------------------------


def neutrality(f: np.ndarray, m: np.ndarray, threshold: float = DEFAULT_THRESHOLD) -> np.ndarray:
    """ω of documents with ``f`` female and ``m`` male word counts.

    1 when f + m ≤ τ (too few gendered words to lean either way), else
    1 − |f/(f+m) − ½| − |m/(f+m) − ½|: 1 for a balanced document, 0 for a one-sided one.
    """
    f = np.asarray(f, dtype=np.float64)
    m = np.asarray(m, dtype=np.float64)
    total = f + m
    with np.errstate(invalid="ignore", divide="ignore"):
        lean = np.abs(f / total - 0.5) + np.abs(m / total - 0.5)
    return np.where(total > threshold, 1.0 - lean, 1.0)


def _background_ideal(
    ranked: RankedCounts,
    compared: Sequence[pl.DataFrame],
    background: pl.DataFrame,
    counts: pl.DataFrame,
    threshold: float,
    ties: str,
) -> np.ndarray:
    """``[queries × depth]`` ω of the best reordering of the background ∪ the ``compared`` runs' top documents.

    Under ``tie-aware`` a compared run's top documents include every member of a tie group that
    straddles the depth (each is in the top under some order), so the candidates, and NFaiRR's
    denominator, are the same whatever the order of ties: NFaiRR stays linear, its expectation exact.
    """
    depth = ranked.depth
    qids = pl.Series("qid", ranked.qids, dtype=pl.String)
    candidates = [_renumber(frame, depth, ties).select("qid", "docid") for frame in compared]
    candidates.append(_renumber(background, BACKGROUND_DEPTH).select("qid", "docid"))
    pool = pl.concat(candidates).join(qids.to_frame(), on="qid", how="semi").unique(["qid", "docid"])
    pool = pool.join(counts.select("docid", "f", "m"), on="docid", how="left").with_columns(
        pl.col("f").fill_null(0), pl.col("m").fill_null(0)
    )
    omega = neutrality(pool["f"].to_numpy(), pool["m"].to_numpy(), threshold)
    pool = pool.with_columns(pl.Series("omega", omega))
    best = pool.with_columns(pl.col("omega").rank("ordinal", descending=True).over("qid").cast(pl.Int64).alias("rank"))
    best = best.filter(pl.col("rank") <= depth).join(_qid_index(qids), on="qid", how="left")
    return _dense(best["row"].to_numpy(), best["rank"].to_numpy() - 1, best["omega"].to_numpy(), (len(qids), depth))


def nfairr(
    run: pl.DataFrame,
    counts: pl.DataFrame,
    cutoffs: Sequence[int],
    *,
    threshold: float = DEFAULT_THRESHOLD,
    background: pl.DataFrame | None = None,
    comparison: Sequence[pl.DataFrame] = (),
    normaliser: str = DEFAULT_NORMALISER,
    ties: str = DEFAULT_TIES,
) -> pd.DataFrame:
    """FaiRR@k and NFaiRR@k per query (columns ``FaiRR@k``, ``NFaiRR@k``, and ``n``; the range over
    orders of ties ``NFaiRR@k:low`` … and ``tied@k``).

    ``counts`` are of the *representative* word list. ``background=None`` normalises by the
    collection (IFaiRR@k = Σ_{r ≤ k} w_r). With a background run, ``normaliser="comparison"``
    normalises by the best ordering of the background's documents plus those of every run in
    ``comparison`` (pass all runs being compared; ``run`` itself is always included, so
    NFaiRR ≤ 1), and ``"exact"`` by the background alone (the original definition).
    """
    cutoffs = validate_cutoffs(cutoffs)
    if normaliser not in NORMALISERS:
        raise ValueError(f"unknown NFaiRR normaliser {normaliser!r}; choose one of {', '.join(NORMALISERS)}")
    ranked = ranked_counts(run, counts, max(cutoffs), ties)
    return _nfairr(ranked, run, counts, cutoffs, threshold, background, comparison, normaliser, ties)


def _omega(ranked: RankedCounts, threshold: float) -> np.ndarray:
    """ω at every rank of the full width, 0 past the end of the list."""
    full = ranked.full if ranked.full is not None else {"f": ranked.f, "m": ranked.m}
    n = ranked.n_full if ranked.n_full is not None else ranked.n
    omega = neutrality(full["f"], full["m"], threshold)
    omega[np.arange(omega.shape[1])[None, :] >= n[:, None]] = 0.0
    return omega


def _nfairr(ranked, run, counts, cutoffs, threshold, background, comparison, normaliser, ties, tied=None):
    w = discounts(ranked.depth)
    fairr = np.cumsum(ranked.per_rank(_omega(ranked, threshold)) * w, axis=1)
    tied = tied or _tie_view(ranked, run, counts)
    low, high = (np.cumsum(values * w, axis=1) for values in tied.extremes(_omega(tied, threshold)))
    if background is None:
        ideal = np.broadcast_to(np.cumsum(w), fairr.shape)
    else:
        compared = [run, *comparison] if normaliser == "comparison" else []
        ideal = np.cumsum(_background_ideal(ranked, compared, background, counts, threshold, ties) * w, axis=1)
    columns, linear = {}, {}
    for k in cutoffs:
        columns[f"FaiRR@{k}"] = ranked.at(fairr, k)
        with np.errstate(invalid="ignore", divide="ignore"):
            # IFaiRR = 0 (a background run offering only one-sided documents): undefined, NaN,
            # so the query drops out of the model's mean and its query count.
            denominator = ranked.at(ideal, k)
            columns[f"NFaiRR@{k}"] = np.where(denominator > 0, ranked.at(fairr, k) / denominator, np.nan)
            linear[f"NFaiRR@{k}"] = tuple(
                np.where(denominator > 0, ranked.at(bound, k) / denominator, np.nan) for bound in (low, high)
            )
    columns["n"] = ranked.n
    return pd.DataFrame(_with_ties(columns, tied, cutoffs, linear), index=pd.Index(ranked.qids, name="qid"))


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
    return _over_orders(ranked, lambda r: _texfair_columns(r, cutoffs), _orders(ranked, seed))


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


def _orders(ranked: RankedCounts, seed: int) -> Orders | None:
    """The arrangements of the tied top documents a non-linear measure is averaged over (None: not tie-aware)."""
    if not ranked.tie_aware:
        return None
    full = ranked.full
    values = np.stack([full["f"], full["m"], full["length"], full["found"].astype(np.float64)], axis=-1)
    return tie_orders(values, ranked.groups, ranked.n_full, ranked.depth, draws=TIE_DRAWS, seed=seed)


def _over_orders(ranked: RankedCounts, compute, orders: Orders | None) -> pd.DataFrame:
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
    return _exposure(ranked, cutoffs, settings, _orders(ranked, seed))


def _exposure(ranked: RankedCounts, cutoffs, settings: ExposureSettings | None, orders: Orders | None) -> pd.DataFrame:
    settings = settings if settings is not None else ExposureSettings()
    return _over_orders(ranked, lambda r: exposure_columns(r.f, r.m, r.n, cutoffs, settings), orders)


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

    ``counts`` (the definitional list) feed RaB/ARaB; ``representative_counts`` feed NFaiRR,
    TExFAIR and the exposure metrics (AWRF, rKL, rND, rRD, under ``exposure``: default
    :class:`~genderbias.ranking.exposure.ExposureSettings` with this ``threshold``). NFaiRR's variant is
    :func:`nfairr_variant`; ``comparison`` and ``normaliser`` as in :func:`nfairr`. ``ties``
    orders the run's tied documents (:mod:`genderbias.ranking.ties`); ``low``/``high`` are the lowest and
    highest value over the orders of ties (exact for RaB, ARaB, NFaiRR; over the orders
    averaged for the others, and NaN for them unless tie-aware), ``tied`` whether the query's top k holds a tie.
    """
    cutoffs = validate_cutoffs(cutoffs)
    depth = max(cutoffs)
    ranked = ranked_counts(run, counts, depth, ties)
    tied = _tie_view(ranked, run, counts)
    parts = []
    for variant in RANK_BIAS_VARIANTS:
        table = _rank_bias(ranked, run, counts, cutoffs, variant, tied)
        for metric in RAB_LIKE:
            parts.append(_long(table, metric, variant, cutoffs, metric))
    representative = ranked_counts(run, representative_counts, depth, ties)
    representative_tied = _tie_view(representative, run, representative_counts)
    fair = _nfairr(
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
    orders = _orders(representative, seed)
    terms = _over_orders(representative, lambda r: _texfair_columns(r, cutoffs), orders)
    for variant in TEXFAIR_VARIANTS:  # columns TExFAIR@k (the paper's) and TExFAIR-plain@k
        prefix = "TExFAIR" if variant == TEXFAIR_VARIANTS[0] else f"TExFAIR-{variant}"
        parts.append(_long(terms, "TExFAIR", variant, cutoffs, prefix))
    settings = exposure if exposure is not None else ExposureSettings(threshold=threshold)
    groups = _exposure(representative, cutoffs, settings, orders)
    for metric in EXPOSURE:
        variant = settings.awrf_variant() if metric == "AWRF" else settings.rank_variant()
        parts.append(_long(groups, metric, variant, cutoffs, metric))
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


def nfairr_variant(background_name: str, normaliser: str = DEFAULT_NORMALISER) -> str:
    """NFaiRR's variant label: the background's name, ``:exact`` appended for the original normaliser.

    The collection background has one (fixed) normaliser, so it is always ``collection``.
    """
    if background_name == COLLECTION_BACKGROUND or normaliser == DEFAULT_NORMALISER:
        return background_name
    return f"{background_name}:{normaliser}"


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
