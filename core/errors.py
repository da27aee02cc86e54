"""The project's two error types, one per layer. Pure module (no Django).

- :class:`InputError`: a file's content is wrong. It names the file and the 1-based line,
  so a person can open the file and fix it.
- :class:`ServiceError`: a request cannot be carried out as asked (a name is taken, a
  batch is in the wrong state, a run holds none of the queries). Its message is written
  for both a page and a terminal: it names the field or object, never a command-line flag.

Commands turn both into ``CommandError`` (:func:`core.cli.command_errors`); pages show
them as form errors; the API returns them as JSON with a 4xx status.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


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


class ServiceError(Exception):
    """A request that cannot be carried out as asked (the message says why)."""


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
