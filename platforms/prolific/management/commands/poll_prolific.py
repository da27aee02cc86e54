from core.management.cli import ProjectCommand, command_errors
from platforms.prolific.webhooks.services.deliveries import poll_prolific


class Command(ProjectCommand):
    help = (
        "Reconcile the Prolific workspace's webhook subscriptions with the published batches, then re-read "
        "from Prolific each published Prolific batch not re-read for PROLIFIC_POLL_SECONDS (or, while the "
        "webhooks are seen to work -- a verified event arrived within it, every subscription confirmed by this "
        "site, no delivery refused since -- PROLIFIC_POLL_WITH_WEBHOOKS_SECONDS): events that never arrive are "
        "caught. Prints which interval applies and why. Safe to run at any time; run it every minute (systemd "
        "timer or cron)."
    )

    def handle(self, **options):
        with command_errors():
            result = poll_prolific()
        if options["verbosity"] > 0:
            self.stdout.write(f"{result.status.sentence}; re-read now: {', '.join(result.started) or 'none'}")
            recovery = result.recovery
            if recovery.recovered:
                self.stdout.write(
                    self.style.WARNING(
                        f"Webhooks behind: {recovery.recovered} event(s) Prolific did not deliver recovered from its"
                        f" event log now; re-read: {', '.join(recovery.batches) or 'none'}"
                    )
                )
            if recovery.error:
                self.stdout.write(self.style.WARNING(f"An event log could not be read: {recovery.error}"))
            if result.resumed:
                self.stdout.write(f"Publication resumed (the study is live on Prolific): {', '.join(result.resumed)}")
            if result.webhooks is not None and result.webhooks.error:
                self.stdout.write(self.style.WARNING(f"Webhooks not reconciled: {result.webhooks.error}"))
