from annotation import services
from annotation.services.escalation import DEFAULT_MAX_ASSIGNMENTS
from core.cli import ProjectCommand

from ._common import command_errors, get_batch


class Command(ProjectCommand):
    help = (
        "Give HITs with disputed queries (no majority) one more assignment each, up to a cap. "
        "Shows the plan and its extra cost first and asks for confirmation (or pass --yes). "
        "Run sync_batch and this again until nothing is disputed or everything is at the cap."
    )

    def add_arguments(self, parser):
        parser.add_argument("name", help="batch name")
        parser.add_argument(
            "--max-assignments",
            type=int,
            default=DEFAULT_MAX_ASSIGNMENTS,
            help=f"cap on assignments per HIT (default {DEFAULT_MAX_ASSIGNMENTS})",
        )
        parser.add_argument("--yes", action="store_true", help="do not ask for confirmation")

    def handle(self, name, max_assignments, yes, **o):
        batch = get_batch(name)
        with command_errors():
            plan = services.plan_escalation(batch, max_assignments)
            self.stdout.write(
                f"{plan.disputed} disputed quer{'y' if plan.disputed == 1 else 'ies'} in finished HITs; "
                f"{plan.extra_assignments} HIT(s) would get one more assignment, "
                f"{len(plan.at_cap)} quer{'y is' if len(plan.at_cap) == 1 else 'ies are'} already at the cap."
            )
            if not plan.hits and not batch.escalations.filter(applied=False).exists():
                self.stdout.write("Nothing to escalate.")
                return
            if plan.cost is not None:
                self.stdout.write(
                    f"Extra cost: {plan.cost.assignments_total} assignment(s) = ${plan.cost.rewards} rewards "
                    f"+ ${plan.cost.fees} fees = ${plan.cost.total}"
                )
            if not yes:
                answer = input("Add these assignments? [y/N] ")
                if answer.strip().lower() not in ("y", "yes"):
                    self.stdout.write("Nothing done.")
                    return
            confirmed = {hit.pk for hit, _ in plan.hits}
            escalations = services.escalate_batch(batch, max_assignments, confirmed_hits=confirmed)
        self.stdout.write(self.style.SUCCESS(f"Added {sum(e.added for e in escalations)} assignment(s)."))
