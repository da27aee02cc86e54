"""``croissant.json``: Croissant 1.0 metadata of a published dataset folder, with its Responsible-AI fields.

Croissant (MLCommons) describes a dataset's files (``distribution``: one ``cr:FileObject``
per Parquet file with its SHA-256) and the records in them (``recordSet``: one per
configuration, each column a ``cr:Field`` read from the file's column). Its Responsible-AI
vocabulary (``rai:``) has fields for what this platform knows and no other tool fills in:
the annotation protocol and platform, annotations per item, the agreement analysis, the
machine labeller and how it was checked. Those are written from the study's facts
(:mod:`annotation.publication.statements`); the fields only the researcher can fill are
listed in :data:`annotation.publication.statements.RESEARCHER_FIELDS` and left out rather
than filled with guesses.

The ``@context`` is the one Croissant 1.0 publishes (as ``mlcroissant`` 1.1.1 checks it).
Pure: plain dicts in, a JSON-ready dict out.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from annotation.publication import statements
from annotation.publication.hub_card import license_file
from annotation.publication.tables import Config

#: The specifications the file follows: Croissant 1.0 and its Responsible-AI extension (a file
#: with ``rai:`` fields declares both, as the RAI specification asks).
CONFORMS_TO = ["http://mlcommons.org/croissant/1.0", "http://mlcommons.org/croissant/RAI/1.0"]
PARQUET = "application/x-parquet"

#: Croissant 1.0's JSON-LD context (https://github.com/mlcommons/croissant, datasets/1.0).
CONTEXT: dict[str, Any] = {
    "@language": "en",
    "@vocab": "https://schema.org/",
    "citeAs": "cr:citeAs",
    "column": "cr:column",
    "conformsTo": "dct:conformsTo",
    "cr": "http://mlcommons.org/croissant/",
    "rai": "http://mlcommons.org/croissant/RAI/",
    "data": {"@id": "cr:data", "@type": "@json"},
    "dataType": {"@id": "cr:dataType", "@type": "@vocab"},
    "dct": "http://purl.org/dc/terms/",
    "equivalentProperty": "cr:equivalentProperty",
    "examples": {"@id": "cr:examples", "@type": "@json"},
    "extract": "cr:extract",
    "field": "cr:field",
    "fileProperty": "cr:fileProperty",
    "fileObject": "cr:fileObject",
    "fileSet": "cr:fileSet",
    "format": "cr:format",
    "includes": "cr:includes",
    "isLiveDataset": "cr:isLiveDataset",
    "jsonPath": "cr:jsonPath",
    "key": "cr:key",
    "md5": "cr:md5",
    "parentField": "cr:parentField",
    "path": "cr:path",
    "recordSet": "cr:recordSet",
    "references": "cr:references",
    "regex": "cr:regex",
    "repeated": "cr:repeated",
    "replace": "cr:replace",
    "samplingRate": "cr:samplingRate",
    "sc": "https://schema.org/",
    "separator": "cr:separator",
    "source": "cr:source",
    "subField": "cr:subField",
    "transform": "cr:transform",
}


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
        "rai:annotatorDemographics": statements.demographics(facts),
        "rai:machineAnnotationTools": statements.machine_tools(facts),
        "rai:dataAnnotationAnalysis": [statements.analysis(facts)],
        "rai:dataBiases": statements.biases(facts),
        "rai:dataLimitations": statements.limitations(facts),
        "rai:personalSensitiveInformation": [statements.personal_information(facts)],
        "rai:dataUseCases": statements.use_cases(facts),
    }
    if fields["rai:annotatorDemographics"] is not None:
        fields["rai:annotatorDemographics"] = [fields["rai:annotatorDemographics"]]
    if fields["rai:machineAnnotationTools"] is not None:
        fields["rai:machineAnnotationTools"] = [fields["rai:machineAnnotationTools"]]
    return {key: value for key, value in fields.items() if value is not None}


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


def record_set(config: Config) -> dict[str, Any]:
    """The ``cr:RecordSet`` of a configuration: one ``cr:Field`` per column, read from its Parquet file."""
    return {
        "@type": "cr:RecordSet",
        "@id": config.name,
        "name": config.name,
        "description": config.description,
        "field": [
            {
                "@type": "cr:Field",
                "@id": f"{config.name}/{column.name}",
                "name": column.name,
                "description": column.description,
                "dataType": column.croissant_type,
                "source": {"fileObject": {"@id": config.file_name}, "extract": {"column": column.name}},
            }
            for column in config.columns
        ],
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
    """The folder's ``croissant.json`` (``sha256`` maps each configuration's file name to its digest).

    ``license`` is the Hub identifier, or for ``other`` the license's link (a URL) or name.
    """
    terms = dict(license_terms or {})
    # Croissant's license is a URL or a name: the link when it is one, else the license's name.
    license_value = (
        (terms["license_link"] if license_file(terms) is None else terms["license_name"]) if terms else license_id
    )
    batch = facts["batch"]
    labels = facts["labels"]
    return {
        "@context": CONTEXT,
        "@type": "sc:Dataset",
        "conformsTo": list(CONFORMS_TO),
        "name": dataset_name(batch["name"]),
        "alternateName": title,
        "description": (
            f"{labels['queries']} queries annotated for gender reference (Non-gendered, Female, Male, Other or "
            f"multiple genders) by {batch['annotators']}; "
            f"{labels['labelled']} labelled. "
            "Configurations: " + ", ".join(c.name for c in configs) + "."
        ),
        "license": license_value,
        "inLanguage": "en",
        "datePublished": published,
        "version": "1.0.0",
        "keywords": ["gender bias", "information retrieval", "query annotation", "crowdsourcing"],
        # The method the labels follow; the dataset's own citation is the researcher's (see RESEARCHER_FIELDS).
        "citation": citation.strip(),
        **rai_fields(facts),
        "distribution": [file_object(c, sha256[c.file_name]) for c in configs],
        "recordSet": [record_set(c) for c in configs],
    }
