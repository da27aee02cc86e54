"""Files an exported gender query set is published as: TSV, CSV, JSON Lines and a Markdown dataset card.

Every writer is atomic. The CSV, meant for spreadsheets, neutralises formulas (query text comes from a
public search log); TSV (for rankers) and JSON Lines (for programs) keep the text unchanged.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, is_dataclass
from decimal import Decimal
from pathlib import Path
from typing import IO, Any

from core.spreadsheet import write_csv
from genderbias.files.atomic import atomic_write
from genderbias.files.queryfiles import single_line, write_queries
from genderbias.labels import ALL_CATEGORIES, CATEGORY_SLUGS, LABEL_NAMES, LABELS
from genderbias.ranking.defaults import LEVEL_PERCENT

#: Agreement facts a dataset card shows, in order, with their headings.
AGREEMENT_FACTS = (
    ("method", "Aggregation method"),
    ("krippendorff_alpha", "Krippendorff's alpha (nominal)"),
    ("alpha_ci", f"{LEVEL_PERCENT} bootstrap interval"),
    ("bootstrap_resamples", "Bootstrap resamples behind the interval"),
    ("percent_agreement", "Percent agreement"),
    ("fleiss_kappa", "Fleiss' kappa"),
)


def _label(value: Any) -> str:
    """A label letter from a letter or a category slug; anything else is an error, not a silent blank."""
    label = str(value)
    label = CATEGORY_SLUGS.get(label, label)
    if label not in LABELS:
        raise ValueError(f"unknown label {value!r}; expected one of {', '.join(LABELS)}")
    return label


def write_tsv(rows: Iterable[Mapping[str, Any]], path: str | os.PathLike) -> Path:
    """``qid<TAB>query`` per line, no header (the TREC/MS MARCO query-file format), the text verbatim
    but for tabs and line breaks: rankers must see the queries as the crowd saw them."""
    write_queries(((row["qid"], row["query"]) for row in rows), path)
    return Path(path)


def write_labelled_csv(rows: Iterable[Mapping[str, Any]], path: str | os.PathLike, extra: Sequence[str] = ()) -> Path:
    """``qid,query,label`` (then the ``extra`` columns) with a header, quoted where needed (unlike the
    published reference file); extra values as ``true``/``false``, numbers, or empty for None."""

    def write(handle: IO[str]) -> None:
        header = ["qid", "query", "label", *extra]
        write_csv(
            handle,
            header,
            ([str(r["qid"]), str(r["query"]), _label(r["label"]), *(r.get(column) for column in extra)] for r in rows),
        )

    return atomic_write(path, write, newline="")


def _jsonable(value: Any) -> Any:
    """Plain JSON values: Decimal and numpy numbers to numbers, dates to ISO text, NaN to null."""
    if value is None or isinstance(value, (str, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Decimal):
        return str(value) if value.is_finite() else None
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if is_dataclass(value) and not isinstance(value, type):
        return _jsonable(asdict(value))
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_jsonable(v) for v in value]
    item = getattr(value, "item", None)  # numpy scalars
    if callable(item):
        return _jsonable(item())
    tolist = getattr(value, "tolist", None)  # numpy arrays
    if callable(tolist):
        return _jsonable(tolist())
    return str(value)


def write_jsonl(rows: Iterable[Mapping[str, Any]], path: str | os.PathLike) -> Path:
    """One JSON object per line with every key of the row (Decimal as exact strings, NaN as ``null``)."""

    def write(handle: IO[str]) -> None:
        for row in rows:
            handle.write(json.dumps(_jsonable(dict(row)), ensure_ascii=False, allow_nan=False))
            handle.write("\n")

    return atomic_write(path, write, newline="")


def _cell(value: Any) -> str:
    """A value fit for a Markdown table cell: no pipes or line breaks, numbers rounded for reading."""
    if value is None:
        text = "–"
    elif isinstance(value, float):
        text = "–" if not math.isfinite(value) else f"{value:.3f}"
    elif isinstance(value, Decimal):
        text = f"{value}"
    elif isinstance(value, (list, tuple)):
        text = ", ".join(_cell(v) for v in value)
    else:
        text = str(value)
    return single_line(text).replace("|", "\\|")


def _table(pairs: Iterable[tuple[Any, Any]], headers: tuple[str, str] = ("", "")) -> list[str]:
    lines = [f"| {headers[0]} | {headers[1]} |", "| --- | --- |"]
    lines += [f"| {_cell(key)} | {_cell(value)} |" for key, value in pairs]
    return lines


def _items(value: Any) -> list[tuple[Any, Any]]:
    if is_dataclass(value) and not isinstance(value, type):
        value = asdict(value)
    if isinstance(value, Mapping):
        return list(value.items())
    return [("value", value)]


def dataset_card(facts: Mapping[str, Any]) -> str:
    """Render a Markdown dataset card from a plain dict of facts (the keys it knows: ``known`` below);
    any other key is listed under "Other facts": passing more than the card knows loses nothing."""
    known = {"title", "description", "counts", "per_category_alpha", "batch", "dates", "cost", "files", "citation"}
    known |= {"label sources", "machine labels"}
    known |= {key for key, _ in AGREEMENT_FACTS}
    lines = [f"# {single_line(facts.get('title') or 'Gender-annotated query set')}", ""]
    if facts.get("description"):
        lines += [str(facts["description"]).strip(), ""]

    counts = facts.get("counts")
    if counts is not None:
        counts = {CATEGORY_SLUGS.get(str(k), str(k)): v for k, v in dict(counts).items()}
        total = sum(int(v) for v in counts.values())
        lines += ["## Queries per category", "", "| Category | Label | Queries | Share |", "| --- | --- | --- | --- |"]
        ordered = [label for label in LABELS if label in counts] + [k for k in counts if k not in LABELS]
        for label in ordered:
            n = int(counts[label])
            share = f"{100 * n / total:.1f}%" if total else "–"
            lines.append(f"| {_cell(LABEL_NAMES.get(label, label))} | {_cell(label)} | {n} | {share} |")
        lines += [f"| **Total** | | {total} | |", ""]

    agreement = [(heading, facts[key]) for key, heading in AGREEMENT_FACTS if key in facts]
    if agreement:
        lines += ["## Agreement", "", *_table(agreement, ("Measure", "Value")), ""]
    if facts.get("per_category_alpha"):
        per_category = [
            (LABEL_NAMES.get(str(label), str(label)), value)
            for label, value in dict(facts["per_category_alpha"]).items()
        ]
        lines += ["Alpha of each category against the rest:", "", *_table(per_category, ("Category", "Alpha")), ""]

    sections = (
        ("label sources", "Label sources", ("Source", "Queries")),
        ("machine labels", "Machine labels", ("Fact", "Value")),
        ("batch", "Batch settings", ("Setting", "Value")),
        ("dates", "Dates", ("Event", "Date")),
        ("cost", "Cost (USD)", ("Item", "Amount")),
    )
    for key, heading, headers in sections:
        if facts.get(key) is not None:
            lines += [f"## {heading}", "", *_table(_items(facts[key]), headers), ""]

    if facts.get("files"):
        lines += ["## Files", "", *[f"- `{single_line(name)}`" for name in facts["files"]], ""]

    other = [(k, v) for k, v in facts.items() if k not in known]
    if other:
        lines += ["## Other facts", "", *_table(other, ("Fact", "Value")), ""]
    if facts.get("citation"):
        lines += ["## Citation", "", "```", str(facts["citation"]).strip(), "```", ""]
    return "\n".join(lines).rstrip("\n") + "\n"


def write_dataset_card(card: str, path: str | os.PathLike) -> Path:
    return atomic_write(path, lambda handle: handle.write(card), newline="")


@dataclass(frozen=True)
class ExportFormat:
    """One file format an export is written in: declared once for the form, the API, the command and downloads."""

    name: str  #: the value on the command line, in the API and in ``Export.format``
    description: str  #: what a person choosing it reads
    content_type: str  #: served with this type
    extra: tuple[str, ...] = ()  #: columns after qid, query, label (CSV)

    def holds(self, column: str) -> bool:
        """Whether this format's file carries ``column`` of :func:`export_rows` (a card claims only that)."""
        if self.name == "tsv":
            return column in ("qid", "query")
        if self.name == "csv":
            return column in ("qid", "query", "label", *self.extra)
        return True  # JSON lines: every key of the row

    def write(self, rows: Iterable[Mapping[str, Any]], path: str | os.PathLike) -> Path:
        if self.name == "tsv":
            return write_tsv(rows, path)
        if self.name == "csv":
            return write_labelled_csv(rows, path, extra=self.extra)
        return write_jsonl(rows, path)


EXPORT_FORMATS: dict[str, ExportFormat] = {
    f.name: f
    for f in (
        ExportFormat("tsv", "TSV (qid, query)", "text/tab-separated-values"),
        ExportFormat(
            "csv",
            "CSV (qid, query, label)",
            "text/csv",
            extra=("adjudicated", "ds_posterior", "label_source", "machine_confidence"),
        ),
        ExportFormat("jsonl", "JSON lines (with every vote)", "application/x-ndjson"),
    )
}
DEFAULT_EXPORT_FORMAT = "tsv"


def format_for_path(path: str) -> str:
    """The export format a file name asks for by its ending (``.csv``, ``.jsonl``); TSV otherwise."""
    ending = path.rsplit(".", 1)[-1].lower() if "." in path else ""
    return ending if ending in EXPORT_FORMATS else DEFAULT_EXPORT_FORMAT


#: The ``method`` column of each label source (``annotation.results.selectors``).
METHOD_OF_SOURCE = {"crowd majority": "majority", "adjudicated": "adjudication", "machine-accepted": "machine"}


def export_rows(results: Iterable[Mapping[str, Any]], category: str) -> list[dict[str, Any]]:
    """The rows an export of ``category`` writes from ``query_results``: its labelled queries only."""
    wanted = set(LABELS) if category == ALL_CATEGORIES else {CATEGORY_SLUGS[category]}
    return [
        {
            "qid": r["qid"],
            "query": r["query"],
            "label": r["label"],
            "method": METHOD_OF_SOURCE.get(r.get("label_source"), "majority"),
            "adjudicated": r["adjudicated"],
            "label_source": r.get("label_source") or ("adjudicated" if r["adjudicated"] else "crowd majority"),
            "machine_confidence": r.get("machine_confidence"),
            "machine": r.get("machine"),  # the machine's label and confidence, accepted or not
            "votes": r["votes"],  # every human answer, with its hand signals
            "agreement": r["agreement"],
            "dawid_skene": r["dawid_skene"],
            "ds_posterior": (r["ds_posteriors"] or {}).get(r["label"]),
        }
        for r in results
        if r["label"] is not None and r["label"] in wanted
    ]


def cost_facts(batch: Mapping[str, Any]) -> Any:
    """The card's "Cost (USD)": what the batch spent (if given) beside the estimate recorded at its
    creation (for a machine-first batch, what the crowd alone would have cost)."""
    cost = batch.get("cost")
    if batch.get("spent") is None:
        return cost
    facts = {"spent (fees and bonuses included)": batch["spent"]}
    if isinstance(cost, Mapping) and cost.get("total") is not None:
        if batch.get("machine_first"):
            facts["the crowd alone for all queries (never spent)"] = cost["total"]
        else:
            facts["estimated at creation (the most it could cost)"] = cost["total"]
    return facts


def card_facts(
    *,
    batch: Mapping[str, Any],
    category: str,
    rows: Sequence[Mapping[str, Any]],
    results: Sequence[Mapping[str, Any]],
    report: Mapping[str, Any],
    min_votes: int,
    file_name: str,
    exported: dt.date,
    citation: str,
    machine: Mapping[str, Any] | None = None,
    file_format: str | None = None,
) -> dict[str, Any]:
    """The facts a dataset card states about an export of ``rows`` of ``results`` (``machine``:
    :func:`machine_facts` of a machine-first batch); ``file_format`` (default: from ``file_name``)
    decides what the card says is in the file."""
    labelled = [r for r in results if r["label"] is not None]
    progress = report["progress"]
    held = EXPORT_FORMATS[file_format or format_for_path(file_name)]
    in_file = "marked adjudicated in the file" if held.holds("adjudicated") else "the file holds qids and queries only"
    every = category == ALL_CATEGORIES
    facts = {
        "title": f"{batch['name']}: {'all labelled' if every else LABEL_NAMES[CATEGORY_SLUGS[category]]} queries",
        "description": (
            f"Queries of batch {batch['name']!r} labelled by {batch['annotators']} as "
            "Non-gendered, Female, Male or Other or multiple genders, aggregated by majority vote "
            f"(strict plurality of at least {min_votes} votes). Disputed queries and queries with "
            "too few votes are set aside. This file holds "
            f"{len(rows)} {'labelled' if every else category} queries."
        ),
        "counts": {label: sum(r["label"] == label for r in labelled) for label in LABELS},
        "method": "majority vote (ties set aside)",
        "adjudicated labels": (
            f"{sum(r['adjudicated'] for r in labelled)} of {len(labelled)} labelled queries were settled by a "
            f"researcher (rule: a researcher's adjudication replaces the majority vote; {in_file})"
        ),
        **{key: report[key] for key, _ in AGREEMENT_FACTS if key != "method"},
        "per_category_alpha": report["per_category_alpha"],
        "batch": {
            "name": batch["name"],
            "source": batch["source"],
            "provider": batch["provider"],
            "assignments per query": batch["assignments_per_query"],
            "queries per HIT": batch["queries_per_hit"],
            "reward (USD)": batch["reward"],
            "gold questions per HIT": batch["gold_per_hit"],
            "qualifications": ", ".join(f"{k}={v}" for k, v in sorted(batch["qualifications"].items())) or "none",
        },
        "dates": {
            "created": batch["created"].isoformat(),
            "published": batch["published"].isoformat() if batch["published"] else None,
            "exported": exported.isoformat(),
        },
        "cost": cost_facts(batch),
        "files": [file_name],
        "queries in batch": len(results),
        "exported queries": len(rows),
        "set aside (disputed or too few votes)": len(results) - len(labelled),
        "workers (pseudonymous)": report["workers"],
        "usable judgments": report["judgments"],
        "invalid judgments": progress["invalid_judgments"],
        "rejected assignments": progress["rejected"],
        ("answered assignments (its crowd batches)" if batch.get("machine_first") else "answered assignments"): (
            f"{batch['answered']} of {batch['expected']}"
            if batch.get("answered") is not None
            else f"{progress['answered']} of {progress['assignments_expected']}"
        ),
        "citation": citation,
    }
    origin = batch.get("queries_from")
    if origin:  # a named data set's queries: where they come from, on what terms, and whom to cite
        facts["queries from"] = (
            f"{origin['short']}: {origin['source']} ({origin['url']}), licence {origin['licence']}; "
            f"cite {origin['citation_key']} (below)"
        )
        facts["citation"] = f"{citation.strip()}\n\n{origin['citation'].strip()}" if citation else origin["citation"]
    sources = [r.get("label_source") for r in labelled]
    if machine:
        facts["description"] = (
            f"Queries of batch {batch['name']!r}, labelled by a machine first and checked by {batch['annotators']} "
            "on a blind calibration sample; the machine's labels at or above a "
            "confidence threshold were accepted and the rest went to them (majority vote, strict plurality "
            f"of at least {min_votes} votes; disputed queries set aside). "
            + (
                "Each query's label source is in the file. "
                if held.holds("label_source")
                else "The file holds qids and queries only; how many labels came from each source is below. "
            )
            + f"This file holds {len(rows)} {'labelled' if every else category} queries."
        )
        facts["machine labels"] = dict(machine)
    facts["label sources"] = {source: sources.count(source) for source in dict.fromkeys(sources) if source}
    return facts


def guarantee_fact(routing: Mapping[str, Any]) -> str:
    """What the routing behind a card promises, in the docs' words: with a risk δ, its target with
    probability at least 1 - δ over the blind sample (a fixed-sequence test,
    :mod:`genderbias.machine.routing_statistics`); on the point estimate nothing, and the card says so."""
    risk = routing.get("risk")
    target = routing["target_accuracy"]
    if risk is None:
        how = "; the CI's lower bound met the target" if routing.get("conservative") else ""
        return f"no guarantee (point estimate{how})"
    stages = routing.get("stages") or []
    kept_by_stages = any(stage.get("threshold") is not None for stage in stages)
    if routing.get("threshold") is None and not kept_by_stages:
        return f"no threshold could be certified at target {target:g} and risk δ = {risk:g}: no machine label accepted"
    reference = (routing.get("reference") or {}).get("text")
    against = f"the reference label: {reference}" if reference else "the crowd-majority label"
    kept = (
        f"the labels each of the {len(stages)} labellers of the cascade kept (and so all of them together) are"
        if len(stages) > 1
        else "the machine-accepted labels are"
    )
    echo = ((routing.get("reference") or {}).get("echo") or {}).get("text")
    return (
        f"with probability ≥ {1 - risk:g} (1 − δ) over the blind sample, {kept} at least {target:g} right "
        f"(fixed-sequence test) against {against}" + (f". {echo}" if echo else "")
    )


def machine_facts(routing: Mapping[str, Any], calibration: Mapping[str, Any] | None) -> dict[str, Any]:
    """What a card states of the machine behind an export: the routing, its guarantee and the blind
    calibration sample's figures (``calibration``: ``calibration_report``, if any)."""
    facts: dict[str, Any] = {
        "labeller": routing["labeller"],
        "model": routing["model"],
        "prompt / rules version": routing["prompt_version"],
        "confidence threshold": routing["threshold"],
        "target accuracy": routing["target_accuracy"],
        "risk δ": routing.get("risk") if routing.get("risk") is not None else "none (no guarantee)",
        "guarantee": guarantee_fact(routing),
        "estimated accuracy of accepted labels": routing["estimated_accuracy"],
        "its 95% CI": routing["accuracy_ci"] or None,
        "machine-accepted queries": routing["accepted"],
    }
    stages = routing.get("stages") or []
    if len(stages) > 1:
        facts["cascade"] = (
            " → ".join(
                f"{stage['labeller']} ({stage['model']}; threshold "
                f"{'none' if stage.get('threshold') is None else format(stage['threshold'], '.3f')}, "
                f"{stage.get('kept', 0)} kept, δ = {stage.get('risk', 0):g})"
                for stage in stages
            )
            + " → crowd"
        )
    if calibration:
        facts |= {
            "calibration sample": f"{calibration['sample_batch']} ({calibration['n']} queries labelled by the crowd)",
            "calibration accuracy": _rounded(calibration["accuracy"]),
            "calibration Cohen's kappa": _rounded(calibration["kappa"]),
            "kappa 95% CI": [_rounded(v) for v in calibration["kappa_ci"] or []] or None,
            "expected calibration error": _rounded(calibration["ece"]),
            "Brier score": _rounded(calibration["brier"]),
        }
    return facts


def _rounded(value: float | None) -> float | None:
    """A report's figure to 4 places; ``None`` (undefined) stays so."""
    return None if value is None else round(value, 4)
