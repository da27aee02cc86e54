"""What a report setting is: :class:`ReportOption`, its one check and its parsing (its command-line
argument: ``core.management.cli.add_option``).

The settings themselves are declared once in :mod:`genderbias.options`; this module is the kind of
thing they are, so that the declarations read as a list. A value is checked by one function,
:meth:`ReportOption.check`, which raises :class:`OptionError` naming the setting. Pure: no Django.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from genderbias.numbers import NumberError, parse_count, parse_counts, parse_decimal

KINDS = ("choice", "number", "count", "cutoffs", "file")


class OptionError(ValueError):
    """A setting's value breaks its rule: ``field`` names the setting, ``problem`` says how."""

    def __init__(self, field: str, problem: str) -> None:
        self.field, self.problem = field, problem
        super().__init__(f"{field}: {problem}")


@dataclass(frozen=True)
class ReportOption:
    """One setting of a report, as every shell offers it and as one check reads it."""

    name: str
    #: ``(value, label)`` pairs of a ``choice``; the label is what a page shows.
    choices: tuple[tuple[str, str], ...]
    #: What applies when the setting is not given (``""``: none; a ``file``'s ``""``: the built-in list).
    default: Any
    label: str
    help: str
    kind: str = "choice"
    #: Bounds of a number, a count or each cutoff; ``open_bounds``: strictly between them.
    minimum: float | None = None
    maximum: float | None = None
    open_bounds: bool = False
    #: Cutoffs: at most this many.
    most: int | None = None
    #: The attribute of ``metrics.services.ReportSettings`` when it is not :attr:`name`.
    attribute: str = ""
    #: What a refusal calls the setting (``exposure form``); its label in lower case by default.
    what: str = ""

    @property
    def values(self) -> list[str]:
        return [value for value, _ in self.choices]

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

    @property
    def bounds_text(self) -> str:
        """The bounds in words (``in (0, 1)``, ``from 1 to 10000``), or ``""``."""
        if self.minimum is None and self.maximum is None:
            return ""
        if self.open_bounds:
            return f"in ({self.minimum:g}, {self.maximum:g})"
        if self.maximum is None:
            return f"at least {self.minimum:g}"
        return f"from {self.minimum:g} to {self.maximum:g}"

    def describe(self) -> str:
        """The help with the bounds and the default, as a command's ``--help`` and the API state it."""
        parts = [self.help]
        if self.bounds_text and self.kind != "cutoffs":
            parts.append(self.bounds_text)
        text = ", ".join(parts)
        return f"{text} (default {self.default_text})" if self.default_text else text

    def check(self, value: Any) -> Any:
        """``value`` if it keeps this setting's rule (cutoffs: sorted and distinct), else
        :class:`OptionError` naming the setting. The one check of each rule."""
        what = self.what or self.label.lower()
        if self.kind == "choice":
            if value not in self.values and not (value == "" and self.default == ""):
                raise OptionError(self.name, f"unknown {what} {value!r}; choose one of {', '.join(self.values)}")
            return value
        if self.kind == "file":
            return value
        if self.kind == "cutoffs":
            try:
                values = sorted({int(c) for c in value})
                whole = all(not isinstance(c, bool) and int(c) == c for c in value)
            except (TypeError, ValueError):
                values, whole = [], False
            if not whole or not values or not self._within(values[0], values[-1]):
                raise OptionError(self.name, f"cutoffs must be whole numbers {self._range()}, got {list(value)}")
            if self.most is not None and len(values) > self.most:
                raise OptionError(self.name, f"at most {self.most} values (got {len(values)})")
            return tuple(values)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise OptionError(self.name, f"{what} must be a number, got {value!r}")
        if (self.kind == "count" and int(value) != value) or not self._within(value, value):
            if self.kind == "count":
                raise OptionError(self.name, f"{what} must be an integer {self._range()}, got {value}")
            if self.maximum is None and self.minimum == 0:
                raise OptionError(self.name, f"{what} must not be negative, got {value:g}")
            raise OptionError(self.name, f"{what} must lie {self._range()}, got {value:g}")
        return int(value) if self.kind == "count" else float(value)

    def _within(self, low: float, high: float) -> bool:
        if self.open_bounds:
            return self.minimum < low and high < self.maximum
        return (self.minimum is None or low >= self.minimum) and (self.maximum is None or high <= self.maximum)

    def _range(self) -> str:
        text = self.bounds_text
        return f"strictly between {self.minimum:g} and {self.maximum:g}" if self.open_bounds else text

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
