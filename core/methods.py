"""The methods behind a stored figure, each with its version: the one table of them.

A stored result records the version of each method that computed it (:func:`current`), and its
page and paper describe it in those versions' words (:func:`describe`), never today's; where
today's differs (:func:`changed`) the page says so and offers to rebuild. A version is bumped
whenever a change moves a figure on the same data, with a CHANGELOG.md entry naming it
(tests/core/test_changelog.py). The interval constructions' words are their own, read only when
asked: this table is read at start-up and imports no numpy.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_CROWD = "one accuracy per worker and the crowd's error pattern, or full confusion matrices shrunk to them, as held-out queries' votes chose"
_SPARSE = f"{_CROWD}; one accuracy per worker on a sparse crowd"
_CHECKED = f"{_SPARSE}; where the crowd check warns, the intervals reaching as far as the posteriors proved too sure on crowds drawn from the model"
_REFIT = f"{_CHECKED}; each bootstrap refit of the crowd model stopped by its own convergence"

#: Every version of every method, oldest first, each in the words a page and a paper describe it with.
METHODS: dict[str, dict[str, str | None]] = {
    "crowd_model": {
        "2026-11-22": "full confusion matrices per worker",
        "2026-11-25.1": _CROWD,
        "2026-11-25.2": _SPARSE,
        "2026-11-25.3": f"{_SPARSE}; where the model misfits, the intervals joined with themselves moved by the bias "
        "item difficulty makes",
        "2026-11-26": _CHECKED,
        "2026-11-26.2": _REFIT,
        "2026-11-26.3": f"{_REFIT}; the crowd's accuracy by true label, each worker's one skill on it, where held-out "
        "queries' votes chose it",
        "2026-11-28": f"{_REFIT}; the crowd's accuracy by true label, each worker's one skill on it, where held-out "
        "queries' votes chose it; full confusion matrices shrunk to the coin by 2 to 64 answers' worth, the strength "
        "held-out queries' votes chose",
    },
    # Which interval a label-corrected figure gets (genderbias.crowd.figure_intervals, issue 81).
    "figure_interval": {
        "2026-11-22": "the crowd model's interval for every label-corrected figure",
        "2026-11-27": "with an expert audit sample, the prediction-powered (PPI++) interval, the crowd's label as "
        "the prediction, which rests on no crowd model; without one, the crowd model's interval unless the check "
        "of errors shared by query fires, where no 95% interval is given",
        "2026-11-28": "as 2026-11-27, the check of errors shared by query against crowds drawn from the crowd model "
        "and each refitted, so the model's own estimation error does not make it fire",
        "2026-11-29": "as 2026-11-28; where the audit sample holds fewer than z² (3.84) queries the crowd put on the "
        "wrong side of the class, a class mean's and a paired difference's PPI++ variance counts z²/2 more of them "
        "(Agresti–Coull's pseudo-counts)",
    },
    # None: the words are the construction's own (genderbias.stats.intervals.DESCRIPTIONS).
    "label_interval": {"percentile": None, "crossed_net": None, "crossed": None, "checked": None},
    "ties": {
        "2026-11-22": "the run's stored order of tied documents",
        "2026-11-25": "each figure the mean over every order of tied documents unless the report's order of "
        "ties says otherwise, with its range over the orders",
    },
    "pool": {
        "2026-11-22": "queries ranked by RaB@10 in the run's stored order of tied documents",
        "2026-11-26": "queries ranked by the report's RaB@10, the mean over every order of tied documents unless "
        "the pool's order of ties says otherwise, with its range over the orders",
    },
    "wordlists": {
        "2026-11-22": "the built-in definitional and representative word lists of Rekabsaz and Schedl (2020)",
    },
}

#: The test of a paired difference whose interval is the PPI++ one on an audit sample (figure_interval 2026-11-27).
AUDIT_TEST = (
    "PPI++ test of the label-corrected paired difference on the expert audit sample (its interval inverted), two-sided"
)

#: Today's version of each method: the newest declared.
CURRENT: dict[str, str] = {name: list(versions)[-1] for name, versions in METHODS.items()}

#: What each kind of stored result is computed with (the methods its page and paper describe).
USED_BY: dict[str, tuple[str, ...]] = {
    "pool": ("pool", "wordlists"),
    "report": ("ties", "wordlists"),
    "report_on_batch": ("ties", "wordlists", "crowd_model", "label_interval", "figure_interval"),
    "agreement": ("crowd_model",),
    "calibration": ("crowd_model", "label_interval"),
    "routing": ("crowd_model",),
}


def current() -> dict[str, str]:
    """Today's version of every method, as a stored result records it."""
    return dict(CURRENT)


def describe(name: str, version: str | None) -> str:
    """Method ``name`` at ``version`` in words (today's without a version)."""
    version = version or CURRENT[name]
    known = METHODS.get(name, {})
    if version in known and known[version] is not None:
        return known[version]
    if version in known:
        from genderbias.stats.intervals import DESCRIPTIONS  # start-up: numpy, only when the words are asked

        return DESCRIPTIONS[version]
    return f"{name} version {version} (unknown to this version of the software)"


def changed(stored: dict[str, str] | None, kind: str) -> list[dict[str, str]]:
    """The methods ``kind`` uses whose stored version is not today's: name, versions and words of both."""
    stored = stored or {}
    out = []
    for name in USED_BY[kind]:
        was, now = stored.get(name), CURRENT[name]
        if was is not None and was != now:
            out.append({"method": name, "stored": was, "current": now, "stored_text": describe(name, was),
                        "current_text": describe(name, now)})  # fmt: skip
    return out


@dataclass(frozen=True)
class ChangelogEntry:
    """One entry of CHANGELOG.md: its heading (its key), its date, the method versions it names, its text."""

    heading: str
    date: str
    methods: tuple[tuple[str, str], ...]
    body: str

    def plain_lines(self) -> list[str]:
        """The entry's lines without Markdown's emphasis and code marks (a page shows them as text)."""
        return [re.sub(r"\*\*|`", "", line).strip() for line in self.body.splitlines() if line.strip()]


_METHODS_LINE = re.compile(r"\*\*Methods:\*\*(.*?)(?:\(was|\.\s|$)", re.S)
_PAIR = re.compile(r"`([a-z_]+)` `([^`]+)`")


def changelog_entries(text: str) -> list[ChangelogEntry]:
    """CHANGELOG.md's entries, newest first: each ``## <date> <title>`` section and the ``**Methods:**``
    pairs (`` `name` `version` ``) it names."""
    entries = []
    for section in re.split(r"^## ", text, flags=re.M)[1:]:
        heading, _, body = section.partition("\n")
        line = _METHODS_LINE.search(body)
        pairs = tuple(_PAIR.findall(line.group(1))) if line else ()
        entries.append(ChangelogEntry(heading.strip(), heading.split()[0], pairs, body.strip()))
    return entries
