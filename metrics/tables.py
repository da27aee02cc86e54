"""The papers' tables (:data:`LAYOUTS`): effectiveness and bias side by side at one cutoff, with significance marks
against a chosen baseline run and, per run, per-query correlations between two metrics.

Pure (no Django): computed from a report's per-query frame, so a notebook lays out the same table. Columns, marks
and correlations: docs/metrics.md, "The papers' tables". ``*`` uses the project's one significance policy
(:mod:`genderbias.stats.significance`), so a cell's p is the report's p for that comparison.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from core.figure_notes import SIGN_WARNING, FigureNotes, figure_notes, p_value_text
from genderbias.numbers import DIGITS
from genderbias.ranking.defaults import TABLE_LAYOUTS
from genderbias.ranking.vocabulary import (
    BY_NAME,
    EXPOSURE,
    MEASURE_ALIASES,
    form_statement,
    variant_form,
    variant_position,
)
from genderbias.stats.correlation import correlation
from genderbias.stats.significance import (
    CORRELATION_POLICY,
    against_baseline,
    finite,
    holm,
    policy,
    run_mean,
    wide_values,
)
from metrics.formatting import TEXT_WIDTH, wrap

ALPHA = 0.05  # the policy's (genderbias.stats.significance.ALPHA)
#: How the papers name a run's mean of a per-query measure.
MEAN_NAMES = {"RR": "MRR", "R": "Recall", "AP": "MAP"}
KEYS = ["metric", "variant", "cutoff"]


@dataclass(frozen=True)
class Spec:
    """A column wanted by a layout: ``variant`` None takes the report's (first) variant; ``cutoff`` None the table's
    (an effectiveness measure the report lacks there: its first cutoff)."""

    metric: str
    variant: str | None = None
    cutoff: int | None = None
    label: str | None = None  #: shown instead of the metric's name (``MRR`` for RR)


@dataclass(frozen=True)
class Layout:
    name: str
    title: str
    #: Columns as a function of the table's cutoff and the report's cutoffs.
    columns: object
    correlations: tuple[tuple[Spec, Spec], ...] = ()


def _ecir2024(cutoff: int, cutoffs: Sequence[int]) -> list[Spec]:
    return [Spec("RR", label="MRR"), Spec("nDCG"), Spec("NFaiRR", cutoff=cutoff), Spec("TExFAIR", "rbdf", cutoff)]


def _sigir2020(cutoff: int, cutoffs: Sequence[int]) -> list[Spec]:
    bias = [Spec(metric, variant, c) for variant in ("tf", "bool") for metric in ("RaB", "ARaB") for c in cutoffs]
    return [Spec("RR", label="MRR"), Spec("R", label="Recall"), *bias]


def _exposure(cutoff: int, cutoffs: Sequence[int]) -> list[Spec]:
    fair = [Spec(metric, cutoff=cutoff) for metric in ("NFaiRR", "AWRF", "rKL", "rND", "rRD")]
    return [Spec("nDCG"), fair[0], Spec("TExFAIR", "rbdf", cutoff), *fair[1:]]


LAYOUTS: dict[str, Layout] = {
    "ecir2024": Layout(
        "ecir2024",
        "Effectiveness and fairness (Abolghasemi et al., ECIR 2024)",
        _ecir2024,
        ((Spec("TExFAIR", "rbdf"), Spec("NFaiRR")),),
    ),
    "sigir2020": Layout(
        "sigir2020", "Effectiveness and rank bias (Rekabsaz & Schedl, SIGIR 2020, Table 3)", _sigir2020
    ),
    "exposure": Layout(
        "exposure",
        "Term-based and exposure-based fairness (AWRF: Sapiezynski et al. 2019; rKL, rND, rRD: Yang & Stoyanovich 2017)",
        _exposure,
        ((Spec("AWRF"), Spec("NFaiRR")),),
    ),
}


assert tuple(LAYOUTS) == TABLE_LAYOUTS


def parse_spec(text: str) -> Spec:
    """``NAME[:variant][@k]`` (``TExFAIR:rbdf@10``, ``NFaiRR``, ``MRR@10``) → :class:`Spec`; ValueError."""
    body, _, cutoff = text.strip().partition("@")
    metric, _, variant = body.partition(":")
    metric = MEASURE_ALIASES.get(metric.strip(), metric.strip())
    if metric not in BY_NAME or (cutoff and not DIGITS.fullmatch(cutoff.strip())):  # ASCII: "²".isdigit()
        raise ValueError(f"bad metric {text.strip()!r}: give NAME[:variant][@k], NAME one of {', '.join(BY_NAME)}")
    return Spec(metric, variant.strip() or None, int(cutoff) if cutoff.strip() else None)


def parse_pair(text: str) -> tuple[Spec, Spec]:
    """``"TExFAIR@10,NFaiRR@10"`` → the two metrics to correlate; ValueError."""
    parts = [part for part in text.split(",") if part.strip()]
    if len(parts) != 2:
        raise ValueError(f"give two metrics to correlate, e.g. TExFAIR,NFaiRR (got {text.strip()!r})")
    return parse_spec(parts[0]), parse_spec(parts[1])


def default_cutoff(cutoffs: Sequence[int]) -> int:
    """10, the papers' cutoff, when the report has it; else its largest."""
    return 10 if 10 in cutoffs else max(cutoffs)


def _resolve(spec: Spec, available: Sequence[tuple[str, str, int]], cutoff: int) -> tuple[str, str, int] | None:
    """The report's (metric, variant, cutoff) for ``spec``, or None."""
    keys = [k for k in available if k[0] == spec.metric and (spec.variant is None or k[1] == spec.variant)]
    if not keys:
        return None
    variants = sorted(dict.fromkeys(k[1] for k in keys), key=variant_position)
    keys = [k for k in keys if k[1] == variants[0]]
    wanted = spec.cutoff if spec.cutoff is not None else cutoff
    exact = [k for k in keys if k[2] == wanted]
    if exact:
        return exact[0]
    if spec.cutoff is None and BY_NAME[spec.metric].effectiveness:
        return sorted(keys, key=lambda k: k[2])[0]
    return None


def label(key: tuple[str, str, int], spec: Spec | None = None) -> str:
    """``MRR@10``, ``TExFAIR@10`` (the paper's variant), ``RaB[bool]@5``, ``NFaiRR@10``."""
    metric, variant, cutoff = key
    name = spec.label if spec and spec.label else MEAN_NAMES.get(metric, metric)
    metadata = BY_NAME.get(metric)
    shown_variant = metadata is not None and metadata.variants and variant != metadata.variants[0]
    return f"{name}[{variant}]@{cutoff}" if shown_variant or metric in ("RaB", "ARaB") else f"{name}@{cutoff}"


def build_table(
    per_query: pd.DataFrame,
    layout: str,
    *,
    cutoff: int | None = None,
    baseline: str | None = None,
    summary: pd.DataFrame | None = None,
    correlations: Sequence[tuple[Spec, Spec]] | None = None,
    alpha: float = ALPHA,
) -> dict:
    """The ``layout`` table of a report's per-query frame, as JSON-ready data: ``columns``; per run (in the frame's
    order) its ``cells`` (``value``: mean over the run's queries; CI from ``summary`` when given; ``p_value``
    adjusted, ``p_raw``, ``mark``; the figure's tie notes) and ``correlations``; ``significance``: the policy stated.
    ``correlations`` replaces the layout's pairs. ValueError for an unknown layout, a cutoff the report lacks or a
    baseline not among the runs.
    """
    if layout not in LAYOUTS:
        raise ValueError(f"unknown layout {layout!r}; choose one of {', '.join(LAYOUTS)}")
    chosen = LAYOUTS[layout]
    frame = per_query.astype({"cutoff": "int64"})
    keys = frame[["metric", "variant", "cutoff"]].drop_duplicates()  # vectorised: a report has ~10⁶ rows
    available = list(zip(keys["metric"].tolist(), keys["variant"].tolist(), keys["cutoff"].tolist(), strict=True))
    bias_cutoffs = sorted({k[2] for k in available if k[0] in BY_NAME and not BY_NAME[k[0]].effectiveness})
    if cutoff is None:
        cutoff = default_cutoff(bias_cutoffs or [k[2] for k in available] or [10])
    elif bias_cutoffs and cutoff not in bias_cutoffs:
        raise ValueError(f"the report has no cutoff {cutoff}; it has {', '.join(map(str, bias_cutoffs))}")
    runs = frame["run"].drop_duplicates().tolist()
    if baseline is not None and baseline not in runs:
        raise ValueError(f"baseline {baseline!r} is not a run of the report ({', '.join(runs)})")

    columns, missing = [], []
    for spec in chosen.columns(cutoff, bias_cutoffs):
        key = _resolve(spec, available, cutoff)
        if key is None:
            missing.append(spec.label or spec.metric if spec.cutoff is None else f"{spec.metric}@{spec.cutoff}")
        elif key not in [c["key_tuple"] for c in columns]:
            columns.append({"key_tuple": key, "label": label(key, spec)})

    wide = wide_values(frame)
    cis, notes = {}, {}
    if summary is not None and len(summary):
        for row in summary.itertuples(index=False):
            cis[(row.run, row.metric, row.variant, int(row.cutoff))] = (row.ci_low, row.ci_high)
            notes[(row.run, row.metric, row.variant, int(row.cutoff))] = figure_notes(row)
    compared = against_baseline(wide, baseline) if baseline is not None else {}

    rows = []
    for run in runs:
        cells = []
        for column in columns:
            key = column["key_tuple"]
            values = wide[run][key] if key in wide[run].columns else pd.Series(dtype="float64")
            low, high = cis.get((run, *key), (None, None))
            p_raw, p = compared.get((run, *key), (None, None))
            said = notes.get((run, *key), FigureNotes())
            cells.append(
                {
                    "value": run_mean(values),
                    "queries": int(values.notna().sum()),
                    "ci_low": finite(low),
                    "ci_high": finite(high),
                    "p_value": p,
                    "p_raw": p_raw,
                    "mark": "*" if p is not None and p < alpha else "",
                    "tie_low": said.tie_low,
                    "tie_high": said.tie_high,
                    "sign_undecided": said.sign_undecided,
                }
            )
        rows.append({"run": run, "cells": cells, "correlations": []})
    shown = {(run, *column["key_tuple"]) for run in runs for column in columns}
    tests = sum(1 for key, (p, _) in compared.items() if key in shown and p is not None)

    pairs = []
    for spec_a, spec_b in chosen.correlations if correlations is None else correlations:
        key_a, key_b = _resolve(spec_a, available, cutoff), _resolve(spec_b, available, cutoff)
        if key_a is None or key_b is None:
            missing.append(f"correlation {spec_a.metric}–{spec_b.metric}")
            continue
        pairs.append({"a": label(key_a, spec_a), "b": label(key_b, spec_b), "keys": (key_a, key_b)})
    found: dict[tuple[int, str], list[dict]] = {}  # (pair, statistic) → that family's results, one per run
    for row in rows:
        table = wide[row["run"]]
        for number, pair in enumerate(pairs):
            key_a, key_b = pair["keys"]
            if key_a in table.columns and key_b in table.columns:
                result = correlation(table[key_a], table[key_b])
            else:
                result = correlation(pd.Series(dtype="float64"), pd.Series(dtype="float64"))
            result = {"a": pair["a"], "b": pair["b"], **result}
            row["correlations"].append(result)
            for kind in ("pearson", "kendall"):
                found.setdefault((number, kind), []).append(result)
    correlation_tests = 0
    for (_, kind), family in found.items():
        adjusted = holm([result[f"{kind}_p"] for result in family])
        correlation_tests += sum(p is not None for p in adjusted)
        for result, p in zip(family, adjusted, strict=True):
            result[f"{kind}_p_corrected"] = p
            result[f"{kind}_mark"] = "†" if p is not None and p < alpha else ""

    for column in columns:
        metric, variant, k = column.pop("key_tuple")
        column.update(key=f"{metric}:{variant}@{k}", metric=metric, variant=variant, cutoff=int(k))
    return {
        "definitions": definitions(columns),
        "layout": chosen.name,
        "title": chosen.title,
        "cutoff": int(cutoff),
        "baseline": baseline,
        "alpha": alpha,
        "significance": policy(baseline),
        "correlation_significance": dict(CORRELATION_POLICY) if pairs else None,
        "tests": tests,
        "correlation_tests": correlation_tests,
        "columns": columns,
        "correlations": [{"a": pair["a"], "b": pair["b"]} for pair in pairs],
        "rows": rows,
        "missing": missing,
    }


def definitions(columns: Sequence[dict]) -> list[str]:
    """How the table's exposure metrics are defined and differ from the papers cited, a note per form computed."""
    forms: dict[str, list[str]] = {}
    for column in columns:
        if column["metric"] in EXPOSURE:
            forms.setdefault(variant_form(column["variant"]), []).append(column["metric"])
    return [form_statement(form, metrics) for form, metrics in forms.items()]


def table_text(table: dict, width: int = TEXT_WIDTH) -> str:
    """The table as plain text (``bias_report --table``): values with their marks (``!``: the range over the orders
    of ties holds 0), then the correlations per run; in blocks of as many columns as fit ``width``."""
    headers = [column["label"] for column in table["columns"]]
    for pair in table["correlations"]:
        headers += [f"r({pair['a']},{pair['b']})", f"τ({pair['a']},{pair['b']})"]
    run_width = max([12, *(len(row["run"]) for row in table["rows"])]) + 2
    widths = [max(10, len(h) + 2) for h in headers]
    cells_of, ps_of = {}, {}
    for row in table["rows"]:
        cells = [
            number_text(cell["value"]) + (((cell["mark"] or "") + ("!" if cell.get("sign_undecided") else "")) or " ")
            for cell in row["cells"]
        ]
        for result in row["correlations"]:
            cells.append(number_text(result["pearson_r"], "+.3f") + (result["pearson_mark"] or " "))
            cells.append(number_text(result["kendall_tau"], "+.3f") + (result["kendall_mark"] or " "))
        cells_of[row["run"]] = cells
        if any(cell["p_value"] is not None for cell in row["cells"]):
            ps = [
                ("" if cell["p_value"] is None else "p " + p_value_text(cell["p_value"])) + " " for cell in row["cells"]
            ]
            ps_of[row["run"]] = ps + [""] * (len(headers) - len(ps))
    widths = [max(w, *(len(cells[i]) + 1 for cells in cells_of.values())) for i, w in enumerate(widths)]
    blocks: list[list[int]] = [[]]
    for i, w in enumerate(widths):
        if blocks[-1] and run_width + sum(widths[j] for j in blocks[-1]) + w > width:
            blocks.append([])
        blocks[-1].append(i)
    lines = [f"{table['title']}; cutoff {table['cutoff']}"]
    for number, block in enumerate(blocks):
        if number:
            lines.append("")
        lines.append(f"{'run':<{run_width}}" + "".join(f"{headers[i]:>{widths[i]}}" for i in block))
        lines.append("-" * len(lines[-1]))
        for row in table["rows"]:
            run = row["run"]
            lines.append(f"{run:<{run_width}}" + "".join(f"{cells_of[run][i]:>{widths[i]}}" for i in block))
            if run in ps_of:
                lines.append(f"{'':<{run_width}}" + "".join(f"{ps_of[run][i]:>{widths[i]}}" for i in block))
    notes = []
    if table["baseline"]:
        notes.append(significance_note(table["significance"]))
    if any(cell.get("sign_undecided") for row in table["rows"] for cell in row["cells"]):
        notes.append(f"! the range over the orders of tied documents holds 0: {SIGN_WARNING}")
    if table["correlations"]:
        policy = table["correlation_significance"]
        notes.append(
            f"† correlation with p < {policy['alpha']}: {policy['test']}; family: {policy['family']}; "
            f"{policy['correction']}-adjusted. r: Pearson, τ: Kendall"
        )
    notes += table.get("definitions", [])
    if table["missing"]:
        notes.append(f"not in this report: {', '.join(table['missing'])}")
    return "\n".join([*lines, *(wrap(note, width) for note in notes)])


def significance_note(policy: dict) -> str:
    """A table's footnote on its p-values (``policy``: :func:`genderbias.stats.significance.policy`)."""
    return (
        f"* p < {policy['alpha']} against {policy['baseline']}. Test: {policy['test']}; "
        f"family: {policy['family']}; correction: {policy['correction']} (p shown adjusted)"
    )


def number_text(value: float | None, spec: str = ".4f", missing: str = "–") -> str:
    """A table's figure as every table, text or LaTeX, shows it (``.4f`` values, ``+.3f`` correlations)."""
    return missing if value is None else format(value, spec)
