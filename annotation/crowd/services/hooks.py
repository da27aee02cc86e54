"""Where the sub-domains above crowd plug into a batch's life cycle: crowd calls them, never imports them.

Creating, publishing and syncing a batch do more than crowd, the base, knows about: each sub-domain
registers a function at one of the points at the end of this module, called in registration order.
The registering modules (:func:`plug_in`) are imported at the first use of a point, once, under a lock,
so that a command that touches no batch starts without them; one loaded again replaces its own.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

F = Callable[..., Any]

_plug_ins: tuple[str, ...] = ()
_loaded = False
_loading = threading.RLock()


def plug_in(modules: Sequence[str]) -> None:
    """The modules that register hooks (``annotation.apps.PLUG_INS``), imported at the first use of a point."""
    global _plug_ins, _loaded
    with _loading:
        _plug_ins, _loaded = tuple(modules), False


def _load_plug_ins() -> None:
    global _loaded
    if _loaded:
        return
    with _loading:
        if not _loaded:
            for module in _plug_ins:
                importlib.import_module(module)
            _loaded = True


@dataclass(frozen=True)
class _Hook:
    function: F
    #: Only batches of this provider (``Batch.provider``); None: every batch.
    provider: str | None


def _same(a: F, b: F) -> bool:
    return (a.__module__, a.__qualname__) == (b.__module__, b.__qualname__)


class Hooks:
    """Functions run in registration order at one point of a batch's life cycle."""

    def __init__(self, point: str) -> None:
        self.point = point
        self._hooks: list[_Hook] = []

    def register(self, function: F | None = None, *, provider: str | None = None):
        """Decorator (``@hooks.register`` or ``@hooks.register(provider="prolific")``): keep ``function``."""

        def keep(function: F) -> F:
            hook = _Hook(function, None if provider is None else str(provider))
            for i, other in enumerate(self._hooks):
                if _same(other.function, function):
                    self._hooks[i] = hook  # its module loaded again
                    return function
            self._hooks.append(hook)
            return function

        return keep(function) if function is not None else keep

    def for_provider(self, provider: str) -> list[F]:
        """The functions that run for a batch of ``provider``, in order."""
        _load_plug_ins()
        return [h.function for h in self._hooks if h.provider in (None, provider)]

    def run(self, batch, *args: Any, **kwargs: Any) -> None:
        """Call every function registered for ``batch``'s provider with ``(batch, *args, **kwargs)``."""
        for function in self.for_provider(batch.provider):
            function(batch, *args, **kwargs)

    def __repr__(self) -> str:
        return f"Hooks({self.point!r}, {[h.function.__qualname__ for h in self._hooks]!r})"


class PlatformSyncs:
    """A platform's own sync, by provider name (at most one each)."""

    def __init__(self) -> None:
        self._syncs: dict[str, F] = {}

    def register(self, provider: str):
        """Decorator: ``function`` syncs the batches of ``provider``."""

        name = str(provider)  # Provider.PROLIFIC or "prolific": the stored name

        def keep(function: F) -> F:
            other = self._syncs.get(name)
            if other is not None and not _same(other, function):
                raise ValueError(f"{name!r} is synced by {other.__module__}.{other.__qualname__} already")
            self._syncs[name] = function
            return function

        return keep

    def get(self, provider: str) -> F | None:
        _load_plug_ins()
        return self._syncs.get(provider)

    def __repr__(self) -> str:
        return f"PlatformSyncs({sorted(self._syncs)!r})"


#: After a batch is written (in create_batch's transaction): ``hook(batch, settings, *, training)``.
created = Hooks("batch created")
#: Before a batch is first prepared on its platform (publishing): ``hook(batch, provider)``.
preparing = Hooks("batch preparing")
#: After a batch is cancelled (its open HITs expired): ``hook(batch, provider)``.
cancelled = Hooks("batch cancelled")
#: After a batch's HITs are published and launched: ``hook(batch, provider)``.
published = Hooks("batch published")
#: A platform's own sync of a whole batch, by provider name: ``sync(batch, provider, *, approve_all, job, bar)``.
platform_syncs = PlatformSyncs()
#: After a sync's review, in order, each idempotent: ``step(batch, provider, result)``.
sync_steps = Hooks("sync step")
