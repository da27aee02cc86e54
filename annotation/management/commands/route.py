from annotation.machine.services.routing import (
    DEFAULT_RISK,
    plan_routing,
    plan_summary,
    refuse_while_waiting,
    route_and_publish,
)
from annotation.management.commands._common import command_errors, format_cost, get_batch, money
from core.management.cli import ProjectCommand, decimal_number


class Command(ProjectCommand):
    help = (
        "Accept the machine's labels above a confidence threshold and send the rest to the crowd. By default "
        "the threshold comes with a guarantee: with probability at least 1 - --risk over the draw of the blind "
        "calibration sample, the machine's labels of the queries at or above it agree with the crowd majority on "
        "at least --target-accuracy of them (fixed-sequence testing, docs/prelabelling.md). The queries below "
        "it, those the machine was trained on and those it did not label go to the crowd (lowest confidence "
        "first, within --budget) as a batch of their own (BATCH-part-N); what the budget does not pay for stays "
        "unlabelled and is named. When no threshold can be certified it says how many more sample queries "
        "would be needed (calibrate BATCH --extend --sample N). While a query of the blind sample may still "
        "change its crowd label it routes and publishes nothing, whatever the flags, and says which HITs the "
        "sample waits on and why. Shows the plan and asks before creating anything (or pass --yes)."
    )

    def add_arguments(self, parser):
        parser.add_argument("name", help="the machine-labelled batch, with a calibration sample labelled by the crowd")
        parser.add_argument(
            "--target-accuracy",
            type=decimal_number,
            required=True,
            help="accuracy the accepted labels must reach, e.g. 0.95",
        )
        parser.add_argument(
            "--risk",
            type=decimal_number,
            default=DEFAULT_RISK,
            help=f"probability that the accepted set falls short of the target anyway (default {DEFAULT_RISK})",
        )
        parser.add_argument(
            "--no-guarantee",
            action="store_true",
            help="choose by the sample's point estimate instead (NO guarantee: falls short far more often)",
        )
        parser.add_argument("--budget", type=money, help="USD the routed queries may cost at most")
        parser.add_argument("--labeller", help="whose labels to route by (default: the sample's pre-labeller)")
        parser.add_argument(
            "--cascade",
            help="labellers in sequence, e.g. rules:0.9,trained,openai (NAME:FLOOR: below the floor a query goes on "
            "unread): each keeps what it certifies at the target with risk δ/m, the rest goes on; one guarantee for "
            "all the machines keep",
        )
        parser.add_argument("--routed-name", default="", help="name of the routed batch (default BATCH-part-N)")
        parser.add_argument("--no-publish", action="store_true", help="create the routed batch but do not publish it")
        parser.add_argument("--yes", action="store_true", help="do not ask for confirmation")

    def handle(self, name, target_accuracy, risk, no_guarantee, budget, labeller, routed_name, no_publish, yes, **o):
        cascade = [item.strip() for item in (o["cascade"] or "").split(",") if item.strip()] or None
        batch = get_batch(name)
        out = self.stdout.write
        with command_errors():  # the request's rules are the service's (check_routing); a refusal names the option
            plan = plan_routing(
                batch,
                target_accuracy,
                budget=budget,
                risk=risk,
                no_guarantee=no_guarantee,
                labeller=labeller,
                cascade=cascade,
            )
            for line in plan_summary(plan):
                out(line)
            refuse_while_waiting(plan.waiting, plan.awaiting_votes)  # whatever the flags: nothing routed blind
            if not yes:
                answer = input("Go ahead? [y/N] ")
                if answer.strip().lower() not in ("y", "yes"):
                    out("Nothing done.")
                    return
            done = route_and_publish(  # the plan shown, published here with a progress bar
                batch,
                target_accuracy,
                name=routed_name,
                plan=plan,
                publish=not no_publish,
                now=True,
                bar=o["verbosity"] > 0,
            )
        routing = done.routing
        routed = routing.routed_batch
        if routed is None:
            out(self.style.SUCCESS(f"Routed: {len(routing.accepted)} machine-accepted, nothing to the crowd."))
            return
        out(f"Routed batch {routed.name!r}: {routing.to_humans} queries; cost {format_cost(routed.cost)}")
        if no_publish:
            out(f"Publish it with: manage.py publish_batch {routed.name}")
            return
        out(self.style.SUCCESS(f"Published {done.published} HIT(s) of {routed.name!r} on {routed.provider}."))
