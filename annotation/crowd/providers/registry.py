"""The crowd platforms, one line each, and what is derived from them without importing a provider or a
model (so that the models can take their choices from here)."""

from __future__ import annotations

from typing import Any

from core.lazy_registry import LazyRegistry

#: The crowd platforms, in ``INSTALLED_APPS`` order: the name stored in ``Batch.provider`` and the
#: package (``platforms/<name>/``, a Django app whose ``PlatformConfig`` adds it before any model
#: loads). Everything that lists platforms is derived from this table; a new platform is a folder,
#: its ``INSTALLED_APPS`` line and its URL include.
PLATFORMS: dict[str, str] = {}
#: The project's providers' modules, imported when first asked for.
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
    """The choices of a stored provider, a callable so that no provider is imported while the models load
    and a migration keeps the reference, not the list: a new platform needs no migration."""
    return [(name, platform_label(name)) for name in PLATFORMS]
