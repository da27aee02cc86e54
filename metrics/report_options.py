"""A report's choice options, declared once: name, choices, default, label and help.

The shells read these declarations, so they cannot drift apart: ``manage.py bias_report``'s
arguments (:meth:`ReportOption.argument`), the report form's fields (``metrics.forms``), the API's
request serializer and so its OpenAPI schema (``metrics.api``), and the ``Report`` model's fields
(``metrics.models``, with the same choices and help). The services check the values
(``metrics.services.reports.ReportSettings.validate``). Standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass

from .defaults import DEFAULT_TIES, TIE_DRAWS, TIES
from .presets import PRESETS


@dataclass(frozen=True)
class ReportOption:
    """One choice of a report, as every shell offers it."""

    name: str
    #: ``(value, label)`` pairs; the label is what a page shows.
    choices: tuple[tuple[str, str], ...]
    #: What applies when the option is not given (``""``: none).
    default: str
    label: str
    help: str

    @property
    def values(self) -> list[str]:
        return [value for value, _ in self.choices]

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    def argument(self) -> dict:
        """``argparse`` keywords of the command-line option."""
        default = f" (default {self.default})" if self.default else ""
        return {"choices": self.values, "default": self.default or None, "help": f"{self.help}{default}"}


TIES_OPTION = ReportOption(
    "ties",
    (
        (TIES[0], "tie-aware: every bias figure is its expectation over all orders of tied documents"),
        (TIES[1], "trec_eval: ties by docid descending, as trec_eval and ir_measures"),
        (TIES[2], "file: the run's own order (import the run with --order file to keep the file's)"),
    ),
    DEFAULT_TIES,
    "Tied documents",
    "how documents with equal scores are ordered for the bias metrics: tie-aware takes every figure's "
    "expectation over all orders of each tie group (exact for RaB, ARaB and NFaiRR; TExFAIR and the "
    f"exposure metrics over every order, or {TIE_DRAWS} drawn); trec_eval orders them by docid descending; file keeps "
    "the run's order. Effectiveness always follows trec_eval (ir_measures)",
)

PRESET_OPTION = ReportOption(
    "preset",
    tuple((name, f"{name}: {preset.paper}") for name, preset in PRESETS.items()),
    "",
    "Paper preset",
    "set what a paper's tables were computed with (tokenizer, order of ties, cutoffs, NFaiRR's τ and "
    "normaliser, RaB's word list); the settings it names win over the same settings given beside it, and "
    "the report prints each",
)

#: Every declared option, by name.
REPORT_OPTIONS = {option.name: option for option in (TIES_OPTION, PRESET_OPTION)}
