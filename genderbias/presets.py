"""Paper presets: the settings each paper's tables were computed with, chosen by one name (what each sets:
docs/metrics.md, "Paper presets"). Pure and light: commands offer the names as choices.

A preset sets what it names and nothing else, winning over the same setting given beside it; the report stores
the preset and every value it set and prints them (:func:`preset_lines`). The inputs stay the user's: a preset
normalising NFaiRR by a BM25 background needs one named (``--background``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["PRESETS", "REPRESENTATIVE", "preset_lines"]

#: Which word list RaB/ARaB read under a preset: the definitional 32 + 32 or the representative list.
DEFINITIONAL, REPRESENTATIVE = "definitional", "representative"


@dataclass(frozen=True)
class Preset:
    name: str
    paper: str
    #: :class:`metrics.services.report_settings.ReportSettings` fields the preset sets, with their values.
    settings: dict = field(default_factory=dict)
    #: The word list of RaB/ARaB (:data:`DEFINITIONAL` or :data:`REPRESENTATIVE`).
    rank_bias_words: str = DEFINITIONAL
    #: NFaiRR is normalised by a background run the user names (a BM25 run of the collection).
    needs_background: bool = False
    #: The paper's table layout (:mod:`metrics.tables`), printed after the report; "" for none.
    table: str = ""
    #: What reproducing the paper's own numbers needs beyond the preset (documented, not checked).
    inputs: str = ""


_REFERENCE_CODE = {"tokenizer": "whitespace", "ties": "file"}
_NFAIRR = {"threshold": 1.0, "nfairr_normaliser": "exact"}

PRESETS: dict[str, Preset] = {
    preset.name: preset
    for preset in (
        Preset(
            "sigir2020",
            "Rekabsaz & Schedl, SIGIR 2020 (Table 3)",
            {**_REFERENCE_CODE, "cutoffs": (5, 10, 20, 30)},
            table="sigir2020",
            inputs="the 1,765 non-gendered MS MARCO dev queries and the runs of the study (MS MARCO passages)",
        ),
        Preset(
            "sigir2021",
            "Rekabsaz, Kopeinik & Schedl, SIGIR 2021",
            {**_REFERENCE_CODE, **_NFAIRR, "cutoffs": (10, 20)},
            needs_background=True,
            inputs="the 215 bias-sensitive MS MARCO dev queries, MS MARCO passages, the BM25 run as background "
            "and the rankers' runs",
        ),
        Preset(
            "ecir2024",
            "Abolghasemi et al., ECIR 2024",
            {**_REFERENCE_CODE, **_NFAIRR, "cutoffs": (10, 20)},
            rank_bias_words=REPRESENTATIVE,
            needs_background=True,
            table="ecir2024",
            inputs="the 215 bias-sensitive MS MARCO dev queries (QS2), MS MARCO passages, the BM25 run as "
            "background and the rankers' runs",
        ),
    )
}

#: What each setting means, in words, for the report's header (:func:`preset_lines`).
_SETTING_WORDS = {
    "tokenizer": lambda v: (
        "tokenizer whitespace: text.lower().split(' '), the reference code's" if v == "whitespace" else f"tokenizer {v}"
    ),
    "ties": lambda v: (
        f"ties {v}: the run's own order, as the reference code read the files" if v == "file" else f"ties {v}"
    ),
    "cutoffs": lambda v: "cutoffs " + ",".join(str(c) for c in v),
    "threshold": lambda v: f"NFaiRR's τ = {v:g}",
    "nfairr_normaliser": lambda v: (
        f"NFaiRR normaliser {v}: the background run's top 200 alone" if v == "exact" else f"NFaiRR normaliser {v}"
    ),
}


def preset_lines(name: str) -> list[str]:
    """Every setting preset ``name`` chose, in words (the report's header, its CSV and methods text)."""
    preset = PRESETS[name]
    lines = [_SETTING_WORDS[key](value) for key, value in preset.settings.items()]
    lines.append(
        "RaB/ARaB over the representative word list (as Bigdeli et al.)"
        if preset.rank_bias_words == REPRESENTATIVE
        else "RaB/ARaB over the 32 + 32 definitional words"
    )
    if preset.needs_background:
        lines.append("NFaiRR normalised by the BM25 background run named with the report")
    if preset.table:
        lines.append(f"table layout {preset.table}")
    return lines
