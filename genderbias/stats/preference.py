"""Paired-variant preference (Sundararaman & Subramanian, 2022).

Each document is ranked in a male, a female and a neutral version; per (query, document) case, which version
did the ranker score highest? A fair ranker prefers none systematically. Ties for the highest score and cases
lacking a version are counted and set aside; fractions are over the decided cases.

Versions are told apart by a docid suffix ``<document><separator><version>`` (``123-m``), or by a table of each
document's query, case and wording (:func:`known_versions`; Grep-BiasIR keeps its own docids,
:func:`genderbias.datasets.wording_variants`). :func:`variant_cases` gives the winner and ranks case by case.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import polars as pl

from genderbias.ranking.defaults import VARIANT_VERSIONS

__all__ = ["known_versions", "split_versions", "variant_cases", "variant_preference"]


@dataclass
class Preference:
    cases: int
    ties: int
    incomplete: int
    wins: dict[str, int] = field(default_factory=dict)

    @property
    def decided(self) -> int:
        return sum(self.wins.values())

    def fraction(self, version: str) -> float:
        return self.wins[version] / self.decided if self.decided else float("nan")


def split_versions(run: pl.DataFrame, separator: str = "-", versions: Sequence[str] = VARIANT_VERSIONS) -> pd.DataFrame:
    """``qid, item, version, score`` (and ``rank``, when the run has it) from a run whose docids end
    in ``<separator><version>``."""
    sep = re.escape(separator)
    pattern = rf"^(.*){sep}(.*?)$"
    parts = run.select(
        "qid",
        pl.col("docid").str.extract(pattern, 1).alias("item"),
        pl.col("docid").str.extract(pattern, 2).alias("version"),
        "score",
        *(["rank"] if "rank" in run.columns else []),
    )
    return parts.filter(pl.col("version").is_in(list(versions))).to_pandas()


def variant_preference(scores: pd.DataFrame, versions: Sequence[str] = VARIANT_VERSIONS) -> Preference:
    """Which version scores highest, per (qid, item) case of ``scores`` (``qid, item, version, score``)."""
    table = scores.pivot_table(index=["qid", "item"], columns="version", values="score", aggfunc="max")
    table = table.reindex(columns=list(versions))
    complete = table.notna().all(axis=1)
    values = table[complete].to_numpy(dtype=np.float64)
    best = values.max(axis=1, keepdims=True) if len(values) else np.zeros((0, 1))
    at_best = values == best
    single = at_best.sum(axis=1) == 1
    wins = {v: int((at_best[:, i] & single).sum()) for i, v in enumerate(versions)}
    return Preference(cases=len(table), ties=int((~single).sum()), incomplete=int((~complete).sum()), wins=wins)


def known_versions(
    run: pl.DataFrame, variants: Mapping[str, tuple[str, str, str]], versions: Sequence[str] = VARIANT_VERSIONS
) -> pd.DataFrame:
    """``qid, item, version, score, rank`` of the documents of ``run`` that ``variants`` knows
    (docid -> ``(query, item, wording)``), each under the query it belongs to: a query's cases are
    its own documents. A document of the query without one of ``versions`` (a wording the data set
    does not give) keeps its case, incomplete."""
    table = pl.DataFrame(
        {
            "docid": list(variants),
            "owner": [v[0] for v in variants.values()],
            "item": [v[1] for v in variants.values()],
            "version": [v[2] for v in variants.values()],
        },
        schema={"docid": pl.String, "owner": pl.String, "item": pl.String, "version": pl.String},
    )
    joined = run.with_columns(pl.col("docid").cast(pl.String), pl.col("qid").cast(pl.String)).join(
        table, on="docid", how="inner"
    )
    mine = joined.filter(pl.col("qid") == pl.col("owner"))
    return mine.select("qid", "item", "version", "score", "rank").to_pandas()


def variant_cases(scores: pd.DataFrame, versions: Sequence[str] = VARIANT_VERSIONS) -> pd.DataFrame:
    """One row per (qid, item) case: ``winner`` (the single highest-scored version, ``tie`` when two
    or more share the highest score, ``incomplete`` when a version is missing) and each version's
    rank (``rank_<version>``, NaN when the run lacks it)."""
    values = scores.pivot_table(index=["qid", "item"], columns="version", values="score", aggfunc="max")
    values = values.reindex(columns=list(versions))
    ranks = scores.pivot_table(index=["qid", "item"], columns="version", values="rank", aggfunc="min")
    ranks = ranks.reindex(index=values.index, columns=list(versions))
    array = values.to_numpy(dtype=np.float64)
    complete = ~np.isnan(array).any(axis=1)
    best = np.where(complete, np.nanmax(np.where(np.isnan(array), -np.inf, array), axis=1), np.nan)
    at_best = array == best[:, None]
    winner = np.where(
        ~complete,
        "incomplete",
        np.where(at_best.sum(axis=1) == 1, np.array(list(versions))[at_best.argmax(axis=1)], "tie"),
    )
    frame = pd.DataFrame({"winner": winner}, index=values.index)
    for version in versions:
        frame[f"rank_{version}"] = ranks[version].to_numpy()
    return frame.reset_index()
