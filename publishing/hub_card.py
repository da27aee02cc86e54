"""The ``README.md`` of a published dataset folder: the Hub's YAML header and the card's text.

The header follows the Hugging Face Hub's dataset-card conventions, so the Hub shows the dataset's viewer and
filters and ``datasets.load_dataset(folder, name=...)`` finds every configuration; the text states how the labels
were made (:mod:`publishing.statements`). The license is the researcher's choice: there is no default. Pure: facts
in, text out; the YAML is written by hand (JSON-quoted strings are valid YAML scalars).
"""

from __future__ import annotations

import itertools
import json
import re
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from genderbias.labels import LABEL_NAMES, LABELS
from publishing import statements
from publishing.tables import CLASS, CLASS_NAMES, Config
from publishing.zenodo.metadata import AUTHORS_TO_FILL, zenodo_metadata

_DATA = tomllib.loads(Path(__file__).with_suffix(".toml").read_text(encoding="utf-8"))
#: The Hub's license identifiers, each with its SPDX identifier for CITATION.cff's ``license`` (None: not in CFF
#: 1.2.0's enum, so left out of the file); ``hub_card.toml`` beside this module lists them.
SPDX_LICENSES: dict[str, str | None] = {hub: spdx or None for hub, spdx in _DATA["spdx_licenses"].items()}
HUB_LICENSES = tuple(SPDX_LICENSES)
#: What no platform can know and the researcher writes before publishing: Croissant's RAI fields left empty, and why.
RESEARCHER_FIELDS: dict[str, str] = _DATA["researcher_fields"]

#: The Hub's size categories, by number of rows of the main configuration (upper bound, name): ``n<1K``,
#: ``1K<n<10K`` … ``100B<n<1T`` (bounds 10³ to 10¹²); beyond the last bound: ``n>1T``.
_SIZES = ["", *(f"{n}{unit}" for unit in "KMBT" for n in (1, 10, 100))][:11]
SIZE_CATEGORIES = tuple(
    (10 ** (3 + i), f"{low}<n<{high}" if low else f"n<{high}")
    for i, (low, high) in enumerate(itertools.pairwise(_SIZES))
)
LARGEST_SIZE_CATEGORY = "n>1T"


def check_license(license_id: str | None) -> str:
    """The researcher's license, checked against :data:`HUB_LICENSES` (ValueError naming the choices)."""
    if not license_id:
        raise ValueError(f"choose a license for the dataset (--license): one of {', '.join(HUB_LICENSES)}")
    if license_id not in HUB_LICENSES:
        raise ValueError(f"unknown license {license_id!r}: choose one of {', '.join(HUB_LICENSES)}")
    return license_id


#: The Hub's convention for ``license: other``: ``license_name`` a lowercase slug (e.g.
#: ``my-license-1.0``), ``license_link`` the terms (a URL, or a file of the repository such as ``LICENSE``).
LICENSE_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
LICENSE_FILE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
#: An http(s) URL the card writes unchanged into its YAML and Markdown: host, optional port, then only RFC 3986's
#: unreserved and reserved characters and percent escapes (no white space, ``<``, ``>``, ``"``, backtick, braces…).
LICENSE_URL = re.compile(
    r"https?://[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?(?::[0-9]{1,5})?(?:[/?#][A-Za-z0-9._~%!$&'()*+,;=:@/?#-]{0,1900})?"
)


def check_license_terms(license_id: str, license_name: str | None, license_link: str | None) -> dict[str, str]:
    """``license_name`` and ``license_link`` for the YAML header: required with ``other``, refused otherwise
    (ValueError naming what is wrong); the link is an http(s) URL or a file the researcher adds to the folder."""
    license_name, license_link = (license_name or "").strip(), (license_link or "").strip()
    if license_id != "other":
        if license_name or license_link:
            raise ValueError(f"--license-name and --license-link go with --license other only (not {license_id})")
        return {}
    if not license_name or not license_link:
        raise ValueError(
            "with --license other, name the license (--license-name, e.g. my-license-1.0) and link its terms "
            "(--license-link, a URL or a file of the repository such as LICENSE)"
        )
    if not LICENSE_NAME.match(license_name):
        raise ValueError(
            f"--license-name {license_name!r}: lowercase letters, digits, '.', '-' and '_' only (e.g. my-license-1.0)"
        )
    if not (LICENSE_URL.fullmatch(license_link) or LICENSE_FILE.fullmatch(license_link)):
        raise ValueError(f"--license-link {license_link!r}: an http(s) URL or a file name such as LICENSE")
    return {"license_name": license_name, "license_link": license_link}


def license_file(terms: Mapping[str, str]) -> str | None:
    """The repository file the license link names (the researcher adds it), or None for a URL or no link."""
    link = terms.get("license_link") or ""
    return None if not link or link.startswith(("http://", "https://")) else link


def size_category(rows: int) -> str:
    """The Hub's size category of a dataset of ``rows`` rows."""
    for limit, name in SIZE_CATEGORIES:
        if rows < limit:
            return name
    return LARGEST_SIZE_CATEGORY


#: The Hub's ``annotations_creators`` value for each provider's annotators: in-house annotators are the
#: researchers' experts, MTurk workers and Prolific participants the crowd.
PROVIDER_CREATORS = {"local": "expert-generated", "mturk": "crowdsourced", "prolific": "crowdsourced"}


def annotations_creators(facts: Mapping[str, Any]) -> list[str]:
    """Who made the labels, in the Hub's words: the provider's annotators, ``machine-generated`` when machine-accepted
    labels are in the data, ``expert-generated`` also when a researcher's ruling settled a label."""
    sources = facts["labels"]["sources"]
    creators = [PROVIDER_CREATORS.get(facts["batch"].get("provider"), "other")]
    if sources.get("machine-accepted", 0) > 0:
        creators.append("machine-generated")
    if sources.get("adjudicated", 0) > 0 and "expert-generated" not in creators:
        creators.append("expert-generated")
    return creators


def source_datasets(facts: Mapping[str, Any]) -> list[str]:
    """``extended|<ir_datasets id>`` when the queries came from a known collection, else ``original``."""
    origin = facts.get("source_dataset") or ""
    if origin.startswith("ir_datasets:"):
        return [f"extended|{origin.removeprefix('ir_datasets:').split(' ')[0]}"]
    return ["original"]


def _key(key: Any) -> str:
    """A mapping key as YAML reads it back as text: quoted when it would read as a number (``'0'``)."""
    return json.dumps(str(key)) if str(key).lstrip("-").isdigit() else str(key)


def dataset_info(
    configs: Sequence[Config], rows: Mapping[str, int] | None = None, sizes: Mapping[str, int] | None = None
) -> list[dict[str, Any]]:
    """The card's ``dataset_info``: each configuration's features as the Hub declares them (a label column a
    ``class_label``, so ``datasets`` loads it as a four-class label). ``splits`` are whole or absent: ``datasets``
    ignores a split missing ``num_examples`` (``rows``) or ``num_bytes`` (``sizes``: the split's Arrow size).
    """
    info = []
    for config in configs:
        features = []
        for column in config.columns:
            if column.arrow == CLASS:
                dtype: Any = {"class_label": {"names": {str(i): name for i, name in enumerate(CLASS_NAMES)}}}
            else:
                dtype = column.arrow
            features.append({"name": column.name, "dtype": dtype})
        entry: dict[str, Any] = {"config_name": config.name, "features": features}
        if rows is not None and sizes is not None:
            entry["splits"] = [{"name": "train", "num_bytes": sizes[config.name], "num_examples": rows[config.name]}]
        info.append(entry)
    return info


def _yaml(value: Any, indent: int = 0) -> list[str]:
    pad = " " * indent
    lines: list[str] = []
    if isinstance(value, Mapping):
        for key, item in value.items():
            if isinstance(item, (Mapping, list)) and item:
                lines.append(f"{pad}{_key(key)}:")
                lines += _yaml(item, indent + 2)
            else:
                lines.append(f"{pad}{_key(key)}: {json.dumps(item, ensure_ascii=False)}")
    else:
        for item in value:
            if isinstance(item, Mapping):
                first, *rest = _yaml(item, indent + 2)
                lines.append(f"{pad}- {first.lstrip()}")
                lines += rest
            else:
                lines.append(f"{pad}- {json.dumps(item, ensure_ascii=False)}")
    return lines


def header(
    facts: Mapping[str, Any],
    configs: Sequence[Config],
    license_id: str,
    pretty_name: str,
    license_terms: Mapping[str, str] | None = None,
    rows: Mapping[str, int] | None = None,
    sizes: Mapping[str, int] | None = None,
) -> dict[str, Any]:
    """The card's YAML metadata as a dict; ``license_terms`` follow ``license: other``, as the Hub expects."""
    return {
        "license": check_license(license_id),
        **dict(license_terms or {}),
        "language": ["en"],
        "pretty_name": pretty_name,
        "annotations_creators": annotations_creators(facts),
        "language_creators": ["found"],
        "multilinguality": ["monolingual"],
        "task_categories": ["text-classification"],
        "task_ids": ["multi-class-classification"],
        "size_categories": [size_category(facts["labels"]["queries"])],
        "source_datasets": source_datasets(facts),
        "tags": ["gender-bias", "information-retrieval", "croissant"],
        "configs": [
            {
                "config_name": config.name,
                "data_files": [{"split": "train", "path": config.file_name}],
                **({"default": True} if i == 0 else {}),
            }
            for i, config in enumerate(configs)
        ],
        "dataset_info": dataset_info(configs, rows, sizes),
    }


def render_header(metadata: Mapping[str, Any]) -> str:
    """The ``---``-fenced YAML block at the top of the card."""
    return "\n".join(["---", *_yaml(metadata), "---", ""])


def _fact(value: Any) -> str:
    """A fact as the prose states it: numbers to 3 decimals, a pair of numbers as an interval."""
    if (
        isinstance(value, (list, tuple))
        and len(value) == 2
        and all(isinstance(v, (int, float)) or v is None for v in value)
    ):
        return statements.interval(value)
    return statements.number(value)


def _row(*cells: Any) -> str:
    return "| " + " | ".join(str(c).replace("|", "\\|").replace("\n", " ") for c in cells) + " |"


def card(
    facts: Mapping[str, Any],
    configs: Sequence[Config],
    rows: Mapping[str, int],
    *,
    license_id: str,
    pretty_name: str,
    citation: str,
    published: str,
    license_terms: Mapping[str, str] | None = None,
    sizes: Mapping[str, int] | None = None,
) -> str:
    """The whole ``README.md``: YAML header, then what the dataset is and how it was made (``rows``: each
    configuration's number of rows; ``published``: the date written)."""
    batch, labels = facts["batch"], facts["labels"]
    share = facts["non_gendered_share"]
    terms = dict(license_terms or {})
    lines = [render_header(header(facts, configs, license_id, pretty_name, terms, rows, sizes)), f"# {pretty_name}", ""]
    lines += [
        f"{statements.summary(facts)} Made on the gender-bias annotation platform (batch `{batch['name']}`); "
        f"{labels['counts']['n']} of the labelled queries are Non-gendered (share "
        f"{statements.number(share['estimate'])}, 95% {share['method']} interval {statements.interval(share['ci'])}). "
        f"{statements.cost(facts)} Written {published}.",
        "",
        "## Configurations",
        "",
        _row("Configuration", "File", "Rows", "What it holds"),
        _row("---", "---", "---", "---"),
    ]
    lines += [_row(f"`{c.name}`", f"`{c.file_name}`", rows[c.name], c.description) for c in configs]
    if not any(c.name == "judgments" for c in configs):
        lines += ["", "The raw judgments are not included (the researcher did not opt in)."]
    lines += [
        "",
        "```python",
        "from datasets import load_dataset",
        "",
        f'queries = load_dataset("<repo or folder>", name="{configs[0].name}")',
        'label = queries["train"].features["label"]  # ClassLabel: '
        + ", ".join(f"{i} {code}" for i, code in enumerate(CLASS_NAMES)),
        "```",
        "",
        "`label` is a class index (a `ClassLabel` of the codes "
        + ", ".join(f"`{code}`" for code in CLASS_NAMES)
        + "); `label_name` holds its name. `labelled_by` says who made each label (crowd, in-house, adjudicator "
        "or machine; for a machine label, which labeller, model and prompt version, and the guarantee).",
        "",
    ]
    for config in configs:
        lines += [f"### Columns of `{config.name}`", "", _row("Column", "Type", "Meaning"), _row("---", "---", "---")]
        lines += [_row(f"`{c.name}`", c.arrow, c.description) for c in config.columns]
        lines.append("")
    lines += ["## How the queries were chosen", "", statements.collection(facts), ""]
    lines += ["## How the labels were made", "", statements.platform(facts), "", statements.protocol(facts), ""]
    if audit := statements.audit_sample(facts):
        lines += [audit, ""]
    demographics = statements.demographics(facts)
    if demographics:
        lines += [demographics, ""]
    lines += ["## Agreement and labels", "", statements.analysis(facts), ""]
    lines += [_row("Label", "Code", "Queries"), _row("---", "---", "---")]
    lines += [_row(LABEL_NAMES[code], code, labels["counts"][code]) for code in LABELS]
    lines += ["", _row("Label source", "Queries"), _row("---", "---")]
    lines += [_row(source, n) for source, n in labels["sources"].items()]
    lines += ["", _row("Labelled by", "Queries", "Share"), _row("---", "---", "---")]
    lines += [
        _row(agent, n, f"{100 * n / labels['labelled']:.1f}%" if labels["labelled"] else "n/a")
        for agent, n in labels["labelled_by"].items()
    ]
    set_aside = labels["set_aside"]
    lines += [
        "",
        f"Set aside: {set_aside['disputed']} queries disputed (their votes tied) and {set_aside['too_few_votes']} "
        f"with fewer than {batch['min_votes']} usable votes. They stay in `queries` with their `status` and no label.",
        "",
    ]
    if tools := statements.machine_tools(facts):
        lines += ["## Machine labels", "", tools, ""]
        lines += [_row("Fact", "Value"), _row("---", "---")]
        lines += [_row(key, _fact(value)) for key, value in facts["machine"].items()]
        lines.append("")
    lines += ["## Uses", ""]
    lines += [f"- {item}" for item in statements.use_cases(facts)]
    lines += ["", "## Out-of-scope use", ""]
    lines += [f"- {item}" for item in statements.out_of_scope(facts)]
    lines += ["", "## Biases and limitations", ""]
    lines += [f"- {item}" for item in (*statements.biases(facts), *statements.limitations(facts))]
    lines += ["", "## Personal information", "", statements.personal_information(facts), ""]
    lines += [
        "## Responsible AI metadata",
        "",
        "`croissant.json` describes every file and column in Croissant 1.1 (each label a `cr:Label` of the four "
        "classes, attributed row by row with `prov:wasAttributedTo`) with its Responsible-AI fields "
        "(data collection, annotation protocol and platform, annotations per item, annotator demographics where "
        "screeners chose them, machine annotation tools, annotation analysis, biases, limitations, personal "
        "information, use cases). The researcher fills in before publishing:",
        "",
    ]
    lines += [f"- `{field}`: {why}" for field, why in RESEARCHER_FIELDS.items()]
    lines += ["", "## License", ""]
    if terms:
        lines.append(
            f"`other`: `{terms['license_name']}`, chosen by the researcher; its terms: {terms['license_link']}"
            + (" (add this file to the folder before uploading)." if license_file(terms) else ".")
        )
    else:
        lines.append(f"`{license_id}`, chosen by the researcher.")
    lines += [
        statements.source_terms(facts),
        "",
        "## Contact",
        "",
        statements.contact(facts),
        "",
        "## Citation",
        "",
        "Cite the dataset (`CITATION.cff` and `.zenodo.json` beside this card hold the same; fill in the authors "
        "and the address once uploaded):",
        "",
        "```bibtex",
        bibtex(facts, pretty_name, published),
        "```",
        "",
        "The annotation follows:",
        "",
        "```",
        citation.strip(),
        "```",
        "",
    ]
    return "\n".join(lines)


#: The method the annotation follows (:data:`annotation.results.selectors.labels.CITATION`) as a CFF reference.
METHOD_REFERENCE: dict[str, Any] = _DATA["method_reference"]


def citation_key(facts: Mapping[str, Any], published: str) -> str:
    """The dataset's BibTeX key: its name and year (letters, digits and ``_`` only)."""
    return re.sub(r"[^A-Za-z0-9]+", "_", facts["batch"]["name"]).strip("_").lower() + f"_{published[:4]}"


def bibtex(facts: Mapping[str, Any], title: str, published: str) -> str:
    """The dataset's own BibTeX entry (``@misc``); its authors and address are the researcher's to fill in."""

    def braced(text: str) -> str:
        """Text safe inside a BibTeX field: no braces or backslashes, LaTeX's special characters escaped."""
        text = text.replace("\\", "").replace("{", "").replace("}", "")
        return re.sub(r"([%&#_$])", r"\\\1", text)

    return "\n".join(
        [
            f"@misc{{{citation_key(facts, published)},",
            f"  author       = {{{{{AUTHORS_TO_FILL}}}}},",
            f"  title        = {{{braced(title)}}},",
            f"  year         = {{{published[:4]}}},",
            "  howpublished = {Dataset},",
            f"  note         = {{{braced(statements.summary(facts))}}}",
            "}",
        ]
    )


def citation_cff(facts: Mapping[str, Any], title: str, published: str, license_id: str, citation: str) -> str:
    """``CITATION.cff`` (Citation File Format 1.2.0) of the dataset, in YAML (JSON-quoted scalars)."""
    data: dict[str, Any] = {
        "cff-version": "1.2.0",
        "message": "If you use this dataset, please cite it as below.",
        "type": "dataset",
        "title": title,
        "abstract": statements.summary(facts),
        "authors": [{"name": AUTHORS_TO_FILL}],
        "date-released": published,
        "version": "1.0.0",
        "keywords": ["gender bias", "information retrieval", "query annotation"],
        # The method the labels follow (the card's "The annotation follows"), as CFF structures a reference.
        "references": [METHOD_REFERENCE | {"notes": citation.strip()}],
    }
    if SPDX_LICENSES.get(license_id):
        data["license"] = SPDX_LICENSES[license_id]
    return "\n".join(_yaml(data)) + "\n"


def zenodo_json(
    facts: Mapping[str, Any], title: str, published: str, license_id: str, paper: str | None = None
) -> dict[str, Any]:
    """``.zenodo.json``: the dataset's deposit metadata (``paper``: the DOI or address of the paper it supplements)."""
    return zenodo_metadata(
        upload_type="dataset",
        title=title,
        description=statements.summary(facts),
        published=published,
        method_doi=METHOD_REFERENCE["doi"],
        license_id=None if license_id == "other" else license_id,
        paper=paper,
        notes=statements.source_terms(facts),
    )
