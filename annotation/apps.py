from django.apps import AppConfig


class AnnotationConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "annotation"

    def ready(self) -> None:
        """Sessions and one-time links end for good when an account's rights change (annotation.accounts)."""
        from django.db.models.signals import post_migrate

        from annotation.accounts import watch_accounts

        watch_accounts()
        post_migrate.connect(_change_log, sender=self)


def _change_log(sender, using: str = "default", **kwargs) -> None:
    """The change log behind the kept counts, made (again) after every migrate (SQLite)."""
    from annotation.crowd.services.change_log import install_change_log

    install_change_log(using)
