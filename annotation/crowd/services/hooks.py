"""Where the sub-domains above crowd plug into a batch's life cycle: crowd calls them, never imports them.

crowd is the base of annotation's sub-domains (docs/architecture.md, "annotation's sub-domains";
``tests/test_architecture.py`` checks the order). Yet creating, publishing and syncing a batch do
more than crowd knows about: the qualification step stores a new batch's training queries
(quality), a Prolific batch is read through its study's submissions and its workspace's webhooks
follow what is published (prolific), and every sync ends with the quality loop (re-offers,
thresholds, an escalation round). Each of these is a function its sub-domain registers here; the
crowd services call what is registered, in the order it was registered.

Who registers is declared once, above every sub-domain: ``annotation.apps.PLUG_INS``, the modules
``AnnotationConfig.ready()`` hands to :func:`plug_in`. They are imported the first time any point
is used (once per process, under a lock, so two threads never see half of them), not while the app
loads: a command that touches no batch starts without them. A module registers with the decorators
below as it loads; a module loaded again replaces its own registration (same module and name),
never adds a second one.

The points:

- :data:`created`: ``hook(batch, settings, *, training)`` in :func:`~.batches.create_batch`'s
  transaction, after the batch's HITs are written (``training``: its training queries, maybe none);
- :data:`preparing`: ``hook(batch, provider)`` in :func:`~.publishing.publish_batch` before the
  batch is first prepared on its platform (a Prolific study's participant groups);
- :data:`cancelled`: ``hook(batch, provider)`` at the end of :func:`~.batches.cancel_batch`;
- :data:`published`: ``hook(batch, provider)`` after :func:`~.publishing.publish_batch` launched;
- :data:`platform_syncs`: a platform whose answers are not read HIT by HIT
  (``sync(batch, provider, *, approve_all, job, bar) -> SyncResult``), by provider name;
  :func:`~.sync.sync_batch` hands such a batch over to it whole;
- :data:`sync_steps`: ``step(batch, provider, result)`` after a sync's review, each idempotent
  on its own, so a sync interrupted anywhere is finished by the next.
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
#: A platform's own sync of a whole batch, by provider name.
platform_syncs = PlatformSyncs()
#: After a sync's review, in order: ``step(batch, provider, result)``.
sync_steps = Hooks("sync step")
