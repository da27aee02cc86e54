"""Crowd providers, each in one place: its provider class, its rules and its client.

- :mod:`.base` -- the interface the services speak to (:class:`CrowdProvider`) and the
  registry (``get_provider(Batch.provider)``);
- :mod:`.options` -- the batch options, declared once;
- :mod:`.registry` -- the platforms, one line each.

Each platform's provider is in its folder (``platforms/<name>/provider.py``, e.g.
``platforms.mturk.provider.MTurkProvider``), found by name (``provider_class``).

Providers read the app's models but never write them and never import the services: the
services call providers, in an order that makes re-running after an interruption safe.
"""

from annotation.crowd.providers.base import (
    CrowdProvider,
    RemoteAssignment,
    get_provider,
    provider_class,
    provider_names,
    register,
)

__all__ = [
    "CrowdProvider",
    "RemoteAssignment",
    "get_provider",
    "provider_class",
    "provider_names",
    "register",
]
