"""The Django app of a crowd platform: its config registers it with the kernel (:mod:`.registry`)."""

from __future__ import annotations

from typing import Any

from django.apps import AppConfig

from annotation.crowd.providers.registry import register_platform


class PlatformConfig(AppConfig):
    """The Django app of a crowd platform (``platform``: the name stored in ``Batch.provider``), registered
    before any model loads. An ``apps.py`` imports this module, not the class, so that its own config is
    the one subclass Django finds there."""

    default_auto_field = "django.db.models.BigAutoField"
    platform: str = ""

    def __init__(self, app_name: str, app_module: Any) -> None:
        super().__init__(app_name, app_module)
        register_platform(self.platform, self.name)
