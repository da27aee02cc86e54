from django.apps import AppConfig


class CoreConfig(AppConfig):
    name = "core"
    verbose_name = "Shared"

    def ready(self) -> None:
        """Converters are registered once, here, before any URLconf that uses them is loaded."""
        from django.urls import register_converter

        from .converters import KeyConverter

        register_converter(KeyConverter, "key")
