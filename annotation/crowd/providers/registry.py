"""The crowd platforms, one line each, and what is derived from the table without importing a provider.

Apart from :mod:`.base` (the interface, which names the models for its types) so that the models can
take the stored provider's choices from here: this module imports neither a provider nor a model,
and a provider's module is imported only when its class is first asked for (:class:`core.lazy_registry.LazyRegistry`).
:mod:`.base` names everything here too (``base.PLATFORMS``, ``base.register`` ...).
"""

from __future__ import annotations

from typing import Any

from core.lazy_registry import LazyRegistry

#: The crowd platforms, in the order of their lines in ``INSTALLED_APPS``: the name stored in
#: ``Batch.provider`` and the package that is the platform (``platforms/<name>/``: a Django app whose
#: :class:`PlatformConfig` puts it here as the app registry is made, before any model loads; its
#: provider in ``provider.py``, its client, services, pages and the hooks it plugs in, :data:`PLUG_INS`
#: of its package). Everything that lists platforms (the registry below, ``provider_names()``, the
#: ``provider`` option's choices, the stored provider's choices, the app's plug-ins) is derived from
#: this table; a new platform is a folder, its ``INSTALLED_APPS`` line and its URL include.
PLATFORMS: dict[str, str] = {}
#: The project's providers, imported when first asked for (so loading this package loads
#: neither Django's models nor a provider's client).
BUILT_IN: dict[str, str] = {}
#: Provider classes by name (:class:`annotation.crowd.providers.base.CrowdProvider`; typed there).
REGISTRY: LazyRegistry[Any] = LazyRegistry("crowd provider", BUILT_IN)


def register_platform(name: str, package: str) -> None:
    """Add the platform stored as ``name`` whose package is ``package`` (its provider: ``<package>.provider``)."""
    PLATFORMS[name] = package
    BUILT_IN[name] = f"{package}.provider"
    REGISTRY.built_in[name] = BUILT_IN[name]  # type: ignore[index]


def platform_label(name: str) -> str:
    """What a platform is called on pages and cards: its provider class's ``label`` (its module imported now)."""
    return REGISTRY.get_class(name).label or name


def platform_choices() -> list[tuple[str, str]]:
    """The choices of a stored provider (``Batch.provider``, ``Worker.provider``, ``WorkerIdentity.provider``):
    each platform of :data:`PLATFORMS`, in its order, with its label. A callable, so Django asks for it
    when it needs the choices (the providers are imported then, never while the models load) and a
    migration keeps the reference, not the list: a new platform is a folder and one line, no migration."""
    return [(name, platform_label(name)) for name in PLATFORMS]
