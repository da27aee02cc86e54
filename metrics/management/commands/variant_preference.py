from core.management.cli import ProjectCommand, command_errors, get_named, name_list
from metrics.defaults import VARIANT_VERSIONS as VERSIONS
from pooling.models import Run


class Command(ProjectCommand):
    help = (
        "Paired-variant preference (Sundararaman & Subramanian 2022): for a run over documents given in "
        "male, female and neutral versions (docids '<doc><sep><version>', e.g. 123-m, 123-f, 123-n), the "
        "fraction of (query, document) cases in which each version scored highest. Ties for the highest "
        "score and cases lacking a version are set aside and counted."
    )

    def add_arguments(self, parser):
        parser.add_argument("--run", required=True, help="run name")
        parser.add_argument("--separator", default="-", help="separator before the version suffix (default '-')")
        parser.add_argument("--versions", default=",".join(VERSIONS), help="version suffixes (default m,f,n)")

    def handle(self, **o):
        # Here, not at the top: the services (and what they load) are not needed by --help.
        from metrics.services import preference_summary

        run = get_named(Run, o["run"], "run")
        with command_errors():
            result = preference_summary(run, separator=o["separator"], versions=name_list(o["versions"]))
        self.stdout.write(
            f"{result['cases']} cases: {result['decided']} decided, {result['ties']} tied, "
            f"{result['incomplete']} incomplete"
        )
        for version, won in result["wins"].items():
            fraction = "nan" if won["fraction"] is None else f"{won['fraction']:.3f}"
            self.stdout.write(f"  {version}: {won['wins']:>6}  {fraction}")
