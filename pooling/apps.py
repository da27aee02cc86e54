from django.apps import AppConfig


class PoolingConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "pooling"
    verbose_name = "Collections, runs and pools"
