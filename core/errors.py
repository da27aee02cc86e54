"""The platform's refusals of a request: :class:`ServiceError` and its kinds. Pure module (no Django).

A :class:`ServiceError` says a request cannot be carried out as asked (a name is taken, a batch is in
the wrong state, a run holds none of the queries). Its message is written for both a page and a
terminal: it names the field or object, never a command-line flag; :class:`FieldError` is the one
raised when one field breaks its rule, :class:`StateError` when the object's state refuses,
:class:`ProviderError` for a crowd provider's refusal or failure. A file's bad content is the
library's :class:`genderbias.errors.InputError`.

Commands turn both into ``CommandError`` (:func:`core.management.cli.command_errors`); pages show
them as form errors or messages; the API returns them as JSON with a 4xx status (502 for
a provider that failed).
"""

from __future__ import annotations


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
