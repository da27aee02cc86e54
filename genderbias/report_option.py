"""What a report setting is: :class:`ReportOption`, a rule of the library
(:class:`genderbias.ranking.defaults.Rule`: its values and its one check, which raises
``OptionError`` naming the setting) with the words every shell shows around it, and its parsing of
typed text (its command-line argument: ``core.management.cli.add_option``).

The settings themselves are declared once in :mod:`genderbias.options`; this module is the kind of
thing they are, so that the declarations read as a list. Pure: no Django.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from genderbias.numbers import NumberError, parse_count, parse_counts, parse_decimal
from genderbias.ranking.defaults import OptionError, Rule

KINDS = ("choice", "number", "count", "cutoffs", "file")


@dataclass(frozen=True, kw_only=True)
class ReportOption(Rule):
    """One setting of a report: a :class:`~genderbias.ranking.defaults.Rule` (its values and its one check,
    :meth:`~genderbias.ranking.defaults.Rule.check`) with the words every shell shows around it."""

    label: str
    help: str
    #: The attribute of ``metrics.services.ReportSettings`` when it is not :attr:`name`.
    attribute: str = ""

    def __post_init__(self) -> None:
        if not self.what:  # a refusal calls the setting by its label by default
            object.__setattr__(self, "what", self.label.lower())

    @property
    def setting(self) -> str:
        """The name of the ``ReportSettings`` attribute holding this setting."""
        return self.attribute or self.name

    @property
    def default_text(self) -> str:
        """The default as a person types it (``5,10,20,30``, ``0.5``)."""
        if self.kind == "cutoffs":
            return ",".join(str(c) for c in self.default)
        return (
            ""
            if self.default in (None, "")
            else f"{self.default:g}"
            if isinstance(self.default, float)
            else str(self.default)
        )

    def describe(self) -> str:
        """The help with the bounds and the default, as a command's ``--help`` and the API state it."""
        parts = [self.help]
        if self.bounds_text and self.kind != "cutoffs":
            parts.append(self.bounds_text)
        text = ", ".join(parts)
        return f"{text} (default {self.default_text})" if self.default_text else text

    def parse(self, text: str) -> Any:
        """A value typed on the command line or a page (``5,10,20``, ``0.5``), checked; ``""``: the default."""

        if text is None or (isinstance(text, str) and not text.strip()):
            return self.default
        if not isinstance(text, str):  # a value given as it is (call_command's keyword arguments)
            return self.check(text)
        try:
            if self.kind == "cutoffs":
                return self.check(
                    parse_counts(text, self.name, minimum=int(self.minimum), maximum=int(self.maximum), most=self.most)
                )
            if self.kind == "count":  # the bounds given to the reader too: it names them for a 20-digit number
                low = 0 if self.minimum is None else math.ceil(self.minimum)
                high = 10**18 if self.maximum is None else math.floor(self.maximum)
                return self.check(parse_count(text, self.name, minimum=low, maximum=high))
            if self.kind == "number":
                return self.check(parse_decimal(text, self.name))
        except NumberError as exc:
            if self.kind == "cutoffs":  # the field first, as every refusal of a typed list says it
                raise OptionError(
                    self.name, f"{exc}; cutoffs are whole numbers {self._range()}, e.g. {self.default_text}"
                ) from None
            raise OptionError(self.name, exc.problem) from None
        return self.check(text)
