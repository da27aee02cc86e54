"""``croissant.json``: Croissant 1.1 metadata of a published dataset folder, with its Responsible-AI fields.

Croissant (MLCommons; ``docs/croissant-spec-1.1.md`` of mlcommons/croissant) describes the files and the records
in them; its ``rai:`` fields for what the platform knows are written from the study's facts
(:mod:`publishing.statements`), those only the researcher can fill left out rather than guessed. What of 1.1 the
file uses (label classes, data- and dataset-level PROV-O provenance, usage terms): docs/dataset-publishing.md,
"Croissant and its Responsible-AI fields". Pure: plain dicts in, a JSON-ready dict out.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from genderbias.labels import LABEL_NAMES
from publishing import statements
from publishing.hub_card import license_file
from publishing.tables import CLASS, CLASS_NAMES, PROVENANCE_COLUMNS, Column, Config

#: The specifications the file follows: Croissant 1.1 and its Responsible-AI extension (a file
#: with ``rai:`` fields declares both, as the RAI specification asks).
CONFORMS_TO = ["http://mlcommons.org/croissant/1.1", "http://mlcommons.org/croissant/RAI/1.0"]
PARQUET = "application/x-parquet"
#: PROV-O, the vocabulary Croissant 1.1 recommends for provenance.
PROV = "http://www.w3.org/ns/prov#"
#: The record set listing the label's four classes (an ``sc:Enumeration``).
CLASSES = "label_classes"

#: Croissant 1.1's JSON-LD context (the specification's Appendix 1) with PROV-O's prefix (:data:`PROV`), as
#: ``croissant_context.json`` beside this module holds it.
CONTEXT: dict[str, Any] = json.loads(Path(__file__).with_name("croissant_context.json").read_text(encoding="utf-8"))


def dataset_name(batch_name: str) -> str:
    """A Croissant dataset name from the batch's (letters, digits, ``-``, ``_`` and ``.`` only)."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", batch_name).strip("-") or "dataset"


def rai_fields(facts: Mapping[str, Any]) -> dict[str, Any]:
    """The Responsible-AI fields the platform can fill, from the study's facts (absent ones left out)."""
    fields: dict[str, Any] = {
        "rai:dataCollection": statements.collection(facts),
        "rai:dataAnnotationProtocol": [statements.protocol(facts)],
        "rai:dataAnnotationPlatform": [statements.platform(facts)],
        "rai:annotationsPerItem": statements.annotations_per_item(facts),
        "rai:annotatorDemographics": [statements.demographics(facts)],
        "rai:machineAnnotationTools": [statements.machine_tools(facts)],
        "rai:dataAnnotationAnalysis": [statements.analysis(facts)],
        "rai:dataBiases": statements.biases(facts),
        "rai:dataLimitations": statements.limitations(facts),
        "rai:personalSensitiveInformation": [statements.personal_information(facts)],
        "rai:dataUseCases": statements.use_cases(facts),
    }
    return {key: value for key, value in fields.items() if value is not None and value != [None]}


def file_object(config: Config, sha256: str) -> dict[str, Any]:
    """The ``cr:FileObject`` of a configuration's Parquet file (a path relative to the folder)."""
    return {
        "@type": "cr:FileObject",
        "@id": config.file_name,
        "name": config.file_name,
        "description": config.description,
        "contentUrl": config.file_name,
        "encodingFormat": PARQUET,
        "sha256": sha256,
    }


def classes() -> dict[str, Any]:
    """The ``sc:Enumeration`` record set of the four classes (index, code, name), written inline."""
    fields = (
        ("index", "sc:Integer", "The class index the label columns hold."),
        ("code", "sc:Text", "The label's code on the platform."),
        ("name", "sc:Text", "The label's name."),
    )
    return {
        "@type": "cr:RecordSet",
        "@id": CLASSES,
        "name": CLASSES,
        "description": "The four classes of a label, in the order of the Parquet files' ClassLabel.",
        "dataType": "sc:Enumeration",
        "key": {"@id": f"{CLASSES}/index"},
        "field": [
            {"@type": "cr:Field", "@id": f"{CLASSES}/{name}", "name": name, "description": text, "dataType": kind}
            for name, kind, text in fields
        ],
        "data": [
            {f"{CLASSES}/index": index, f"{CLASSES}/code": code, f"{CLASSES}/name": LABEL_NAMES[code]}
            for index, code in enumerate(CLASS_NAMES)
        ],
    }


def _field(config: Config, column: Column, record_set_id: str | None = None) -> dict[str, Any]:
    return {
        "@type": "cr:Field",
        "@id": f"{record_set_id or config.name}/{column.name}",
        "name": column.name,
        "description": column.description,
        "dataType": column.croissant_type,
        "source": {"fileObject": {"@id": config.file_name}, "extract": {"column": column.name}},
    }


def attribution(config: Config) -> dict[str, Any]:
    """The label's provenance, row by row: an ``annotation`` field that is ``prov:wasAttributedTo``, its sub-fields
    reading the configuration's :data:`PROVENANCE_COLUMNS`."""
    columns = {c.name: c for c in config.columns}
    agent_id = f"{config.name}/label/attributed_to"
    return {
        "@type": "cr:Field",
        "@id": agent_id,
        "name": "attributed_to",
        "description": "Who made the label: crowd, in-house, adjudicator or machine (which one, prompt version and "
        "guarantee for a machine label).",
        "dataType": ["sc:Text", "prov:Agent"],
        "equivalentProperty": "prov:wasAttributedTo",
        "subField": [_field(config, columns[name], agent_id) for name in PROVENANCE_COLUMNS],
    }


def record_set(config: Config) -> dict[str, Any]:
    """The ``cr:RecordSet`` of a configuration: a ``cr:Field`` per column, a label referencing the classes and,
    with the provenance columns, carrying its attribution (:func:`attribution`)."""
    fields = []
    names = {c.name for c in config.columns}
    for column in config.columns:
        field = _field(config, column)
        if column.arrow == CLASS:
            field["references"] = {"field": {"@id": f"{CLASSES}/index"}}
            if names.issuperset(PROVENANCE_COLUMNS):
                field["annotation"] = attribution(config)
        fields.append(field)
    return {
        "@type": "cr:RecordSet",
        "@id": config.name,
        "name": config.name,
        "description": config.description,
        "field": fields,
    }


def provenance(facts: Mapping[str, Any]) -> dict[str, Any]:
    """Dataset-level PROV-O: derived from the source query set, generated by the annotation, whose agents
    are those that made the data's labels (with how many each)."""
    batch, labels = facts["batch"], facts["labels"]
    agents = [
        {"@type": "prov:SoftwareAgent" if agent == "machine" else "prov:Agent", "prov:label": agent, "size": n}
        for agent, n in labels["labelled_by"].items()
        if n
    ]
    return {
        "prov:wasDerivedFrom": {"@type": "prov:Entity", "prov:label": statements.source_query_set(facts)},
        "prov:wasGeneratedBy": {
            "@type": "prov:Activity",
            "prov:label": f"Annotation of batch {batch['name']} on the gender-bias annotation platform",
            "prov:wasAssociatedWith": agents,
        },
    }


def croissant(
    facts: Mapping[str, Any],
    configs: Sequence[Config],
    sha256: Mapping[str, str],
    *,
    license_id: str,
    title: str,
    published: str,
    citation: str,
    license_terms: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The folder's ``croissant.json`` (``sha256``: each configuration's file name to its digest)."""
    terms = dict(license_terms or {})
    # Croissant's license is a URL or a name: the link when it is one, else the license's name.
    license_value = (
        (terms["license_link"] if license_file(terms) is None else terms["license_name"]) if terms else license_id
    )
    batch = facts["batch"]
    return {
        "@context": CONTEXT,
        "@type": "sc:Dataset",
        "conformsTo": list(CONFORMS_TO),
        "name": dataset_name(batch["name"]),
        "alternateName": title,
        "description": statements.summary(facts) + " Configurations: " + ", ".join(c.name for c in configs) + ".",
        "license": license_value,
        "inLanguage": "en",
        "datePublished": published,
        "version": "1.0.0",
        "keywords": ["gender bias", "information retrieval", "query annotation", "crowdsourcing"],
        # The method the labels follow; the dataset's own citation is the researcher's (see hub_card.RESEARCHER_FIELDS).
        "citation": citation.strip(),
        # Croissant 1.1's data use conditions: the source text's terms beside the license.
        "usageInfo": statements.source_terms(facts),
        **provenance(facts),
        **rai_fields(facts),
        "distribution": [file_object(c, sha256[c.file_name]) for c in configs],
        "recordSet": [classes(), *(record_set(c) for c in configs)],
    }
