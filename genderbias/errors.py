"""The library's input errors, both ``ValueError``s: :class:`InputError` names a file's 1-based line so a person
can fix it; :class:`MeasureError` names a measure string's part at fault (both measure parsers raise it). The
platform's refusals of a request are its own (``core.errors``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["InputError", "MeasureError", "Skipped", "raise_or_skip"]


class InputError(ValueError):
    """Bad input: ``str()`` reads ``path:line: problem`` (or ``path: problem`` for the whole file)."""

    def __init__(self, path: str | Path, line: int | None, problem: str) -> None:
        self.path = str(path)
        self.line = line
        self.problem = problem
        super().__init__(str(self))

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line is not None else self.path
        return f"{where}: {self.problem}"


class MeasureError(ValueError):
    """A measure that cannot be built: ``measure`` as written, ``parameter`` the one at fault ("" if none)."""

    def __init__(self, measure: str, parameter: str, problem: str) -> None:
        self.measure, self.parameter, self.problem = measure, parameter, problem
        where = f"{measure}: parameter {parameter!r}" if parameter else measure
        super().__init__(f"{where}: {problem}")


@dataclass
class Skipped:
    """Bad lines passed over when the caller asked to skip them (``--skip-bad-lines``)."""

    errors: list[InputError] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.errors)

    def add(self, error: InputError) -> None:
        self.errors.append(error)

    def summary(self, limit: int = 5) -> str:
        shown = "\n".join(f"  {e}" for e in self.errors[:limit])
        more = f"\n  … and {len(self.errors) - limit} more" if len(self.errors) > limit else ""
        return f"skipped {len(self.errors)} bad line(s):\n{shown}{more}"


def raise_or_skip(error: InputError, skipped: Skipped | None) -> None:
    """Raise ``error``, or record it when the caller asked to skip bad lines."""
    if skipped is None:
        raise error
    skipped.add(error)
