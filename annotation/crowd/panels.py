"""What a crowd platform adds to the pages annotation draws, registered by the platform's app in its
``ready()``: annotation imports no platform. A panel no platform registered is ``None``, not drawn."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

_BATCH_PANELS: dict[str, Callable[[Any], Any]] = {}
_ANNOTATOR_HOME: list[Callable[[Any], dict[str, Any]]] = []


def add_batch_panel(key: str, make: Callable[[Any], Any]) -> None:
    """The batch page's context holds ``key``: ``make(batch)``."""
    _BATCH_PANELS[key] = make


def batch_panels(batch: Any, keys: tuple[str, ...] = ()) -> dict[str, Any]:
    """The platforms' values for the batch page: every registered key, and each of ``keys`` (those the
    template reads) as ``None`` when none registered it."""
    return dict.fromkeys(keys) | {key: make(batch) for key, make in _BATCH_PANELS.items()}


def add_annotator_home(make: Callable[[Any], dict[str, Any]]) -> None:
    """An annotator's home page's context holds what ``make(user)`` answers."""
    _ANNOTATOR_HOME.append(make)


def annotator_home(user: Any, defaults: dict[str, Any]) -> dict[str, Any]:
    """``defaults`` updated with what each platform registered answers for ``user``."""
    context = dict(defaults)
    for make in _ANNOTATOR_HOME:
        context |= make(user)
    return context


_DASHBOARD: dict[str, Callable[[], Any]] = {}


def add_dashboard_panel(key: str, make: Callable[[], Any]) -> None:
    """The researchers' dashboard (``metrics``) holds ``key``: ``make()`` (Prolific's return-rate warnings)."""
    _DASHBOARD[key] = make


def dashboard_panels(keys: tuple[str, ...] = ()) -> dict[str, Any]:
    """The platforms' values for the dashboard, as :func:`batch_panels`."""
    return dict.fromkeys(keys) | {key: make() for key, make in _DASHBOARD.items()}


_OWN_PRICES: dict[str, Callable[[Any], Any]] = {}


def add_own_price(platform: str, quote: Callable[[Any], Any]) -> None:
    """A platform that prices a batch itself (fees and VAT of the account): ``quote(batch)`` asks it."""
    _OWN_PRICES[platform] = quote


def own_price(batch: Any) -> Any:
    """The batch's platform's own price for it, or None (a platform that does not quote)."""
    quote = _OWN_PRICES.get(batch.provider)
    return quote(batch) if quote is not None else None
