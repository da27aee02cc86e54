from annotation.management.commands._common import command_errors, get_batch, money
from annotation.quality.services.budget import set_extra_budget
from annotation.quality.services.escalation import (
    DEFAULT_MAX_ASSIGNMENTS,
    UNTIL_CHOICES,
    escalate_batch,
    plan_escalation,
    set_auto_escalation,
)
from core.management.cli import ProjectCommand, whole_number


class Command(ProjectCommand):
    help = (
        "Give HITs with unsettled queries (no majority, or a Dawid-Skene posterior below --until's target) "
        "one more assignment each, up to a cap and within the batch's budget. Shows the plan, its extra "
        "cost and the budget left first and asks for confirmation (or pass --yes). Run sync_batch and this "
        "again round by round, or pass --auto to let every sync_batch run the rounds until settled."
    )

    def add_arguments(self, parser):
        parser.add_argument("name", help="batch name")
        parser.add_argument(
            "--max-assignments",
            type=whole_number,
            default=DEFAULT_MAX_ASSIGNMENTS,
            help=f"cap on assignments per HIT (default {DEFAULT_MAX_ASSIGNMENTS})",
        )
        parser.add_argument(
            "--until", default="majority", help=f"when a query is settled: {UNTIL_CHOICES} (default majority)"
        )
        parser.add_argument(
            "--budget",
            type=money,
            help="USD that escalations and re-offered places may add to the estimate in all (sets the batch's budget)",
        )
        parser.add_argument(
            "--auto",
            action="store_true",
            help="after this round, let every sync_batch run one more round until settled (needs a budget)",
        )
        parser.add_argument("--stop-auto", action="store_true", help="stop automatic escalation at sync and exit")
        parser.add_argument("--yes", action="store_true", help="do not ask for confirmation")

    def handle(self, name, max_assignments, until, budget, auto, stop_auto, yes, **o):
        batch = get_batch(name)
        with command_errors():
            if stop_auto:
                set_auto_escalation(batch, None)
                self.stdout.write(self.style.SUCCESS(f"Batch {batch.name!r}: no more escalation at sync."))
                return
            if budget is not None:
                batch.extra_budget = budget  # for the plan; saved only once confirmed
            plan = plan_escalation(batch, max_assignments, until)
            self.stdout.write(
                f"{plan.disputed} unsettled quer{'y' if plan.disputed == 1 else 'ies'} in finished HITs "
                f"(settled: {until}); {plan.extra_assignments} HIT(s) would get one more assignment, "
                f"{len(plan.at_cap)} quer{'y is' if len(plan.at_cap) == 1 else 'ies are'} already at the cap."
            )
            if plan.budget_left is not None:
                self.stdout.write(
                    f"Budget left: ${plan.budget_left} of ${batch.extra_budget}"
                    + (f"; {len(plan.over_budget)} HIT(s) left out for lack of budget" if plan.over_budget else "")
                )
            if plan.cost is not None:
                self.stdout.write(
                    f"Extra cost: {plan.cost.assignments_total} assignment(s) = ${plan.cost.rewards} rewards "
                    f"+ ${plan.cost.fees} fees = ${plan.cost.total}"
                )
            if auto:
                self.stdout.write(
                    f"Then every sync_batch runs one round like this until {until}, the cap of {max_assignments} "
                    f"or the budget is reached."
                )
            if not plan.hits and not auto and not batch.escalations.filter(applied=False).exists():
                self.stdout.write("Nothing to escalate.")
                return
            if not yes:
                answer = input("Go ahead? [y/N] ")
                if answer.strip().lower() not in ("y", "yes"):
                    self.stdout.write("Nothing done.")
                    return
            if budget is not None:
                set_extra_budget(batch, budget)
            if auto:
                set_auto_escalation(batch, until, max_assignments=max_assignments)
            confirmed = {hit.pk for hit, _ in plan.hits}
            escalations = escalate_batch(batch, max_assignments, confirmed_hits=confirmed, until=until)
        self.stdout.write(self.style.SUCCESS(f"Added {sum(e.added for e in escalations)} assignment(s)."))
        if auto:
            self.stdout.write(f"sync_batch {batch.name} now escalates round by round (stop: --stop-auto).")
