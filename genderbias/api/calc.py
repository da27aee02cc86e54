"""``calc_aggregate`` and ``iter_calc`` of the bias measures, as ir_measures computes effectiveness.

Each figure is computed by the platform's own function: the report's one pipeline
(:func:`genderbias.ranking.measures.figures`), a run's mean over the queries with a value, the range over orders
of ties by :func:`genderbias.ranking.ties.tie_summary`, CRBO by :func:`genderbias.ranking.rbo.crbo`. Figures are
:class:`Figure` floats (tie-aware: the expectation over orders of ties) with ``.low`` and ``.high``, the range an
order of the run's ties gives (NaN where not computed: TExFAIR and the exposure measures unless tie-aware, CRBO).
``preset``: a paper's computation (:func:`with_preset`); ``missing``: :class:`genderbias.api.inputs.Texts`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from typing import Any, NamedTuple

import pandas as pd
from ir_measures import Metric as IrMetric

from genderbias.api.inputs import Texts, load_run, load_texts
from genderbias.api.notation import MEASURES, BiasMeasure, parse_measure
from genderbias.presets import PRESETS
from genderbias.ranking.defaults import EXPOSURE_RULES, SEED_RULE
from genderbias.ranking.exposure import ExposureSettings
from genderbias.ranking.measures import figures
from genderbias.ranking.rbo import crbo
from genderbias.ranking.ties import tie_summary

__all__ = ["Figure", "Metric", "calc_aggregate", "iter_calc", "measures_for", "per_query"]

NAN = float("nan")


class Figure(float):
    """A measure's figure (a float: the tie-aware expectation by default) with its range over the
    orders of tied documents, ``low`` and ``high``."""

    low: float
    high: float

    def __new__(cls, value: float, low: float = NAN, high: float = NAN) -> Figure:
        figure = super().__new__(cls, value)
        figure.low, figure.high = float(low), float(high)
        return figure

    @property
    def value(self) -> float:
        return float(self)

    def __repr__(self) -> str:
        return f"Figure({float(self)!r}, low={self.low!r}, high={self.high!r})"


class Metric(NamedTuple):
    """One query's figure of one measure: ir_measures' ``Metric(query_id, measure, value)``."""

    query_id: str
    measure: BiasMeasure
    value: Figure


def measures_for(
    texts: Any,
    *,
    counterfactual: Any = None,
    measures: Iterable[str] | None = None,
    missing: str = "error",
    preset: str | None = None,
) -> list:
    """The library's measures (strings such as ``"ARaB@10"``; default: the prototypes) bound to ``texts`` and CRBO to
    a ``counterfactual`` run, for ir_measures' ``calc_aggregate`` and PyTerrier."""
    source = load_texts(texts, missing)
    chosen = [parse_measure(m) for m in measures] if measures is not None else list(MEASURES.values())
    chosen = with_preset(chosen, preset)
    return [_bound(type(measure))(texts=source, counterfactual=counterfactual, **measure.params) for measure in chosen]


def with_preset(measures: Iterable[str | BiasMeasure], preset: str | None) -> list[BiasMeasure]:
    """``measures`` parsed, with what ``preset`` (:data:`genderbias.presets.PRESETS`) sets of each one's parameters
    (``sigir2020``: the whitespace tokenizer and the run's own order of ties, a run file's order being the
    platform's import order). A measure writing a parameter the preset sets otherwise is refused, and so is a
    preset normalising NFaiRR by a background run (the platform's report computes it)."""
    parsed = [parse_measure(m) for m in measures]
    if preset is None:
        return parsed
    if preset not in PRESETS:
        raise ValueError(f"unknown preset {preset!r}; choose one of {', '.join(PRESETS)}")
    chosen = PRESETS[preset]
    if chosen.needs_background:
        raise ValueError(
            f"preset {preset!r} ({chosen.paper}) normalises NFaiRR by a background run, which the library "
            f"does not take: the platform's report computes it (bias_report --preset {preset} --background RUN)"
        )
    out = []
    for measure in parsed:
        sets = {name: value for name, value in chosen.settings.items() if name in measure.RULES}
        for name, value in sets.items():
            if name in measure.params and measure.params[name] != value:
                raise ValueError(
                    f"{measure}: it gives {name}={measure.params[name]!r} and preset {preset!r} sets {name}={value!r}; "
                    f"leave {name} out of the measure or the preset"
                )
        out.append(measure(**sets))
    return out


class _Bound:
    """A measure bound to what it reads: ir_measures' runtime provider computes it (``runtime_impl``)."""

    def runtime_impl(self, qrels, run):
        yield from runtime_values(self, qrels, run)


_BOUND: dict[type, type] = {}


def _bound(kind: type) -> type:
    """``kind`` bound (one class per measure, so ``ARaB(bound='low')@10`` of a bound ``ARaB`` stays bound)."""
    if kind not in _BOUND:
        _BOUND[kind] = type(kind.__name__, (_Bound, kind), {})
    return _BOUND[kind]


def per_query(
    measures: Iterable[str | BiasMeasure],
    run: Any,
    texts: Any = None,
    *,
    counterfactual: Any = None,
    wordlist=None,
    representative=None,
    missing: str = "error",
    preset: str | None = None,
):
    """Long pandas frame ``measure, qid, value, low, high, tied`` (``measure`` as written, with what
    ``preset`` sets; queries in the run's order): what :func:`iter_calc` and :func:`calc_aggregate` read."""
    measures = with_preset(measures, preset)
    for measure in measures:
        measure.cutoff  # noqa: B018 - refuses a measure without a cutoff before any work
    frame = load_run(run)
    groups: dict[tuple, list[BiasMeasure]] = {}
    for measure in measures:
        groups.setdefault(_group(measure), []).append(measure)
    parts = []
    for key, members in groups.items():
        if key[0] == "CRBO":
            parts += [
                _crbo(m, frame, counterfactual if counterfactual is not None else m.counterfactual) for m in members
            ]
            continue
        source = texts if texts is not None else members[0].texts
        if source is None:
            raise ValueError(f"{members[0]} reads the documents' texts: give texts (a file, dict, frame or docstore)")
        parts += _bias(members, frame, load_texts(source, missing), wordlist, representative)
    columns = ["measure", "qid", "value", "low", "high", "tied"]
    return pd.concat(parts, ignore_index=True)[columns] if parts else pd.DataFrame(columns=columns)


def _group(measure: BiasMeasure) -> tuple:
    """Measures computed by one :func:`figures` call: the same order of ties, tokenizer, τ, seed and
    exposure settings (a measure without one of them takes its default)."""
    if measure.NAME == "CRBO":
        return ("CRBO",)

    def setting(name, rule):
        return measure[name] if name in measure.RULES else rule.default

    exposure = tuple(setting(name, rule) for name, rule in EXPOSURE_RULES.items() if name != "threshold")
    threshold, seed = setting("threshold", EXPOSURE_RULES["threshold"]), setting("seed", SEED_RULE)
    return ("bias", measure["ties"], measure["tokenizer"], threshold, exposure, seed)


def _bias(members: list[BiasMeasure], run, texts: Texts, wordlist, representative) -> list:
    """The library's one pipeline's per-query figures (:func:`genderbias.ranking.measures.figures`) of the
    measures computed together (:func:`_group`), each measure's rows picked out of them."""
    _, ties, tokenizer, threshold, exposure, seed = _group(members[0])
    settings = ExposureSettings(
        **dict(zip([n for n in EXPOSURE_RULES if n != "threshold"], exposure, strict=True)), threshold=threshold
    )
    table = figures(
        {"": run}, texts.counts, sorted({m.cutoff for m in members}), wordlist=wordlist,
        representative=representative, tokenizer=tokenizer, threshold=threshold, exposure=settings, ties=ties,
        seed=seed,
    )  # fmt: skip
    parts = []
    for measure in members:
        rows = table[(table["metric"] == measure.NAME) & (table["cutoff"] == measure.cutoff)]
        for name in ("magnitude", "variant"):
            if name in measure.RULES:
                rows = rows[rows["variant"] == measure[name]]
        parts.append(_rows(measure, rows))
    return parts


def _rows(measure: BiasMeasure, rows):
    """``measure, qid, value, low, high, tied`` of ``figures``' ``rows``, ``bound`` applied; the range is the value
    where the query's top holds no tie."""
    rows = rows[["qid", "value", "low", "high", "tied"]].reset_index(drop=True).copy()
    untied = ~rows["tied"].astype(bool)
    for column in ("low", "high"):
        rows.loc[untied & rows[column].isna(), column] = rows["value"]
    bound = measure["bound"]
    if bound != "value":  # the bound is the figure, and a range of its own it has not
        rows["value"] = rows[bound]
        rows["low"] = rows["high"] = rows[bound]
    rows.insert(0, "measure", str(measure))
    return rows


def _crbo(measure: BiasMeasure, run, counterfactual):
    if counterfactual is None:
        raise ValueError(
            f"{measure} compares the run with the same ranker's run on the counterfactual collection (gendered "
            "words swapped): give it as counterfactual= (texts alone cannot give a ranker's second run)"
        )
    _, _, values = crbo(
        run, load_run(counterfactual), p=measure["p"], depth=measure.cutoff, ties=measure["ties"], seed=measure["seed"]
    )
    return pd.DataFrame(
        {"measure": str(measure), "qid": values.index.astype(str), "value": values.to_numpy(), "low": NAN, "high": NAN}
    ).assign(tied=False)


def iter_calc(
    measures: Iterable[str | BiasMeasure], run: Any, texts: Any = None, *, preset: str | None = None, **inputs: Any
) -> Iterator[Metric]:
    """Every query's figure of every measure: ``Metric(query_id, measure, Figure)``."""
    measures = {str(m): m for m in with_preset(measures, preset)}
    table = per_query(measures.values(), run, texts, **inputs)
    for name, qid, value, low, high in table[["measure", "qid", "value", "low", "high"]].itertuples(index=False):
        yield Metric(qid, measures[name], Figure(value, low, high))


def calc_aggregate(
    measures: Iterable[str | BiasMeasure], run: Any, texts: Any = None, *, preset: str | None = None, **inputs: Any
) -> dict:
    """``{measure: Figure}``: each measure's mean over the run's queries with a value, as the platform's report.
    ``preset``: :func:`with_preset` (the keys are the measures with what it set). ``inputs``: ``counterfactual``
    (CRBO's second run), ``wordlist`` (RaB/ARaB's), ``representative`` (the others'), ``missing`` (:class:`Texts`).
    """
    measures = {str(m): m for m in with_preset(measures, preset)}
    table = per_query(measures.values(), run, texts, **inputs)
    long = table.rename(columns={"measure": "run"}).assign(metric="", variant="", cutoff=0)
    ranges, _ = tie_summary(long)
    ranges = ranges.set_index("run")
    result = {}
    for name, measure in measures.items():
        part = table[table["measure"] == name]
        value = float(part["value"].mean()) if len(part) else NAN
        low, high = (ranges.loc[name, "tie_low"], ranges.loc[name, "tie_high"]) if name in ranges.index else (NAN, NAN)
        if math.isnan(low) and part["low"].notna().all():  # no order of ties moves the mean
            low = high = value
        result[measure] = Figure(value, low, high)
    return result


def runtime_values(measure: BiasMeasure, qrels, run) -> Iterator:
    """ir_measures' runtime provider's call (``runtime_impl`` of a bound measure): the figures of ``run``
    (pandas ``query_id, doc_id, score``) for the queries the qrels judge, as ir_measures' Metrics."""
    judged = set(qrels["query_id"].astype(str))
    frame = run[run["query_id"].astype(str).isin(judged)].rename(columns={"query_id": "qid", "doc_id": "docno"})
    if not len(frame):
        return
    for metric in iter_calc([measure], frame[["qid", "docno", "score"]], measure.texts):
        yield IrMetric(metric.query_id, measure, float(metric.value))
