from core.management.cli import ProjectCommand, add_option, command_errors, get_named, get_named_list, name_list
from core.options import BOOTSTRAP_OPTION, CUTOFF_OPTION, SEED_OPTION
from metrics import services
from metrics.models import Report
from pooling.models import QuerySet, Run


class Command(ProjectCommand):
    help = (
        "The same runs on several query sets (e.g. the named sets): each set's ranking of the runs by one "
        "metric, fairest first, and the agreement between every two sets' orders (Kendall's tau-b with a "
        "bootstrap interval over queries). Give a stored report per set (--report, repeated), or the sets "
        "(--set QUERYSET, repeated, with --runs; --set QUERYSET=RUN,RUN,... for a set ranked by other runs "
        "of the same rankers, in the same order): a report per set is then built (named --prefix-QUERYSET) "
        "or reused."
    )

    def add_arguments(self, parser):
        parser.add_argument("--report", action="append", default=[], help="a report of one set (repeat)")
        parser.add_argument("--set", action="append", default=[], help="QUERYSET or QUERYSET=RUN,RUN,... (repeat)")
        parser.add_argument("--runs", default="", help="the runs every --set without its own is scored with")
        parser.add_argument("--prefix", default="across", help="name prefix of the reports --set builds")
        parser.add_argument("--metric", default="ARaB", help="metric to rank the runs by (default ARaB)")
        parser.add_argument("--variant", default="", help="its variant (default: its paper's, e.g. tf)")
        add_option(parser, CUTOFF_OPTION)
        add_option(parser, BOOTSTRAP_OPTION, "--samples")  # the reports' bootstrap, declared once
        add_option(parser, SEED_OPTION)

    def handle(self, **o):
        reports = [get_named(Report, name, "report") for name in o["report"]]
        if o["set"]:
            default_runs = name_list(o["runs"])
            specs = []
            for spec in o["set"]:
                name, _, runs = spec.partition("=")
                runs = name_list(runs) or default_runs
                query_set = get_named(QuerySet, name.strip(), "query set")
                specs.append((query_set, get_named_list(Run, runs, "run")))
            with command_errors():
                reports += services.build_set_reports(specs, o["prefix"], cutoffs=[o["cutoff"]])
        with command_errors():
            result = services.compare_reports(
                reports, o["metric"], variant=o["variant"], cutoff=o["cutoff"], samples=o["samples"], seed=o["seed"]
            )
        self.print_comparison(result)

    def print_comparison(self, result: dict) -> None:
        level = round(100 * result["level"])
        self.stdout.write(
            f"{result['metric']}@{result['cutoff']} ({result['variant']}): {result['direction']}; runs fairest first; "
            f"{level}% bootstrap intervals over queries ({result['samples']} replicates, seed {result['seed']})"
        )
        for described in result["sets"]:
            source = f", {described['source']}" if described.get("source") else ""
            dropped = f", {described['left_out']} left out (not returned by every run)" if described["left_out"] else ""
            self.stdout.write(
                f"\n{described['query_set']} (report {described['report']}{source}): "
                f"{described['queries']} queries{dropped}"
            )
            by_system = {run["system"]: run for run in described["runs"]}
            for rank, system in enumerate(described["order"], 1):
                run = by_system[system]
                self.stdout.write(
                    f"  {rank:>2}. {system:<30} {run['mean']:+.4f}  [{run['ci'][0]:+.4f}, {run['ci'][1]:+.4f}]"
                )
        self.stdout.write("\nAgreement between the sets' orders (Kendall's tau-b):")
        for pair in result["pairs"]:
            tau = "undefined" if pair["tau"] is None else f"{pair['tau']:+.3f}"
            ci = pair["ci"]
            interval = "" if ci[0] is None else f"  [{ci[0]:+.3f}, {ci[1]:+.3f}]"
            self.stdout.write(f"  {pair['a']} vs {pair['b']}: tau {tau}{interval}")
        if result["mean_tau"] is not None:
            self.stdout.write(f"Mean tau over the pairs: {result['mean_tau']:+.3f}")
