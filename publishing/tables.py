"""The tables of a published dataset folder: each configuration's columns, rows and Parquet file.

:data:`CONFIGS` declares every column once, so the files, the card and the Croissant fields cannot disagree. The
rows are the per-query results as :func:`annotation.exports.selectors.study_facts` hands them over (nothing is
recomputed); annotators appear under pseudonyms made for each publication (:func:`pseudonyms`). Pure: pyarrow is
imported only when writing.
"""

from __future__ import annotations

import hashlib
import hmac
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from genderbias.labels import LABEL_NAMES, LABELS

#: The label whose queries make the ``non_gendered`` configuration.
NON_GENDERED = "n"
#: The Arrow type of a final label: the index of its class in :data:`CLASS_NAMES` (Hugging Face's
#: ``ClassLabel``: an ``int64``, empty when set aside), so ``datasets`` loads it as a four-class label.
CLASS = "class"
#: The four classes in index order: the platform's label codes (``n``, ``f``, ``m``, ``o``).
CLASS_NAMES: tuple[str, ...] = tuple(LABELS)


def class_index(code: str | None) -> int | None:
    """A label code's class index (None for no label)."""
    return CLASS_NAMES.index(code) if code else None


@dataclass(frozen=True)
class Column:
    """One column of a configuration: its name, Arrow type, Croissant data type and meaning."""

    name: str
    arrow: str  #: ``string``, ``int64``, ``float64``, ``bool`` or :data:`CLASS` (a label's class index)
    description: str

    @property
    def croissant_type(self) -> str | list[str]:
        """Croissant's ``dataType``: a class index is an integer that is a label (``cr:Label``)."""
        if self.arrow == CLASS:
            return ["sc:Integer", "cr:Label"]
        return {"string": "sc:Text", "int64": "sc:Integer", "float64": "sc:Float", "bool": "sc:Boolean"}[self.arrow]

    @property
    def storage(self) -> str:
        """The Arrow type the Parquet file stores (a class index is an ``int64``)."""
        return "int64" if self.arrow == CLASS else self.arrow

    def hf_feature(self) -> dict[str, Any]:
        """The column as Hugging Face ``datasets`` declares it (``Features.to_dict`` form)."""
        if self.arrow == CLASS:
            return {"names": list(CLASS_NAMES), "_type": "ClassLabel"}
        return {"dtype": self.arrow, "_type": "Value"}


@dataclass(frozen=True)
class Config:
    """One configuration of the dataset: a Parquet file a reuser loads by name."""

    name: str
    description: str
    columns: tuple[Column, ...]
    opt_in: bool = False  #: written only when the researcher asks (raw judgments)

    @property
    def file_name(self) -> str:
        return f"{self.name}.parquet"


_QUERY_COLUMNS = (
    Column("qid", "string", "Query id, as in the source query set (text, never a number)."),
    Column("query", "string", "Query text, as the annotators saw it."),
    Column(
        "label",
        CLASS,
        "Final label, a class index: 0 n (Non-gendered), 1 f (Female), 2 m (Male), 3 o (Other or multiple "
        "genders); empty when set aside.",
    ),
    Column("label_name", "string", "The final label's name; empty when set aside."),
    Column(
        "label_source",
        "string",
        "Where the final label comes from: crowd majority, adjudicated or machine-accepted; empty when set aside.",
    ),
    Column("status", "string", "labelled, disputed (tied votes) or too few votes."),
    Column("adjudicated", "bool", "Whether a researcher's ruling settled the label (it replaces the crowd majority)."),
    Column(
        "crowd_label",
        "string",
        "The crowd majority's label (empty for a tie or too few votes); differs from label after a ruling.",
    ),
    Column(
        "ds_posterior", "float64", "Dawid-Skene posterior probability of the final label (empty without crowd votes)."
    ),
    Column("machine_confidence", "float64", "The machine labeller's confidence, for machine-accepted labels only."),
    Column(
        "labelled_by",
        "string",
        "Who the final label is attributed to (prov:wasAttributedTo): crowd (a crowd majority), in-house "
        "(a majority of the site's own annotators), adjudicator (a researcher's ruling) or machine; empty when "
        "set aside.",
    ),
    Column("machine_labeller", "string", "The machine labeller, for machine-accepted labels only."),
    Column("machine_model", "string", "The machine labeller's model, for machine-accepted labels only."),
    Column("prompt_version", "string", "The machine's prompt or rules version, for machine-accepted labels only."),
    Column(
        "label_guarantee",
        "string",
        "What the routing that accepted a machine label promises of it; for machine-accepted labels only.",
    ),
)

#: The columns of ``queries`` that say who made each label (the label's provenance in ``croissant.json``).
PROVENANCE_COLUMNS = ("labelled_by", "machine_labeller", "machine_model", "prompt_version", "label_guarantee")

_AGGREGATED_COLUMNS = (
    Column("qid", "string", "Query id."),
    Column("votes", "int64", "Usable crowd votes on the query (gold-failed and rejected work excluded)."),
    *(Column(f"votes_{code}", "int64", f"Votes for {LABEL_NAMES[code]} ({code}).") for code in LABELS),
    Column("invalid", "int64", "Invalid answers (no usable label) on the query."),
    Column(
        "majority_label", "string", "The crowd majority's label (strict plurality of enough votes); empty otherwise."
    ),
    Column("agreement", "float64", "Share of the votes given to the most voted label; empty without votes."),
    Column("disputed", "bool", "The most voted labels tied."),
    Column("too_few_votes", "bool", "Fewer votes than a majority label needs."),
    Column("dawid_skene_label", "string", "Dawid-Skene's most probable label."),
    *(Column(f"ds_posterior_{code}", "float64", f"Dawid-Skene posterior of {LABEL_NAMES[code]}.") for code in LABELS),
)

_JUDGMENT_COLUMNS = (
    Column("qid", "string", "Query id."),
    Column(
        "annotator", "string", "The annotator's pseudonym in this dataset (annotator-001, ...), linked to no other id."
    ),
    Column("label", CLASS, "The annotator's label, a class index: 0 n, 1 f, 2 m, 3 o."),
    Column("label_name", "string", "The label's name."),
)

#: Every configuration, in the order the card lists them; ``queries`` is the default.
CONFIGS: dict[str, Config] = {
    c.name: c
    for c in (
        Config(
            "queries", "Every query of the batch with its final label, label source and confidence.", _QUERY_COLUMNS
        ),
        Config("non_gendered", "The queries labelled Non-gendered (the set bias measurements use).", _QUERY_COLUMNS),
        Config(
            "aggregated",
            "Per query: the crowd's vote counts, agreement, majority and Dawid-Skene's view.",
            _AGGREGATED_COLUMNS,
        ),
        Config(
            "judgments",
            "Every usable crowd judgment, one row per annotator and query, under dataset-local pseudonyms.",
            _JUDGMENT_COLUMNS,
            opt_in=True,
        ),
    )
}


def configs_for(with_judgments: bool) -> list[Config]:
    """The configurations a folder holds: the raw judgments only when the researcher opted in."""
    return [c for c in CONFIGS.values() if with_judgments or not c.opt_in]


def _status(result: Mapping[str, Any]) -> str:
    if result["label"] is not None:
        return "labelled"
    return "too few votes" if result["too_few_votes"] else "disputed"


def query_row(result: Mapping[str, Any], agent: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A row of ``queries`` (and ``non_gendered``) from one per-query result and its label's ``agent`` (who made
    it, and for a machine label which machine, prompt and guarantee; None for no label)."""
    label = result["label"]
    agent = agent or {}
    return {
        "qid": str(result["qid"]),
        "query": result["query"],
        "label": class_index(label),
        "label_name": LABEL_NAMES[label] if label else None,
        "label_source": result.get("label_source"),
        "status": _status(result),
        "adjudicated": bool(result["adjudicated"]),
        "crowd_label": result.get("crowd_label"),
        "ds_posterior": (result.get("ds_posteriors") or {}).get(label) if label else None,
        "machine_confidence": result.get("machine_confidence"),
        **{column: agent.get(column) for column in PROVENANCE_COLUMNS},
    }


def aggregated_row(result: Mapping[str, Any]) -> dict[str, Any]:
    """A row of ``aggregated`` from one per-query result."""
    counts = result["counts"]
    votes = len(result["votes"])
    posteriors = result.get("ds_posteriors") or {}
    return {
        "qid": str(result["qid"]),
        "votes": votes,
        **{f"votes_{code}": int(counts.get(code, 0)) for code in LABELS},
        "invalid": int(result.get("invalid", 0)),
        "majority_label": result.get("crowd_label"),
        "agreement": round(max(counts.values()) / votes, 4) if votes else None,
        "disputed": bool(result["disputed"]),
        "too_few_votes": bool(result["too_few_votes"]),
        "dawid_skene_label": result.get("dawid_skene"),
        **{f"ds_posterior_{code}": posteriors.get(code) for code in LABELS},
    }


#: Bytes of the per-publication salt (the service draws it with ``secrets.token_bytes``).
SALT_BYTES = 32


def pseudonyms(results: Iterable[Mapping[str, Any]], salt: bytes) -> dict[str, str]:
    """The platform's worker pseudonyms -> this dataset's (``annotator-001``, ...), numbered in the order of
    ``HMAC-SHA256(salt, platform pseudonym)``: with a non-empty salt drawn afresh for each publication and never
    stored, no two publications share a numbering (a person is not linkable across datasets) and none can be
    recomputed.
    """
    if not salt:
        raise ValueError("pseudonyms need a non-empty per-publication salt")

    def key(worker: str) -> bytes:
        return hmac.new(salt, str(worker).encode("utf-8"), hashlib.sha256).digest()

    workers = sorted({vote["worker"] for r in results for vote in r["votes"]}, key=key)
    width = max(3, len(str(len(workers))))
    return {worker: f"annotator-{i:0{width}d}" for i, worker in enumerate(workers, start=1)}


def judgment_rows(results: Sequence[Mapping[str, Any]], salt: bytes) -> list[dict[str, Any]]:
    """Rows of ``judgments``: every usable vote, by query (batch order) then annotator (see :func:`pseudonyms`)."""
    names = pseudonyms(results, salt)
    rows = [
        {
            "qid": str(r["qid"]),
            "annotator": names[v["worker"]],
            "label": class_index(v["label"]),
            "label_name": LABEL_NAMES[v["label"]],
        }
        for r in results
        for v in r["votes"]
    ]
    order = {str(r["qid"]): i for i, r in enumerate(results)}
    return sorted(rows, key=lambda row: (order[row["qid"]], row["annotator"]))


def config_rows(
    results: Sequence[Mapping[str, Any]],
    with_judgments: bool,
    salt: bytes | None = None,
    agents: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, list[dict[str, Any]]]:
    """Each configuration's rows from the batch's per-query results; ``salt`` (:func:`pseudonyms`) is needed with
    ``with_judgments``; ``agents`` maps a labelled query's qid to who made its label."""
    agents = agents or {}
    queries = [query_row(r, agents.get(str(r["qid"]))) for r in results]
    rows = {
        "queries": queries,
        "non_gendered": [row for row in queries if row["label"] == class_index(NON_GENDERED)],
        "aggregated": [aggregated_row(r) for r in results],
    }
    if with_judgments:
        if not salt:
            raise ValueError("the judgments configuration needs a per-publication salt")
        rows["judgments"] = judgment_rows(results, salt)
    return rows


def hf_features(config: Config) -> dict[str, Any]:
    """The configuration's Hugging Face ``datasets`` features (``Features.to_dict`` form)."""
    return {c.name: c.hf_feature() for c in config.columns}


def arrow_schema(config: Config):
    """The configuration's explicit Arrow schema (every column nullable), its metadata carrying the Hugging Face
    features as ``datasets`` writes them, so ``datasets`` reads a label column as a ``ClassLabel``."""
    import json

    import pyarrow as pa

    types = {"string": pa.string(), "int64": pa.int64(), "float64": pa.float64(), "bool": pa.bool_()}
    schema = pa.schema([pa.field(c.name, types[c.storage], nullable=True) for c in config.columns])
    return schema.with_metadata({"huggingface": json.dumps({"info": {"features": hf_features(config)}})})


def write_parquet(config: Config, rows: Sequence[Mapping[str, Any]], path: str | os.PathLike) -> Path:
    """Write ``rows`` as ``config``'s Parquet file with its explicit schema (no type guessing), directly: the caller
    writes into a folder nobody reads yet."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = arrow_schema(config)
    columns = {c.name: [row.get(c.name) for row in rows] for c in config.columns}
    table = pa.Table.from_pydict(columns, schema=schema)
    pq.write_table(table, path)
    return Path(path)
