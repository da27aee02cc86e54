from django.apps import AppConfig


class AnnotationConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "annotation"

    def ready(self) -> None:
        """Sessions and one-time links end for good when an account's rights change (annotation.accounts)."""
        from annotation.accounts import watch_accounts

        watch_accounts()
