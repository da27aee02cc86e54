"""The project's two error types, one per layer. Pure module (no Django).

- :class:`InputError`: a file's content is wrong. It names the file and the 1-based line,
  so a person can open the file and fix it.
- :class:`ServiceError`: a request cannot be carried out as asked (a name is taken, a
  batch is in the wrong state, a run holds none of the queries). Its message is written
  for both a page and a terminal: it names the field or object, never a command-line flag;
  :class:`FieldError` is the one raised when one field breaks its rule.
  :class:`ProviderError` is the one raised for a crowd provider's refusal or failure.
- :class:`MeasureError`: a measure written as a string (``ARaB@10``, ``nDCG@10``) that cannot be
  built; it names the measure and the part at fault (its cutoff, a parameter). Both parsers of
  measure strings raise it: the bias measures' (:mod:`genderbias.api.notation`) and the
  effectiveness measures' (:mod:`genderbias.ranking.effectiveness`).

Commands turn both into ``CommandError`` (:func:`core.management.cli.command_errors`); pages show
them as form errors or messages; the API returns them as JSON with a 4xx status (502 for
a provider that failed).
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


class MeasureError(ValueError):
    """A measure that cannot be built: ``measure`` as written, ``parameter`` the one at fault ("" if none)."""

    def __init__(self, measure: str, parameter: str, problem: str) -> None:
        self.measure, self.parameter, self.problem = measure, parameter, problem
        where = f"{measure}: parameter {parameter!r}" if parameter else measure
        super().__init__(f"{where}: {problem}")


class ServiceError(Exception):
    """A request that cannot be carried out as asked (the message says why)."""


class FieldError(ServiceError):
    """A :class:`ServiceError` about one field of the request: the service's one check of a rule
    (a target accuracy outside (0, 1]) names the field, and each shell translates it to its own
    words: a page shows ``problem`` under the field, the API answers ``{field: [problem]}``
    (400), a command names its option (``--target-accuracy: problem``,
    :func:`core.management.cli.command_errors`). ``field`` is spelt as the form and the API
    spell it (``target_accuracy``); ``problem`` says what is wrong in words, the value included."""

    def __init__(self, field: str, problem: str) -> None:
        self.field, self.problem = field, problem
        super().__init__(problem)


class StateError(ServiceError):
    """A :class:`ServiceError` because of the object's current state (publishing a completed
    batch): the API answers 409 Conflict rather than 400, as retrying the same request
    cannot succeed until the state changes."""


class ProviderError(ServiceError):
    """A crowd provider (MTurk, Prolific) refused or failed a call made for the request.

    It is a :class:`ServiceError` so that every page and endpoint that shows a refusal
    shows this one too, with its message, instead of a 500. ``upstream`` tells a failure
    of the provider (a 5xx, throttled past the retries, no answer: the API answers 502 Bad
    Gateway, and trying again later may work) from a refusal of the request (a 4xx: the
    API answers 400, as for any ServiceError). Subclasses set it from what the provider said.
    """

    upstream: bool = False


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
