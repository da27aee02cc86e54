"""Crowd providers: the interface (:mod:`.base`), the batch options (:mod:`.options`) and the platforms
(:mod:`.registry`); each platform's provider is in ``platforms/<name>/provider.py``. Providers never
write the models nor import the services."""

from annotation.crowd.providers.base import (
    CrowdProvider,
    RemoteAssignment,
    get_provider,
    provider_class,
    provider_names,
    register,
)

__all__ = [
    "CrowdProvider", "RemoteAssignment", "get_provider", "provider_class", "provider_names", "register",
]  # fmt: skip
