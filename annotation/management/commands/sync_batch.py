from annotation.crowd.services.sync import sync_batch
from annotation.management.commands._common import command_errors, get_batch
from core.management.cli import ProjectCommand


class Command(ProjectCommand):
    help = (
        "Fetch the batch's submitted assignments, store each once, check the answers and review them: "
        "approve valid work, reject only work that failed the gold questions (with feedback). "
        "Prolific: reads every submission of the study, reviews, pays bonuses and refills places. "
        "Then, for every provider: rejected MTurk places are offered again (within the batch's budget), "
        "the batch's warn/block thresholds are applied, and with escalate_batch --auto one escalation round runs."
    )

    def add_arguments(self, parser):
        parser.add_argument("name", help="batch name")
        parser.add_argument(
            "--approve-all", action="store_true", help="approve every submitted assignment, even failed gold"
        )

    def handle(self, name, approve_all, **o):
        batch = get_batch(name)
        with command_errors():
            result = sync_batch(batch, approve_all=approve_all, bar=o["verbosity"] > 0)
        self.stdout.write(
            self.style.SUCCESS(
                f"{result.new} new assignment(s) ({result.invalid} with invalid answers), {result.updated} updated; "
                f"approved {result.approved}, rejected {result.rejected}, left for review {result.kept}"
            )
        )
        if result.reoffered or result.reoffer_over_budget:
            self.stdout.write(f"Rejected places offered again: {result.reoffered}")
        if result.reoffer_over_budget:
            self.stdout.write(
                self.style.WARNING(
                    f"{result.reoffer_over_budget} rejected place(s) not offered again: the batch's budget is spent "
                    "(raise it with escalate_batch --budget)"
                )
            )
        if result.reoffer_refused:
            self.stdout.write(self.style.WARNING(f"Rejected places not offered again: {result.reoffer_refused}"))
        if result.flagged:
            self.stdout.write(f"Flagged by the batch's thresholds: {', '.join(result.flagged)}")
        if result.blocked:
            self.stdout.write(self.style.WARNING(f"Blocked by the batch's thresholds: {', '.join(result.blocked)}"))
        if result.escalated:
            self.stdout.write(f"Escalation round: {result.escalated} assignment(s) added")
        if result.platform is not None:
            p = result.platform
            self.stdout.write(
                f"Prolific: {p.submissions} submission(s), {p.freed} returned or timed out (places freed), "
                f"{p.bonuses_paid} bonus(es) paid, study places now {p.places}"
            )
            if p.bonuses_unconfirmed:
                self.stdout.write(
                    self.style.WARNING(
                        f"{p.bonuses_unconfirmed} bonus payment(s) lost their answer: check them on Prolific; "
                        "they are never paid twice automatically (see docs/prolific.md)"
                    )
                )
        if result.completed:
            self.stdout.write(f"Batch {batch.name!r} is complete.")
