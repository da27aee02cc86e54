from annotation import services
from annotation.services.routing import plan_routing, route_batch
from core.cli import ProjectCommand

from ._common import command_errors, format_cost, get_batch, money


class Command(ProjectCommand):
    help = (
        "Accept the machine's labels above a confidence threshold and send the rest to the crowd. The "
        "threshold is the lowest at which the machine-accepted labels meet --target-accuracy on the blind "
        "calibration sample; the queries below it go to the crowd (lowest confidence first, within --budget) "
        "as a batch of their own (BATCH-part-N). Shows how many go to humans, the cost and the saving, "
        "and asks before creating anything (or pass --yes)."
    )

    def add_arguments(self, parser):
        parser.add_argument("name", help="the machine-labelled batch, with a calibration sample labelled by the crowd")
        parser.add_argument("--target-accuracy", type=float, required=True, help="e.g. 0.95")
        parser.add_argument("--budget", type=money, help="USD the routed queries may cost at most")
        parser.add_argument(
            "--conservative", action="store_true", help="the lower bound of the accuracy's 95%% CI must meet the target"
        )
        parser.add_argument("--labeller", help="whose labels to route by (default: the sample's pre-labeller)")
        parser.add_argument("--routed-name", default="", help="name of the routed batch (default BATCH-part-N)")
        parser.add_argument("--no-publish", action="store_true", help="create the routed batch but do not publish it")
        parser.add_argument("--yes", action="store_true", help="do not ask for confirmation")

    def handle(self, name, target_accuracy, budget, conservative, labeller, routed_name, no_publish, yes, **o):
        batch = get_batch(name)
        out = self.stdout.write
        with command_errors():
            plan = plan_routing(batch, target_accuracy, budget=budget, conservative=conservative, labeller=labeller)
            if plan.threshold is None:
                out(
                    f"No confidence threshold of {plan.labeller} meets {target_accuracy:.3f} on the calibration "
                    f"sample ({plan.calibrated} queries): every query would go to the crowd."
                )
            else:
                lo, hi = plan.accuracy_ci
                out(
                    f"Threshold {plan.threshold:.3f}: the machine's labels at or above it are right "
                    f"{plan.estimated_accuracy:.3f} of the time (95% CI {lo:.3f}-{hi:.3f}; "
                    f"{plan.sample_accepted} sample queries)."
                )
            out(
                f"Of {plan.queries} queries: {plan.sampled} in the calibration sample ({plan.calibrated} labelled "
                "by the crowd), "
                f"{len(plan.accepted)} machine-accepted, {len(plan.to_humans)} to the crowd"
                + (f", {len(plan.over_budget)} left unlabelled for lack of budget" if plan.over_budget else "")
                + "."
            )
            out(
                f"Cost: ${plan.cost} for the routed queries (+ ${plan.calibration_cost} the sample cost); "
                f"all {plan.queries} on the crowd: ${plan.cost_all}; saving ${plan.saving}."
            )
            if not yes:
                answer = input("Go ahead? [y/N] ")
                if answer.strip().lower() not in ("y", "yes"):
                    out("Nothing done.")
                    return
            routing = route_batch(batch, target_accuracy, name=routed_name, plan=plan)  # the plan shown
            routed = routing.routed_batch
            if routed is None:
                out(self.style.SUCCESS(f"Routed: {len(routing.accepted)} machine-accepted, nothing to the crowd."))
                return
            out(f"Routed batch {routed.name!r}: {routing.to_humans} queries; cost {format_cost(routed.cost)}")
            if no_publish:
                out(f"Publish it with: manage.py publish_batch {routed.name}")
                return
            published = services.publish_batch(routed, bar=o["verbosity"] > 0)
        out(self.style.SUCCESS(f"Published {published} HIT(s) of {routed.name!r} on {routed.provider}."))
