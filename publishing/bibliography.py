"""The works a paper bundle cites, as BibTeX (pure): ``references.bib`` holds exactly the works the bundle's LaTeX
``\\cite``s (:func:`cited_keys`, :func:`bibtex`), an unknown key an error rather than a silent ``[?]`` in the paper.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from genderbias.datasets import NAMED_SETS

#: key → BibTeX entry (the key is the entry's own): the works of ``works.bib`` beside this module, entries
#: apart by a blank line. The named data sets' papers are declared with the sets
#: (:data:`genderbias.datasets.NAMED_SETS`: their cards cite them too).
ENTRIES: dict[str, str] = {
    **{named.citation_key: named.citation for named in NAMED_SETS.values()},
    **{
        entry[entry.index("{") + 1 : entry.index(",")]: entry
        for entry in (Path(__file__).with_name("works.bib").read_text(encoding="utf-8").strip().split("\n\n"))
    },
}

_CITE = re.compile(r"\\cite[tp]?\*?(?:\[[^\]]*\])*\{([^}]*)\}")


def cited_keys(*texts: str) -> list[str]:
    """The ``\\cite`` keys of ``texts``, in order of first citation, each once."""
    keys: list[str] = []
    for text in texts:
        for group in _CITE.findall(text):
            for key in group.split(","):
                if key.strip() and key.strip() not in keys:
                    keys.append(key.strip())
    return keys


def bibtex(keys: Iterable[str]) -> str:
    """The entries of ``keys`` (in that order); KeyError naming a key without an entry."""
    keys = list(keys)
    unknown = [key for key in keys if key not in ENTRIES]
    if unknown:
        raise KeyError(f"no BibTeX entry for {', '.join(unknown)}")
    return "\n\n".join(ENTRIES[key] for key in keys) + "\n"
