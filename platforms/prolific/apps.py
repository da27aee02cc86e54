from annotation.crowd.providers import app_config


class ProlificConfig(app_config.PlatformConfig):
    """Prolific studies (``Batch.provider`` ``prolific``)."""

    name = "platforms.prolific"
    label = "prolific"
    platform = "prolific"

    def ready(self) -> None:
        """Declare the jobs of modules ``services`` does not import, and plug Prolific's panels, price and
        connection into the batch page, ``publish_batch`` and the Connections page."""
        from annotation.crowd.panels import add_batch_panel, add_dashboard_panel, add_own_price  # start-up
        from core.db.new_database import reviewed  # start-up
        from core.services.connections import register_connection, register_resealer  # start-up
        from core.startup import deferred  # start-up
        from platforms.inhouse.services.corrections import refuse_when  # start-up
        from platforms.prolific.bonuses import services as bonuses  # noqa: F401  (paying bonuses)  # start-up
        from platforms.prolific.connection.kind import PROLIFIC  # start-up
        from platforms.prolific.rehearsal import services as rehearsals  # noqa: F401  (rehearsing)  # start-up
        from platforms.prolific.webhooks.services import deliveries  # noqa: F401  (the re-read job)  # start-up

        reviewed(self.label, "0001_initial")  # state only: annotation's tables taken over (db_table)
        reviewed(self.label, "0002_hook_secret_sealed")  # seals stored webhook secrets: a new database has none
        register_connection(
            PROLIFIC, deferred("platforms.prolific.connection.services.check_prolific")
        )  # the Connections page, its test, the API
        register_resealer(_reseal_hook_secrets)  # connections --rotate re-seals the webhook secret too
        add_batch_panel("prolific", deferred("platforms.prolific.webhooks.selectors.batch_webhooks"))
        add_batch_panel("submissions", _submissions)
        add_batch_panel("bonuses", _bonuses)
        add_dashboard_panel("return_rate_warnings", _return_rate_warnings)
        add_own_price(
            self.platform, deferred("platforms.prolific.services.quote")
        )  # publish_batch prints Prolific's own price
        refuse_when(_paid_on_prolific)  # a participant's correction, once Prolific decided its pay


def _reseal_hook_secrets(keys: str) -> int:
    """The webhook secrets sealed again with the first of ``keys``; how many."""
    from core.sealing import reseal  # start-up
    from platforms.prolific.models import ProlificHookSecret  # start-up

    rows = list(ProlificHookSecret.objects.select_for_update())
    for row in rows:
        row.sealed = reseal(row.sealed, keys)
        row.save(update_fields=["sealed"])
    return len(rows)


#: A Prolific submission's statuses that decide its pay (Prolific's own words).
_PAID_ON_PROLIFIC = ("APPROVED", "REJECTED")


def _paid_on_prolific(assignment) -> str | None:
    """Why a participant may no longer correct the assignment: Prolific decided its submission's pay."""
    from platforms.prolific.models import ProlificSubmission  # start-up

    decided = ProlificSubmission.objects.filter(
        submission_id=assignment.provider_assignment_id, status__in=_PAID_ON_PROLIFIC
    )
    if assignment.provider_assignment_id and decided.exists():
        return "this HIT was already reviewed (its payment was decided on Prolific)"
    return None


def _bonuses(batch):
    """The bonus panel: a batch's bonus rule and what it owes, for a platform that pays bonus rules (None else)."""
    from annotation.crowd.providers.base import provider_class  # start-up
    from platforms.prolific.bonuses.selectors import preview_bonuses  # start-up

    return preview_bonuses(batch) if provider_class(batch.provider).pays_bonus_rules else None


def _return_rate_warnings():
    """The dashboard's warnings of high return rates, on published batches."""
    from platforms.prolific.webhooks.selectors import return_rate_warnings  # start-up

    return return_rate_warnings(published_only=True)


def _submissions(batch):
    """A Prolific batch's submissions (None for another platform's batch)."""
    from platforms.prolific.selectors import submissions  # start-up

    return submissions(batch) if batch.provider == "prolific" else None
