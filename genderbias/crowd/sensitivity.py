"""Label sensitivity: how the choices made in labelling the queries move the bias results.

The SIGIR 2020 pipeline kept the majority label and dropped the queries without one. This
module asks whether the ranking of the models by RaB/ARaB, NFaiRR or TExFAIR would change
had the non-gendered set been built otherwise: for each *aggregation* (majority vote,
Dawid-Skene, Wawa) × each *policy for disputed queries*, it builds the non-gendered query
set, takes the runs' per-query values on it, and summarises them as a bias report does
(mean, percentile bootstrap 95% CI, query count; :func:`genderbias.stats.significance.summarise`).

Definitions (pure pandas/numpy; no Django):

- **Disputed** queries are those without a strict majority of at least ``min_votes`` votes,
  exactly the ones the export sets aside; the same set for every aggregation.
- Policies: ``drop`` — disputed queries are left out, the others take the aggregation's
  label; ``aggregation`` — disputed queries take the aggregation's label too (majority vote
  has none for them, so for it this equals ``drop``); ``adjudicated`` — disputed queries take
  a researcher's adjudicated label where one exists, else are left out; ``confident`` — every
  query whose aggregation label has a confidence of at least ``threshold`` (vote share,
  Dawid-Skene posterior, Wawa weight share; see :mod:`genderbias.crowd.aggregation`).
- A query is in the set when the label so chosen is ``n`` (non-gendered).

Invariant: the per-query values do not depend on the query set (RaB, ARaB and TExFAIR are
per query; NFaiRR's normaliser depends on the background and the compared runs only), so
they are computed once over every candidate query and only *subset* here. The
majority/drop row therefore equals ``bias_report`` on the exported non-gendered set.

Ranking changes: per (aggregation, policy, metric, variant, cutoff) the runs are ranked by
their value and compared with majority/drop by Kendall's τ-b (``scipy.stats.kendalltau``);
``swapped`` lists the pairs of runs whose order is reversed.
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

BASELINE = ("majority", "drop")
DEFAULT_THRESHOLD = CONFIDENCE_THRESHOLD
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
    """What :func:`metrics.services.label_sensitivity` found: the table (:func:`sensitivity_table`),
    the ranking changes (:func:`ranking_changes`), and the non-gendered set's size per
    (aggregation, disputed policy).

    A plain result type, here beside the computation so that :mod:`metrics.formatting`
    (which writes it out) and the service (which fills it) both import it from below.
    """

    batch: str
    runs: list[str]
    cutoffs: list[int]
    threshold: float
    table: pd.DataFrame
    rankings: pd.DataFrame
    set_sizes: dict[tuple[str, str], int]
    nfairr_normalisation: str
    #: The sensitivity check for ranking-dependent labelling errors
    #: (:func:`genderbias.crowd.label_dependence.dependence_table`), when dependences were asked for.
    dependence: pd.DataFrame | None = None
    baseline: str | None = None


def aggregated_labels(
    judgments: pd.DataFrame,
    *,
    min_votes: int = 2,
    gold_judgments: pd.DataFrame | None = None,
    gold: Mapping[str, str] | None = None,
) -> dict[str, pd.DataFrame]:
    """Per aggregation, one row per judged item: ``label`` (None if it has none) and ``confidence``.

    The majority table also has ``disputed`` (tie or fewer than ``min_votes`` votes).
    ``gold_judgments`` (answers to gold questions, items named as in ``gold``) seed
    Dawid-Skene with their known labels; they are not part of any returned table.
    """
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
    threshold: float = DEFAULT_THRESHOLD,
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
    """Rows ``aggregation, disputed, run, metric, variant, cutoff, value, ci_low, ci_high, n_queries``.

    ``per_query`` is the long frame of a bias report (``run, qid, metric, variant, cutoff,
    value``) over every candidate query; each set's rows are summarised as a report would.
    A configuration whose set has none of a run's queries has no rows for that run.
    """
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
    """Per (aggregation, disputed, metric, variant, cutoff): Kendall's τ of the runs' ranking
    against majority/drop and the pairs of runs that swap (``"a<b → b<a"`` style, by value).

    Columns ``aggregation, disputed, metric, variant, cutoff, runs, kendall_tau, swapped``;
    τ is NaN when fewer than two runs have values in both or a ranking is all ties.
    """
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
