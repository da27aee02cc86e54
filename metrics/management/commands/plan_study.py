import argparse
import json
from decimal import Decimal, InvalidOperation

from django.core.management.base import CommandError

from core.management.cli import ProjectCommand, add_option, command_errors, decimal_number, whole_number
from core.options import CUTOFF_OPTION
from genderbias.stats.power import DEFAULT_DRAWS
from metrics.services import CostSettings, plan_study
from metrics.services.planning import DEFAULT_ALPHA, DEFAULT_AUDIT_SECONDS, DEFAULT_POWER

PROVIDER_NAMES = {"local": "in-house", "mturk": "MTurk", "prolific": "Prolific"}
#: The options passed to :func:`metrics.services.plan_study` under their own names.
_SAME_NAMED = ("cutoff", "variant", "report", "pool", "alpha", "draws", "seed", "audit_width", "audit_seconds")


def _money(text: str) -> Decimal:
    try:
        return Decimal(text)
    except InvalidOperation:
        raise argparse.ArgumentTypeError(f"{text!r} is not an amount of dollars") from None


class Command(ProjectCommand):
    help = (
        "A study plan before the crowd is paid: how many non-gendered queries the report's paired t-test "
        "needs to detect a difference DELTA between runs A and B on a metric with the given power, by "
        "simulation from a pilot's per-query differences (beside the normal formula); the minimum "
        "detectable difference and the power at the pilot's size; with --pool, the pooled queries to "
        "annotate (through the pool's non-gendered share) and their cost on each provider. The pilot: "
        "--report, else the newest report on --queries holding both runs at the cutoff, else the values "
        "computed on the fly over --queries (nothing stored). See docs/metrics.md, 'Planning a study'."
    )

    def add_arguments(self, parser):
        parser.add_argument("--queries", help="the pilot's query set (required unless --report is given)")
        parser.add_argument("--runs", required=True, help="the two runs compared, A,B (the difference is A − B)")
        parser.add_argument("--metric", required=True, help="e.g. ARaB, RaB, NFaiRR, TExFAIR, nDCG")
        add_option(parser, CUTOFF_OPTION)
        parser.add_argument(
            "--variant", help="the metric's variant (default: the paper's, tf for RaB/ARaB, rbdf for TExFAIR)"
        )
        parser.add_argument("--delta", type=decimal_number, required=True, help="the difference to detect, > 0")
        parser.add_argument(
            "--power", type=decimal_number, default=DEFAULT_POWER, help=f"wanted power 1 − β (default {DEFAULT_POWER})"
        )
        parser.add_argument(
            "--alpha", type=decimal_number, default=DEFAULT_ALPHA, help=f"level of the test (default {DEFAULT_ALPHA})"
        )
        parser.add_argument("--pool", help="the pool of candidate queries to annotate: adds pooled queries and cost")
        parser.add_argument("--report", help="the pilot report (default: see above)")
        parser.add_argument(
            "--draws",
            type=whole_number,
            default=DEFAULT_DRAWS,
            help=f"simulated studies (default {DEFAULT_DRAWS}: Monte-Carlo s.e. of a power ≈ 0.009)",
        )
        parser.add_argument("--seed", type=whole_number, default=0, help="seed of the simulation (default 0)")
        parser.add_argument("--reward", type=_money, default=Decimal("0.05"), help="USD per assignment (0.05)")
        parser.add_argument("--assignments", type=whole_number, default=3, help="workers per query (3)")
        parser.add_argument("--queries-per-hit", type=whole_number, default=10, help="queries per HIT (10)")
        parser.add_argument(
            "--audit-width",
            type=decimal_number,
            help="the audit-based 95%% interval's full width wanted for the difference (default: Δ)",
        )
        parser.add_argument(
            "--audit-seconds",
            type=decimal_number,
            default=DEFAULT_AUDIT_SECONDS,
            help=f"an expert's seconds to label one audited query (default {DEFAULT_AUDIT_SECONDS:g})",
        )
        parser.add_argument("--json", action="store_true", help="print the plan as JSON (progress still on stderr)")

    def handle(self, **o):
        runs = [name.strip() for name in o["runs"].split(",") if name.strip()]
        if len(runs) != 2:
            raise CommandError("--runs takes two runs, A,B")
        if not o["queries"] and not o["report"]:
            raise CommandError("give --queries (the pilot's query set) or --report")

        def step(stage: str, n: int, power: float) -> None:
            self.stderr.write(f"  {stage}: n = {n}: simulated power {power:.3f}")

        self.stderr.write(
            f"Simulating {o['draws']} studies, every size reading the same draws; then the chosen size on fresh ones…"
        )
        with command_errors(ValueError):
            plan = plan_study(
                runs[0],
                runs[1],
                o["metric"],
                o["delta"],
                query_set=o["queries"],
                power_target=o["power"],
                cost_settings=CostSettings(o["reward"], o["assignments"], o["queries_per_hit"]),
                on_step=step,
                bar=not o["json"],
                **{key: o[key] for key in _SAME_NAMED},
            )
        if o["json"]:
            self.stdout.write(json.dumps(plan, indent=2))
            return
        self.stdout.write("\n".join(describe(plan)))


def describe(plan: dict) -> list[str]:
    """The plan in words, for the terminal."""
    pilot = plan["pilot"]
    what = f"{pilot['metric']}@{pilot['cutoff']}"
    lines = [
        f"Pilot: {pilot['source']} (query set {pilot['query_set']}): {pilot['metric']}[{pilot['variant']}]"
        f"@{pilot['cutoff']} of {pilot['runs'][0]} − {pilot['runs'][1]} over {pilot['queries']} queries: "
        f"mean {pilot['mean_difference']:.4g}, sd {pilot['sd_difference']:.4g}",
        f"Test: {plan['test']}; α = {plan['alpha']}; {plan['draws']} simulated studies, every size reading "
        f"the same draws (Monte-Carlo s.e. of a power ≈ {plan['monte_carlo_se']:.3f})",
    ]
    if plan.get("note"):
        lines.append(f"Note: {plan['note']}.")
    if plan["n_queries"] is None:
        lines.append(f"Δ{what} = {plan['delta']:g} cannot be detected with {plan['power']:.0%} power within the limit.")
    else:
        search = plan["search"]
        stepped = (
            f", stepped up from {search['n']} where the re-estimate fell short"
            if search["n"] != plan["n_queries"]
            else ""
        )
        lines.append(
            f"To detect Δ{what} = {plan['delta']:g} with {plan['power']:.0%} power you need about "
            f"{plan['n_queries']} non-gendered queries: {plan['power_statement']}, re-estimated there on fresh "
            f"draws{stepped} (normal formula: {plan['n_queries_normal']})."
        )
    lines.append(
        f"At the pilot's {plan['current_n']} queries: minimum detectable difference "
        f"{plan['minimum_detectable_difference']:.4g} (normal {plan['minimum_detectable_difference_normal']:.4g}); "
        f"power for Δ = {plan['delta']:g}: {plan['power_at_current_n']:.3f} (normal {plan['power_at_current_n_normal']:.3f})."
    )
    if "pool" in plan:
        share = plan["non_gendered_share"]
        lines.append(
            f"Pool {plan['pool']}: non-gendered share {share['share']:.3f} (95% CI {share['ci_low']:.3f}–"
            f"{share['ci_high']:.3f}; {share['count']} of {share['total']}, {share['source']})."
        )
        if plan["pooled_to_annotate"] is not None:
            low, high = plan["pooled_to_annotate_range"]
            short = plan["pooled_to_annotate"] > plan["pool_queries"]
            lines.append(
                f"Annotate about {plan['pooled_to_annotate']} pooled queries ({low}–{high or '?'} over the share's "
                f"interval; the pool holds {plan['pool_queries']}"
                + (": too few, pool deeper or from more runs)." if short else ").")
            )
            settings = plan["cost_settings"]
            lines.append(
                f"Cost (${settings['reward']} × {settings['assignments_per_query']} assignments, "
                f"{settings['queries_per_hit']} queries per HIT): "
                + ", ".join(f"{PROVIDER_NAMES.get(p, p)} ${usd:,.2f}" for p, usd in plan["cost"].items())
            )
            machine = plan.get("machine")
            if machine:
                crowd = machine["crowd_share"]
                lines.append(
                    f"With machine pre-labelling (crowd share {crowd['share']:.3f}, 95% CI {crowd['ci_low']:.3f}–"
                    f"{crowd['ci_high']:.3f}, {crowd['source']}): about {machine['crowd_queries']} queries to the "
                    "crowd: "
                    + ", ".join(f"{PROVIDER_NAMES.get(p, p)} ${usd:,.2f}" for p, usd in machine["cost"].items())
                )
    audit = plan["audit"]
    whole = " (the whole batch: audit it all, the crowd adds nothing)" if audit["whole_batch"] else ""
    lines.append(
        f"Audit sample: {audit['size']} queries labelled by an expert{whole}, about {audit['hours']:.1f} h at "
        f"{audit['seconds_per_query']:g} s a query, for a 95% interval of the difference {audit['target_width']:g} "
        f"wide ({audit['target_width_source']}; {audit['size_for_width']} for the width, at least "
        f"{audit['minimum']}, the site's default audit; share {audit['non_gendered_share']:.3f}, "
        f"{audit['non_gendered_share_source']})."
    )
    return lines
