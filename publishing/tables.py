"""The tables of a published dataset folder: each configuration's columns, rows and Parquet file.

:data:`CONFIGS` (from ``dataset_tables.toml`` beside this module) declares every column once, so the files, the
card and the Croissant fields cannot disagree. The rows are the per-query results as
:func:`annotation.exports.selectors.study_facts` hands them over (nothing is recomputed); annotators appear under
pseudonyms made for each publication (:func:`pseudonyms`). Pure: pyarrow is imported only when writing.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import tomllib
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


def _columns(declared: Mapping[str, Sequence[str]]) -> tuple[Column, ...]:
    """A configuration's columns as ``dataset_tables.toml`` declares them: a name holding ``{code}`` is a column
    per label (``{name}`` in its meaning: the label's name)."""
    return tuple(
        Column(name.format(code=code), arrow, meaning.format(code=code, name=LABEL_NAMES.get(code, "")))
        for name, (arrow, meaning) in declared.items()
        for code in (LABELS if "{code}" in name else [""])
    )


_DECLARED = tomllib.loads(Path(__file__).with_name("dataset_tables.toml").read_text(encoding="utf-8"))
#: Every configuration, in the order the card lists them (``dataset_tables.toml``); ``queries`` is the default.
CONFIGS: dict[str, Config] = {
    name: Config(
        name,
        declared["description"],
        _columns(_DECLARED[declared.get("columns_of", name)]["columns"]),
        opt_in=declared.get("opt_in", False),
    )
    for name, declared in _DECLARED.items()
}

#: The columns of ``queries`` that say who made each label (the label's provenance in ``croissant.json``).
PROVENANCE_COLUMNS = ("labelled_by", "machine_labeller", "machine_model", "prompt_version", "label_guarantee")


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


def arrow_schema(config: Config):
    """The configuration's explicit Arrow schema (every column nullable), its metadata carrying the Hugging Face
    features as ``datasets`` writes them, so ``datasets`` reads a label column as a ``ClassLabel``."""
    import json

    import pyarrow as pa

    types = {"string": pa.string(), "int64": pa.int64(), "float64": pa.float64(), "bool": pa.bool_()}
    schema = pa.schema([pa.field(c.name, types[c.storage], nullable=True) for c in config.columns])
    return schema.with_metadata(
        {"huggingface": json.dumps({"info": {"features": {c.name: c.hf_feature() for c in config.columns}}})}
    )


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
