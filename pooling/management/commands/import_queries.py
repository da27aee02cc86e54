from core.management.cli import ProjectCommand, command_errors, report_import
from pooling import services


class Command(ProjectCommand):
    help = "Register a query set from a file of 'qid<TAB>query' lines. Importing the same file again changes nothing."

    def add_arguments(self, parser):
        parser.add_argument("path", help="query file (.tsv)")
        parser.add_argument("--name", required=True, help="name to refer to the query set by")
        parser.add_argument("--skip-bad-lines", action="store_true", help="skip malformed lines and report them")

    def handle(self, path, name, skip_bad_lines, **options):
        with command_errors():
            result = services.import_queries(path, name, skip_bad_lines=skip_bad_lines)
        report_import(self, result, f"query set {result.obj.name!r}: {result.obj.queries.count():,} queries")
