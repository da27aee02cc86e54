"""A registry of classes by name whose built-in members are imported only when first asked for.

Crowd providers and pre-labellers are found by the name a row stores; importing each up front
would load Django's models, boto3 or an HTTP client wherever the interface is imported. So the
registry knows the built-in names' modules and imports one at its name's first ask; the module
registers its class as it loads. A later registration under a name replaces the earlier one; an
import's errors propagate. Pure: standard library only.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any, Generic, TypeVar

T = TypeVar("T")
C = TypeVar("C", bound=type)


class UnknownName(ValueError, LookupError):
    """A name the registry does not know; the message lists the ones it does."""


class LazyRegistry(Generic[T]):
    """Classes making ``T`` by name; ``what`` names a member in the unknown-name message (``"crowd
    provider"``), ``built_in`` maps a name to the dotted module that registers it."""

    def __init__(self, what: str, built_in: Mapping[str, str], *, name_attribute: str | None = "name") -> None:
        self.what = what
        self.built_in: Mapping[str, str] = dict(built_in)
        self.name_attribute = name_attribute
        self._classes: dict[str, Callable[..., T]] = {}

    def register(self, name: str) -> Callable[[C], C]:
        """Class decorator: keep the class under ``name`` (and set its ``name_attribute``, unless None)."""

        def decorator(cls: C) -> C:
            if self.name_attribute:
                setattr(cls, self.name_attribute, name)
            self._classes[name] = cls
            return cls

        return decorator

    def get_class(self, name: str) -> Callable[..., T]:
        """The class registered as ``name``, importing its built-in module first if need be;
        :class:`UnknownName` (``unknown <what> '<name>'; known: ...``) otherwise."""
        if name not in self._classes and name in self.built_in:
            importlib.import_module(self.built_in[name])
        try:
            return self._classes[name]
        except KeyError:
            raise UnknownName(f"unknown {self.what} {name!r}; known: {', '.join(self.names())}") from None

    __getitem__ = get_class

    def create(self, name: str, **kwargs: Any) -> T:
        """A new object of the class registered as ``name``, made with ``kwargs``."""
        return self.get_class(name)(**kwargs)

    def names(self) -> list[str]:
        """Every built-in and registered name, sorted; imports nothing."""
        return sorted(set(self.built_in) | set(self._classes))

    def __contains__(self, name: object) -> bool:
        return name in self.built_in or name in self._classes

    def __repr__(self) -> str:
        return f"LazyRegistry({self.what!r}, names={self.names()!r})"
