from django.core.management.base import CommandError

from core.cli import ProjectCommand, get_named
from metrics.preference import VERSIONS, split_versions, variant_preference
from pooling.models import Run
from pooling.services import run_frame


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
        run = get_named(Run, o["run"], "run")
        versions = [v.strip() for v in o["versions"].split(",") if v.strip()]
        scores = split_versions(run_frame(run), o["separator"], versions)
        if not len(scores):
            raise CommandError(f"no docid of {run.name!r} ends in {o['separator']}<{'|'.join(versions)}>")
        result = variant_preference(scores, versions)
        self.stdout.write(
            f"{result.cases} cases: {result.decided} decided, {result.ties} tied, {result.incomplete} incomplete"
        )
        for version in versions:
            self.stdout.write(f"  {version}: {result.wins[version]:>6}  {result.fraction(version):.3f}")
