"""Retrieval effectiveness of a run against relevance judgments, per query, computed by ir_measures (trec_eval's
code), by three rules (docs/metrics.md, "Effectiveness beside bias"): the ranking evaluated is ours (the score
handed over is ``-rank``); a judged query the run did not return counts 0 (:func:`unreturned_queries`); a query
without judgments has a NaN row, out of the mean. So a run's mean over the judged
queries equals ``ir_measures.calc_aggregate``'s. Pure; its libraries are imported inside the functions.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from genderbias.errors import MeasureError
from genderbias.ranking.defaults import CUTOFF_RULE, OptionError
from genderbias.ranking.vocabulary import EFFECTIVENESS, MEASURE_ALIASES

if TYPE_CHECKING:
    import pandas as pd
    import polars as pl

__all__ = ["DEFAULT_MEASURES", "effectiveness", "measures_depth", "parse_measures", "unreturned_queries"]

#: The measures a report adds when given qrels but no ``--measures``.
DEFAULT_MEASURES: tuple[str, ...] = ("RR@10", "nDCG@10", "R@10", "P@10")

#: A name, ``@`` and the cutoff as written (read by the cutoff's declaration, not here: ``\d`` takes ``١٠``).
_MEASURE = re.compile(r"^\s*([A-Za-z]+)\s*@\s*(\S+?)\s*$")

COLUMNS = ["qid", "metric", "cutoff", "value"]


def parse_measure(text: str) -> tuple[str, int]:
    """``"nDCG@10"`` → ``("nDCG", 10)``; ``MRR@10`` is ``RR@10``. ValueError naming the supported measures for
    anything else; a bad cutoff (:data:`genderbias.ranking.defaults.CUTOFF_RULE`) is a
    :class:`~genderbias.errors.MeasureError`, before any job asks ir_measures for ``P@99999999999999999999``."""
    match = _MEASURE.match(text) if isinstance(text, str) else None
    name = match and MEASURE_ALIASES.get(match[1], match[1])
    if not match or name not in EFFECTIVENESS:
        raise ValueError(
            f"unknown measure {str(text).strip()!r}: give NAME@k with NAME one of "
            f"{', '.join(EFFECTIVENESS)} (or MRR) and k ≥ 1, e.g. RR@10,nDCG@10"
        )
    try:
        return name, CUTOFF_RULE.parse(match[2])
    except OptionError as exc:
        raise MeasureError(text.strip(), "cutoff", exc.problem) from None


def parse_measures(measures: str | Iterable[str]) -> tuple[str, ...]:
    """Comma-separated (or listed) measures, canonical (``RR@10``), without repeats, in order."""
    parts = measures.split(",") if isinstance(measures, str) else list(measures)
    names = [f"{name}@{cutoff}" for name, cutoff in (parse_measure(p) for p in parts if p.strip())]
    return tuple(dict.fromkeys(names))


def measures_depth(measures: Sequence[str]) -> int:
    """The deepest cutoff of ``measures``: how much of each ranking they read."""
    return max(parse_measure(m)[1] for m in measures)


def _polars(frame) -> pl.DataFrame:
    import polars as pl

    return frame if isinstance(frame, pl.DataFrame) else pl.from_pandas(frame)


def unreturned_queries(run, qrels, qids: Sequence[str] | None = None) -> list[str]:
    """The judged queries (of ``qids``, default every query ``qrels`` judges) that ``run`` does not
    return, in ``qids`` order: each counts as 0 in the run's effectiveness."""
    import polars as pl

    run, qrels = _polars(run), _polars(qrels)
    judged = qrels.select(pl.col("qid").cast(pl.String)).unique(maintain_order=True)["qid"].to_list()
    returned = set(run.select(pl.col("qid").cast(pl.String))["qid"].to_list())
    judged_set = set(judged)
    asked = judged if qids is None else [str(q) for q in qids]
    return [qid for qid in asked if qid in judged_set and qid not in returned]


def effectiveness(run, qrels, measures: Sequence[str], qids: Sequence[str] | None = None) -> pd.DataFrame:
    """Long frame ``qid, metric, cutoff, value`` (``metric``: the ir_measures name) of each measure of ``run``
    (``qid, docid, rank``) against ``qrels`` (``qid, docid, rel``), one row per query of ``qids`` (default: the
    run's) and measure, by the module docstring's rules; judgments of queries not asked cannot enter a mean.
    """
    import ir_measures
    import pandas as pd
    import polars as pl

    measures = parse_measures(measures)
    run, qrels = _polars(run), _polars(qrels)
    if qids is None:
        qids = run.select(pl.col("qid").cast(pl.String)).unique(maintain_order=True)["qid"].to_list()
    else:
        qids = list(dict.fromkeys(str(q) for q in qids))
        asked = pl.Series("qid", qids, dtype=pl.String).to_frame()
        qrels = qrels.with_columns(pl.col("qid").cast(pl.String)).join(asked, on="qid", how="semi")
    depth = measures_depth(measures)
    ranked = run.filter(pl.col("rank") <= depth)
    run_input = pd.DataFrame(
        {
            "query_id": ranked["qid"].cast(pl.String).to_list(),
            "doc_id": ranked["docid"].cast(pl.String).to_list(),
            "score": (-ranked["rank"].cast(pl.Float64)).to_list(),  # our rank, not trec_eval's re-sort
        }
    )
    qrels_input = pd.DataFrame(
        {
            "query_id": qrels["qid"].cast(pl.String).to_list(),
            "doc_id": qrels["docid"].cast(pl.String).to_list(),
            "relevance": qrels["rel"].cast(pl.Int64).to_list(),
        }
    )
    parsed = {str(ir_measures.parse_measure(m)): parse_measure(m) for m in measures}
    values: dict[tuple[str, str], float] = {}
    if len(qrels_input):  # ir_measures yields every judged query, 0 where the run has none
        for result in ir_measures.iter_calc([ir_measures.parse_measure(m) for m in measures], qrels_input, run_input):
            values[(str(result.query_id), str(result.measure))] = float(result.value)
    rows = [
        (qid, name, cutoff, values.get((qid, key), float("nan")))
        for key, (name, cutoff) in parsed.items()
        for qid in qids
    ]
    frame = pd.DataFrame(rows, columns=COLUMNS)
    frame["cutoff"] = frame["cutoff"].astype("int64")
    frame["value"] = frame["value"].astype("float64")
    return frame
