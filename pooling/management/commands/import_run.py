from pathlib import Path

from django.core.management.base import CommandError

from core.errors import ServiceError
from core.management.cli import ProjectCommand, command_errors, get_named, report_import, whole_number
from core.services.names import validate_name
from genderbias.files.runformats import RUN_FORMATS
from pooling import services
from pooling.models import Collection, Run


class Command(ProjectCommand):
    help = (
        "Register one or more runs over an imported collection: TREC runs ('qid Q0 docid rank "
        "score tag') or MS MARCO runs ('qid docid rank'), any whitespace, detected from the first "
        "line or chosen with --format. Documents are ranked by score descending, ties by docid "
        "descending (trec_eval's rule); --order file keeps the file's order as the reference "
        "notebooks did. A query's lines may be interleaved with other queries' (trec_eval accepts "
        "this); they are gathered and the summary says so. Several files in one command share "
        "the start-up; each file is its own all-or-nothing import, so after an error, run the "
        "same command again: the runs already imported are left unchanged."
    )

    def add_arguments(self, parser):
        parser.add_argument("paths", nargs="+", metavar="path", help="run file(s) (gzip accepted)")
        parser.add_argument(
            "--name",
            help="name to refer to the run by (e.g. bm25); with several files, each is named after its file "
            "(bm25.trec -> bm25)",
        )
        parser.add_argument("--collection", required=True, help="name of the imported collection the runs rank")
        parser.add_argument(
            "--order", choices=[o.value for o in Run.Order], default=Run.Order.SCORE, help="rank order (default: score)"
        )
        parser.add_argument(
            "--format", dest="run_format", choices=RUN_FORMATS, default="auto", help="run format (default: auto)"
        )
        parser.add_argument("--skip-bad-lines", action="store_true", help="skip malformed lines and report them")
        parser.add_argument(
            "--chunks",
            type=whole_number,
            help="hand reading each file to Celery workers, split into this many byte ranges read in "
            "parallel (start workers first: docs/deployment.md), and over a collection by reference the "
            "ranked passages' texts read by as many workers, split by bundle file; a chunk whose worker is "
            "lost is read again by the next try (default: all in this process)",
        )

    def handle(self, paths, name, collection, order, run_format, skip_bad_lines, chunks, **options):
        if chunks is not None and chunks < 1:
            raise CommandError("--chunks must be at least 1")
        if name and len(paths) > 1:
            raise CommandError("--name names one run; with several files each run is named after its file")
        collection_obj = get_named(Collection, collection, "collection")
        names = [name] if name else [run_name(path) for path in paths]
        with command_errors():
            for n in names:
                validate_name(n, "run")
            known = None if chunks else services.known_docids(collection_obj)  # prepared once for every file
        imported = []
        for path, run_name_ in zip(paths, names, strict=True):
            with command_errors():
                result = services.import_run(
                    path,
                    run_name_,
                    collection_obj,
                    order=order,
                    skip_bad_lines=skip_bad_lines,
                    run_format=run_format,
                    chunks=chunks,
                    known=known,
                )
            run = result.obj
            imported.append(run)
            report_import(self, result, f"run {run.name!r}: {run.queries:,} queries, {run.rows:,} rows")
            for note in result.notes:
                self.stdout.write(f"  {note}")

        known = None  # the collection's docids, no longer needed
        try:
            counted = services.count_pool_passages(imported, bar=options["verbosity"] > 0, chunks=chunks)
        except ServiceError as error:  # the runs are imported; only the counting ahead is missing
            self.stderr.write(f"Gender words not counted ahead for pooling: {error}")
        else:
            if counted:
                self.stdout.write(
                    f"Counted gender words ahead for pooling in {counted:,} passages (the runs' top "
                    f"{services.PoolSettings().rank_cutoff}, the built-in word list, every tokenizer)."
                )


def run_name(path: str) -> str:
    """A run's default name: its file name without suffixes (``bm25.trec.gz`` -> ``bm25``)."""
    return Path(path).name.split(".")[0]
