from django.apps import AppConfig


class CoreConfig(AppConfig):
    name = "core"
    verbose_name = "Shared"

    def ready(self) -> None:
        from django.contrib.auth import get_user_model
        from django.db.models.signals import post_save

        from .api_tokens import revoke_unless_researcher

        post_save.connect(revoke_unless_researcher, sender=get_user_model(), dispatch_uid="core.api_tokens")
