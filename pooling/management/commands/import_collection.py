from core.management.cli import ProjectCommand, command_errors, report_import
from pooling import services


class Command(ProjectCommand):
    help = (
        "Register a passage collection: a file of 'pid<TAB>passage' lines (gzip accepted), "
        "e.g. MS MARCO's collection.tsv. The text stays in the file; one streaming pass checks "
        "every line, counts passages, hashes the file and indexes the pids. Importing the same "
        "file again changes nothing. With --by-reference, PATH is a folder of MS MARCO v2 passage "
        "bundles (msmarco_passage_00 … _69, as ir_datasets extracts them): nothing is scanned, and "
        "pools and reports read just the passages the runs rank, by their ids."
    )

    def add_arguments(self, parser):
        parser.add_argument("path", help="collection file (.tsv or .tsv.gz), or with --by-reference a folder")
        parser.add_argument("--name", required=True, help="name to refer to the collection by")
        parser.add_argument("--skip-bad-lines", action="store_true", help="skip malformed lines and report them")
        parser.add_argument(
            "--by-reference",
            action="store_true",
            help="register a folder of MS MARCO v2 passage bundles without reading it (texts read by id)",
        )

    def handle(self, path, name, skip_bad_lines, by_reference, **options):
        with command_errors():
            if by_reference:
                result = services.register_collection_by_reference(path, name, kind="msmarco-v2")
            else:
                result = services.import_collection(
                    path, name, skip_bad_lines=skip_bad_lines, bar=options["verbosity"] > 0
                )
        c = result.obj
        if c.by_reference:  # none read: say so, with what its metadata says (ImportResult.outcome's words)
            passages = result.outcome() if result.created else "by reference, 0 passages read"
        else:
            passages = f"{c.passages:,} passages"
        report_import(self, result, f"collection {c.name!r}: {passages}, {c.size:,} bytes, sha256 {c.sha256[:12]}…")
