"""The platform's refusals of a request: :class:`ServiceError` and its kinds. Pure module (no Django).

The message is written for a page and a terminal alike: it names the field or object, never a
command-line flag. Commands turn these into ``CommandError``, pages into form errors or messages,
the API into JSON with a 4xx (:func:`core.api.exception_handler`). A file's bad content is the
library's :class:`genderbias.errors.InputError`.
"""

from __future__ import annotations


class ServiceError(Exception):
    """A request that cannot be carried out as asked (the message says why)."""


class FieldError(ServiceError):
    """A :class:`ServiceError` about one field (spelt as the form and the API spell it) breaking its
    rule; ``problem`` says what is wrong, the value included. Each shell shows it by the field."""

    def __init__(self, field: str, problem: str) -> None:
        self.field, self.problem = field, problem
        super().__init__(problem)


class StateError(ServiceError):
    """A :class:`ServiceError` because of the object's current state (a 409: retrying cannot succeed
    until the state changes)."""


class ProviderError(ServiceError):
    """A crowd provider refused or failed a call made for the request; ``upstream`` tells a failure of
    the provider (a 502: trying later may work) from a refusal of the request (a 400)."""

    upstream: bool = False
