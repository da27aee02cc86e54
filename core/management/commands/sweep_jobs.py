from django.core.management.base import CommandError

from core.management.cli import ProjectCommand


class Command(ProjectCommand):
    help = (
        "Send again the background jobs the database records as waiting but no broker holds (pending, their "
        "message lost or never sent) and those whose worker died (running, no heartbeat for JOB_LEASE_SECONDS). "
        "A job whose worker died after its last attempt (JOB_MAX_ATTEMPTS) is recorded failed instead, with the "
        "reason. Safe to run at any time and as often as wanted: a job is never carried out twice. Run it every "
        "minute (systemd timer or cron)."
    )

    def handle(self, **options):
        # Its whole work is the broker's: Celery, kombu and redis are loaded here, not to start (core.startup).
        from kombu.exceptions import OperationalError as BrokerError
        from redis.exceptions import RedisError

        from core.jobs.sweeper import sweep_jobs

        try:
            sweep = sweep_jobs()
        except (BrokerError, RedisError, OSError) as exc:
            raise CommandError(f"the broker cannot be reached: {exc}") from None
        if options["verbosity"] > 0:
            self.stdout.write(
                f"Sent again: {len(sweep.resent_pending)} pending job(s) {sweep.resent_pending}, "
                f"{len(sweep.resent_running)} abandoned running job(s) {sweep.resent_running}; "
                f"failed after their last attempt: {len(sweep.failed)} job(s) {sweep.failed}; "
                f"{len(sweep.held)} waiting on the broker; {len(sweep.unsent)} not sent (broker unreachable)"
            )
        if sweep.unsent:
            raise CommandError(f"the broker refused job(s) {sweep.unsent}; they stay pending")
