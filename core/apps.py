from django.apps import AppConfig


class CoreConfig(AppConfig):
    name = "core"
    verbose_name = "Shared"

    def ready(self) -> None:
        """Converters are registered before any URLconf that uses them is loaded; tokens follow their owner."""
        from django.contrib.auth import get_user_model
        from django.core.signals import setting_changed
        from django.db.models.signals import post_save
        from django.urls import register_converter

        from core.converters import KeyConverter  # start-up
        from core.services.input_limits import apply_input_limits, input_limit_changed  # start-up
        from core.startup import deferred  # start-up

        apply_input_limits()
        setting_changed.connect(input_limit_changed, dispatch_uid="core.services.input_limits")

        register_converter(KeyConverter, "key")
        post_save.connect(
            deferred("core.services.api_tokens.revoke_unless_researcher"),  # DRF's modules when a user is saved
            sender=get_user_model(),
            weak=False,
            dispatch_uid="core.services.api_tokens",
        )
