from core.management.cli import ProjectCommand, command_errors, report_import
from pooling import services


class Command(ProjectCommand):
    help = (
        "Register a passage collection: a file of 'pid<TAB>passage' lines (gzip accepted), "
        "e.g. MS MARCO's collection.tsv. The text stays in the file; one streaming pass checks "
        "every line, counts passages, hashes the file and indexes the pids. Importing the same "
        "file again changes nothing."
    )

    def add_arguments(self, parser):
        parser.add_argument("path", help="collection file (.tsv or .tsv.gz)")
        parser.add_argument("--name", required=True, help="name to refer to the collection by")
        parser.add_argument("--skip-bad-lines", action="store_true", help="skip malformed lines and report them")

    def handle(self, path, name, skip_bad_lines, **options):
        with command_errors():
            result = services.import_collection(path, name, skip_bad_lines=skip_bad_lines, bar=options["verbosity"] > 0)
        c = result.obj
        report_import(
            self, result, f"collection {c.name!r}: {c.passages:,} passages, {c.size:,} bytes, sha256 {c.sha256[:12]}…"
        )
