from django.apps import AppConfig
from django.db.models.signals import post_migrate


def create_cache_tables(using: str = "default", **kwargs) -> None:
    """Every ``migrate`` also creates the database cache tables (the ``results`` cache of
    ``settings.CACHES``); ``createcachetable`` leaves existing tables alone."""
    from django.core.management import call_command

    call_command("createcachetable", database=using, verbosity=0)


class AnnotationConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "annotation"

    def ready(self) -> None:
        post_migrate.connect(create_cache_tables, sender=self, dispatch_uid="annotation.create_cache_tables")
