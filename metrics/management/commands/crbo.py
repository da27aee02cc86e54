from django.core.management.base import BaseCommand, CommandError

from core.cli import command_errors
from core.files import atomic_write, check_writable
from metrics.rbo import DEFAULT_DEPTH, DEFAULT_P, crbo
from pooling.models import Run
from pooling.services import run_frame


class Command(BaseCommand):
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
            "--depth", type=int, default=DEFAULT_DEPTH, help=f"ranks compared (default {DEFAULT_DEPTH})"
        )
        parser.add_argument(
            "--p", type=float, default=DEFAULT_P, help=f"RBO persistence p in (0, 1) (default {DEFAULT_P})"
        )
        parser.add_argument("--per-query", help="also write qid,rbo lines to this CSV file")

    def handle(self, **o):
        runs = {}
        for option in ("run", "counterfactual_run"):
            try:
                runs[option] = Run.objects.get(name=o[option])
            except Run.DoesNotExist:
                raise CommandError(f"unknown run {o[option]!r}") from None
        if o["per_query"]:
            with command_errors():
                check_writable(o["per_query"])
        try:
            mean, queries, per_query = crbo(
                run_frame(runs["run"]), run_frame(runs["counterfactual_run"]), p=o["p"], depth=o["depth"]
            )
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        if not queries:
            raise CommandError("the two runs have no query in common")
        self.stdout.write(f"CRBO@{o['depth']} (p={o['p']}): {mean:.4f} over {queries} queries")
        if o["per_query"]:
            csv = per_query.rename("rbo").to_csv(index_label="qid")
            atomic_write(o["per_query"], lambda f: f.write(csv), newline="")
            self.stdout.write(f"Wrote per-query RBO to {o['per_query']}")
