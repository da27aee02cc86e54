"""NFaiRR (Rekabsaz, Kopeinik & Schedl, SIGIR 2021): the neutrality of a ranking, per query; defined, with why
``comparison`` is the default normaliser, in docs/metrics.md, "Definitions". Pure.

ω = 1 when f + m ≤ τ, else 1 − Σ_g |M_g/(f+m) − ½|; FaiRR@k = Σ_{r ≤ min(k,n)} ω(d_r)·w_r; NFaiRR = FaiRR / IFaiRR,
NaN when IFaiRR = 0. IFaiRR@k is Σ_{r ≤ k} w_r against the collection, else the best reordering of the
background's top :data:`BACKGROUND_DEPTH` and (``comparison``) every compared run's top documents, or (``exact``)
the background alone. A document missing from the counts is neutral. NFaiRR is linear in the per-rank ω, so its
expectation over the orders of ties is exact.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import polars as pl

from genderbias.ranking.defaults import (
    BACKGROUND_DEPTH,
    COLLECTION_BACKGROUND,
    DEFAULT_NORMALISER,
    DEFAULT_THRESHOLD,
    DEFAULT_TIES,
    NORMALISERS,
)
from genderbias.ranking.ranked_counts import (
    RankedCounts,
    dense,
    discounts,
    qid_index,
    ranked_counts,
    tie_view,
    validate_cutoffs,
    with_ties,
)
from genderbias.ranking.ties import FILE, order_run

__all__ = ["neutrality", "nfairr", "nfairr_columns", "nfairr_variant"]


def neutrality(f: np.ndarray, m: np.ndarray, threshold: float = DEFAULT_THRESHOLD) -> np.ndarray:
    """ω of documents with ``f`` female and ``m`` male words: 1 when f + m ≤ τ (too few to lean), else
    1 − |f/(f+m) − ½| − |m/(f+m) − ½| (1 balanced, 0 one-sided)."""
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
    """``[queries × depth]`` ω of the best reordering of the background ∪ the ``compared`` runs' top documents;
    tie-aware, every member of a tie group straddling the depth is a candidate, so NFaiRR's denominator does not
    depend on the order of ties and NFaiRR stays linear."""
    depth = ranked.depth
    qids = pl.Series("qid", ranked.qids, dtype=pl.String)
    candidates = [order_run(frame, ties, depth).select("qid", "docid") for frame in compared]
    candidates.append(order_run(background, FILE, BACKGROUND_DEPTH).select("qid", "docid"))
    pool = pl.concat(candidates).join(qids.to_frame(), on="qid", how="semi").unique(["qid", "docid"])
    pool = pool.join(counts.select("docid", "f", "m"), on="docid", how="left").with_columns(
        pl.col("f").fill_null(0), pl.col("m").fill_null(0)
    )
    omega = neutrality(pool["f"].to_numpy(), pool["m"].to_numpy(), threshold)
    pool = pool.with_columns(pl.Series("omega", omega))
    best = pool.with_columns(pl.col("omega").rank("ordinal", descending=True).over("qid").cast(pl.Int64).alias("rank"))
    best = best.filter(pl.col("rank") <= depth).join(qid_index(qids), on="qid", how="left")
    return dense(best["row"].to_numpy(), best["rank"].to_numpy() - 1, best["omega"].to_numpy(), (len(qids), depth))


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
    """FaiRR@k and NFaiRR@k per query (and ``n``, the range over orders of ties ``NFaiRR@k:low`` …, ``tied@k``)
    from the *representative* ``counts``; ``background``, ``comparison`` (pass every run compared; ``run`` is
    always included) and ``normaliser``: module docstring."""
    cutoffs = validate_cutoffs(cutoffs)
    if normaliser not in NORMALISERS:
        raise ValueError(f"unknown NFaiRR normaliser {normaliser!r}; choose one of {', '.join(NORMALISERS)}")
    ranked = ranked_counts(run, counts, max(cutoffs), ties)
    return nfairr_columns(ranked, run, counts, cutoffs, threshold, background, comparison, normaliser, ties)


def _omega(ranked: RankedCounts, threshold: float) -> np.ndarray:
    """ω at every rank of the full width, 0 past the end of the list."""
    full = ranked.full if ranked.full is not None else {"f": ranked.f, "m": ranked.m}
    n = ranked.n_full if ranked.n_full is not None else ranked.n
    omega = neutrality(full["f"], full["m"], threshold)
    omega[np.arange(omega.shape[1])[None, :] >= n[:, None]] = 0.0
    return omega


def nfairr_columns(ranked, run, counts, cutoffs, threshold, background, comparison, normaliser, ties, tied=None):
    w = discounts(ranked.depth)
    fairr = np.cumsum(ranked.per_rank(_omega(ranked, threshold)) * w, axis=1)
    tied = tied or tie_view(ranked, run, counts)
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
    return pd.DataFrame(with_ties(columns, tied, cutoffs, linear), index=pd.Index(ranked.qids, name="qid"))


def nfairr_variant(background_name: str, normaliser: str = DEFAULT_NORMALISER) -> str:
    """NFaiRR's variant label: the background's name, ``:exact`` appended for the original normaliser (the
    collection has one normaliser, so it is always ``collection``)."""
    if background_name == COLLECTION_BACKGROUND or normaliser == DEFAULT_NORMALISER:
        return background_name
    return f"{background_name}:{normaliser}"
