from annotation.crowd.providers import app_config


class InhouseConfig(app_config.PlatformConfig):
    """In-house annotators on this site (``Batch.provider`` ``local``): the product's own platform."""

    name = "platforms.inhouse"
    label = "inhouse"
    platform = "local"

    def ready(self) -> None:
        """Plug the platform's accounts, its HIT release on deactivation and its panels into the kernel."""
        from annotation.accounts import watch_annotators  # start-up
        from annotation.crowd.panels import add_annotator_home, add_batch_panel  # start-up
        from core.services.groups import use_annotator_maker  # start-up
        from core.startup import deferred  # start-up
        from platforms.inhouse.selectors import ANNOTATORS_GROUP, unfillable_places  # start-up

        use_annotator_maker(deferred("platforms.inhouse.services.annotators.create_annotator"))
        watch_annotators(ANNOTATORS_GROUP, deferred("platforms.inhouse.services.handout.release_held_hits"))
        add_batch_panel("unfillable", unfillable_places)  # a team batch's places no member can take
        add_annotator_home(_annotator_home)


def _annotator_home(user) -> dict:
    """An annotator's home: where to start, and the HIT they may still correct (``corrections``)."""
    from platforms.inhouse.services.annotators import annotator_worker  # start-up
    from platforms.inhouse.services.corrections import last_correctable  # start-up

    worker = annotator_worker(user)
    last = last_correctable(worker.pk) if worker is not None else None
    return {"annotator": worker is not None, "correctable": last}
