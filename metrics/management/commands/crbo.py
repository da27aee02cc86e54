from core.management.cli import ProjectCommand, add_option, command_errors, decimal_number, get_named_list, whole_number
from core.options import TIES_OPTION
from core.spreadsheet import write_csv
from genderbias.files.atomic import atomic_write, check_writable
from genderbias.ranking.defaults import CRBO_DEPTH as DEFAULT_DEPTH
from genderbias.ranking.defaults import CRBO_P as DEFAULT_P
from metrics.services import crbo_summary
from pooling.models import Run


class Command(ProjectCommand):
    help = (
        "Counterfactual RBO (Abolghasemi et al., ECIR 2024): the mean RBO_ext (Webber et al. 2010, "
        "Eq. 32) between a ranker's run on the collection and its run on the counterfactual collection "
        "(gendered words swapped; see counterfactual_collection), over the queries both contain. "
        "1 means swapping genders changed nothing in the top --depth."
    )

    def add_arguments(self, parser):
        parser.add_argument("--run", required=True, help="the ranker's run on the original collection")
        parser.add_argument(
            "--counterfactual-run", required=True, help="the same ranker's run on the counterfactual collection"
        )
        parser.add_argument(
            "--depth", type=whole_number, default=DEFAULT_DEPTH, help=f"ranks compared (default {DEFAULT_DEPTH})"
        )
        parser.add_argument(
            "--p", type=decimal_number, default=DEFAULT_P, help=f"RBO persistence p in (0, 1) (default {DEFAULT_P})"
        )
        add_option(parser, TIES_OPTION)
        parser.add_argument("--per-query", help="also write qid,rbo lines to this CSV file")

    def handle(self, **o):
        run, counterfactual = get_named_list(Run, [o["run"], o["counterfactual_run"]], "run")
        with command_errors():
            if o["per_query"]:
                check_writable(o["per_query"])
            summary = crbo_summary(run, counterfactual, depth=o["depth"], p=o["p"], ties=o["ties"])
        self.stdout.write(f"CRBO@{o['depth']} (p={o['p']}): {summary['crbo']:.4f} over {summary['queries']} queries")
        self.stdout.write(
            f"Tied documents: {summary['ties']}; {summary['tied_queries']} of the queries have a tie in a run's top "
            f"{o['depth']}"
            + (" (each query's RBO is its mean over the orders of ties)" if o["ties"] == "tie-aware" else "")
        )
        for warning in summary["warnings"]:
            self.stderr.write(f"Warning: {warning}")
        if o["per_query"]:
            rows = summary["per_query"]
            atomic_write(o["per_query"], lambda f: write_csv(f, ["qid", "rbo"], rows), newline="")
            self.stdout.write(f"Wrote per-query RBO to {o['per_query']}")
