"""Crowd providers, each in one place: its provider class, its rules and its client.

- :mod:`.base` -- the interface the services speak to (:class:`CrowdProvider`) and the
  registry (``get_provider(Batch.provider)``);
- :mod:`.local` -- in-house annotators on this site;
- :mod:`.mturk` (with :mod:`.mturk_api`, boto3, and :mod:`.mturk_xml`) -- Mechanical Turk
  and any server speaking its API;
- :mod:`.prolific` (with :mod:`.prolific_api`, its REST API) -- Prolific studies.

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

_CLASSES = {"LocalProvider": "local", "MTurkProvider": "mturk", "ProlificProvider": "prolific"}


def __getattr__(name: str):
    """``from annotation.crowd.providers import ProlificProvider`` imports that provider's module only then."""
    if name in _CLASSES:
        return provider_class(_CLASSES[name])
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "CrowdProvider",
    "LocalProvider",
    "MTurkProvider",
    "ProlificProvider",
    "RemoteAssignment",
    "get_provider",
    "provider_class",
    "provider_names",
    "register",
]
