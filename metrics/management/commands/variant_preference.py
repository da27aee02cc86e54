from core.management.cli import ProjectCommand, command_errors, get_named, name_list
from genderbias.ranking.defaults import VARIANT_VERSIONS as VERSIONS
from metrics.services import preference_summary
from pooling.models import Run


class Command(ProjectCommand):
    help = (
        "Paired-variant preference (Sundararaman & Subramanian 2022): for a run over documents given in "
        "male, female and neutral versions (docids '<doc><sep><version>', e.g. 123-m, 123-f, 123-n), the "
        "fraction of (query, document) cases in which each version scored highest. Ties for the highest "
        "score and cases lacking a version are set aside and counted. A run over Grep-BiasIR's documents "
        "(import_named_set grep-biasir) is read by the set's own wordings: each query's relevant and "
        "non-relevant document in male, female and neutral wording."
    )

    def add_arguments(self, parser):
        parser.add_argument("--run", required=True, help="run name")
        parser.add_argument("--separator", default="-", help="separator before the version suffix (default '-')")
        parser.add_argument("--versions", default=",".join(VERSIONS), help="version suffixes (default m,f,n)")
        parser.add_argument(
            "--per-query", action="store_true", help="each case: which version won and where the run ranked each"
        )

    def handle(self, **o):
        run = get_named(Run, o["run"], "run")
        with command_errors():
            result = preference_summary(run, separator=o["separator"], versions=name_list(o["versions"]))
        self.stdout.write(f"Versions read from {result['versions_from']}")
        self.stdout.write(
            f"{result['cases']} cases: {result['decided']} decided, {result['ties']} tied, "
            f"{result['incomplete']} incomplete"
        )
        for version, won in result["wins"].items():
            fraction = "nan" if won["fraction"] is None else f"{won['fraction']:.3f}"
            self.stdout.write(f"  {version}: {won['wins']:>6}  {fraction}")
        if o["per_query"]:
            versions = result["versions"]
            self.stdout.write("qid\tcase\twinner\t" + "\t".join(f"rank {v}" for v in versions))
            for case in result["per_query"]:
                ranks = "\t".join("-" if case["ranks"][v] is None else str(case["ranks"][v]) for v in versions)
                self.stdout.write(f"{case['qid']}\t{case['item']}\t{case['winner']}\t{ranks}")
