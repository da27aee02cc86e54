from django.apps import AppConfig

#: The modules that plug the sub-domains above crowd into a batch's life cycle
#: (:mod:`annotation.crowd.services.hooks`), imported in this order (what they register runs in it),
#: then each platform's own ``PLUG_INS``.
PLUG_INS = (
    "annotation.quality.services.training",  # a new batch's training queries (created)
    # a calibration sample's held-out answers' places offered again, before the loop reads its round (sync_steps)
    "annotation.machine.services.held_out",
    "annotation.quality.services.loop",  # every sync ends with the quality loop (sync_steps)
    "annotation.machine.services.after_sync",  # then a calibration sample's sync starts its report (sync_steps)
)


class AnnotationConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "annotation"

    def ready(self) -> None:
        """Watch accounts (annotation.accounts), declare the hooks (:data:`PLUG_INS`) and register the chat
        connection's test (the chat labeller's own request)."""
        from django.db.models.signals import post_migrate

        from annotation.accounts import watch_accounts  # start-up
        from annotation.crowd.providers.base import platform_plug_ins  # start-up
        from annotation.crowd.services.hooks import plug_in  # start-up
        from core.connection_kinds import CHAT  # start-up
        from core.services.connections import register_connection  # start-up
        from core.startup import deferred  # start-up

        watch_accounts()
        post_migrate.connect(_change_log, sender=self)
        plug_in((*PLUG_INS, *platform_plug_ins()))
        register_connection(CHAT, deferred("annotation.machine.services.prelabels.check_chat"))


def _change_log(sender, using: str = "default", **kwargs) -> None:
    """The change log behind the kept counts, made (again) after every migrate (SQLite)."""
    from annotation.crowd.services.change_log import install_change_log  # start-up

    install_change_log(using)
