"""Label sensitivity: would the ranking of the models change had the non-gendered set been built otherwise?

The SIGIR 2020 pipeline kept the majority label and dropped the queries without one. Here every *aggregation*
(majority vote, Dawid-Skene, Wawa) × *policy for disputed queries* (``drop``, ``aggregation``, ``adjudicated``,
``confident`` at ``threshold``; each defined in docs/metrics.md, "Label sensitivity: how labelling choices move
the results") builds a non-gendered set (the queries whose chosen label is ``n``), summarised as a bias report
does.

The per-query values do not depend on the set (NFaiRR's normaliser depends on the background and runs
only), so they are computed once and only subset here: majority/drop equals ``bias_report`` on the export.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from genderbias.crowd.aggregation import dawid_skene, majority_vote, wawa
from genderbias.ranking.defaults import (
    AGGREGATIONS,
    CONFIDENCE_THRESHOLD,
    DEFAULT_SAMPLES,
    DEFAULT_SEED,
    DISPUTED_POLICIES,
)
from genderbias.stats import significance

__all__ = [
    "BASELINE", "CSV_COLUMNS", "LabelSensitivity", "aggregated_labels", "non_gendered_sets", "ranking_changes",
    "sensitivity_table",
]  # fmt: skip

BASELINE = ("majority", "drop")
NON_GENDERED = "n"
CSV_COLUMNS = [
    "aggregation",
    "disputed",
    "run",
    "metric",
    "variant",
    "cutoff",
    "value",
    "ci_low",
    "ci_high",
    "n_queries",
]


@dataclass
class LabelSensitivity:
    """What the label-sensitivity service found (here so that the service and :mod:`metrics.formatting`
    both import it from below): the table, the ranking changes and each set's size."""

    batch: str
    runs: list[str]
    cutoffs: list[int]
    threshold: float
    table: pd.DataFrame
    rankings: pd.DataFrame
    set_sizes: dict[tuple[str, str], int]
    nfairr_normalisation: str
    #: :func:`.label_dependence.dependence_table`, when dependences were asked for.
    dependence: pd.DataFrame | None = None
    baseline: str | None = None


def aggregated_labels(
    judgments: pd.DataFrame,
    *,
    min_votes: int = 2,
    gold_judgments: pd.DataFrame | None = None,
    gold: Mapping[str, str] | None = None,
) -> dict[str, pd.DataFrame]:
    """Per aggregation, one row per judged item: ``label`` (None if none) and ``confidence``; majority's also
    ``disputed``. ``gold_judgments`` (answers to the ``gold`` questions) seed Dawid-Skene only."""
    votes = majority_vote(judgments)
    disputed = votes["disputed"].astype(bool) | (votes["votes"] < min_votes)
    majority = pd.DataFrame(
        {
            "label": votes["label"].where(~disputed, None).astype(object),
            "confidence": votes["top_votes"] / votes["votes"],
            "disputed": disputed,
        }
    )
    seeded = judgments if gold_judgments is None or gold_judgments.empty else pd.concat([judgments, gold_judgments])
    ds = dawid_skene(seeded, gold=gold).label_table().reindex(majority.index)
    weighted = wawa(judgments).reindex(majority.index)
    return {
        "majority": majority,
        "dawid-skene": pd.DataFrame({"label": ds["label"].astype(object), "confidence": ds["posterior"]}),
        "wawa": pd.DataFrame({"label": weighted["label"].astype(object), "confidence": weighted["confidence"]}),
    }


def non_gendered_sets(
    labels: Mapping[str, pd.DataFrame],
    *,
    adjudicated: Mapping[str, str] | None = None,
    threshold: float = CONFIDENCE_THRESHOLD,
) -> dict[tuple[str, str], list[str]]:
    """The non-gendered qids of every (aggregation, policy), from :func:`aggregated_labels`."""
    if not 0 <= threshold <= 1:
        raise ValueError(f"the confidence threshold must be between 0 and 1, got {threshold}")
    adjudicated = adjudicated or {}
    disputed = labels["majority"]["disputed"].astype(bool)
    sets = {}
    for aggregation in AGGREGATIONS:
        table = labels[aggregation]
        is_n = (table["label"] == NON_GENDERED).fillna(False).astype(bool)
        adjudicated_n = pd.Series(
            [adjudicated.get(str(q)) == NON_GENDERED for q in table.index], index=table.index, dtype=bool
        )
        chosen = {
            "drop": is_n & ~disputed,
            "aggregation": is_n,
            "adjudicated": (is_n & ~disputed) | (adjudicated_n & disputed),
            "confident": is_n & (table["confidence"].fillna(0.0) >= threshold),
        }
        for policy in DISPUTED_POLICIES:
            sets[(aggregation, policy)] = sorted(str(q) for q in table.index[chosen[policy].to_numpy()])
    return sets


def sensitivity_table(
    per_query: pd.DataFrame,
    sets: Mapping[tuple[str, str], Sequence[str]],
    *,
    samples: int = DEFAULT_SAMPLES,
    seed: int = DEFAULT_SEED,
) -> pd.DataFrame:
    """:data:`CSV_COLUMNS` rows: each set's rows of ``per_query`` (a bias report's long frame over every
    candidate query) summarised as a report would (no rows for a run the set has no queries of)."""
    parts = []
    for (aggregation, policy), qids in sets.items():
        subset = per_query[per_query["qid"].isin(set(qids))]
        if subset.empty:
            continue
        summary = significance.summarise(subset, samples=samples, seed=seed)
        summary = summary.rename(columns={"queries": "n_queries"})
        summary.insert(0, "disputed", policy)
        summary.insert(0, "aggregation", aggregation)
        parts.append(summary[CSV_COLUMNS])
    if not parts:
        return pd.DataFrame(columns=CSV_COLUMNS)
    return pd.concat(parts, ignore_index=True)


def ranking_changes(table: pd.DataFrame) -> pd.DataFrame:
    """Per (aggregation, disputed, metric, variant, cutoff): Kendall's τ-b of the runs' ranking against
    majority/drop (NaN with fewer than two runs or all ties) and the pairs that swap (``"a<b → b<a"``)."""
    from scipy import stats

    keys = ["metric", "variant", "cutoff"]
    base = table[(table["aggregation"] == BASELINE[0]) & (table["disputed"] == BASELINE[1])]
    base_values = {key: group.set_index("run")["value"] for key, group in base.groupby(keys, sort=False)}
    rows = []
    for (aggregation, policy, *key), group in table.groupby(["aggregation", "disputed", *keys], sort=False):
        reference = base_values.get(tuple(key))
        values = group.set_index("run")["value"]
        common = [] if reference is None else [r for r in reference.index if r in values.index]
        common = [r for r in common if np.isfinite(reference[r]) and np.isfinite(values[r])]
        tau = np.nan
        swapped = []
        if len(common) >= 2:
            a = reference[common].to_numpy(dtype=float)
            b = values[common].to_numpy(dtype=float)
            if len(set(np.round(a, 12))) > 1 and len(set(np.round(b, 12))) > 1:
                tau = float(stats.kendalltau(a, b).statistic)
            for i, j in itertools.combinations(range(len(common)), 2):
                before = np.sign(np.round(a[i] - a[j], 12))
                after = np.sign(np.round(b[i] - b[j], 12))
                if before * after < 0:
                    low, high = (common[i], common[j]) if before < 0 else (common[j], common[i])
                    swapped.append(f"{low}<{high} → {high}<{low}")
        rows.append(
            {
                "aggregation": aggregation,
                "disputed": policy,
                "metric": key[0],
                "variant": key[1],
                "cutoff": int(key[2]),
                "runs": len(common),
                "kendall_tau": tau,
                "swapped": "; ".join(swapped),
            }
        )
    return pd.DataFrame(
        rows, columns=["aggregation", "disputed", "metric", "variant", "cutoff", "runs", "kendall_tau", "swapped"]
    )
