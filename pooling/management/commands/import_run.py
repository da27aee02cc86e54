from core.cli import ProjectCommand, command_errors, get_named, report_import
from pooling import services
from pooling.models import Collection, Run


class Command(ProjectCommand):
    help = (
        "Register a TREC run ('qid Q0 docid rank score tag', any whitespace) over an imported "
        "collection. Documents are ranked by score descending, ties by docid descending "
        "(trec_eval's rule); --order file keeps the file's order as the reference notebooks did."
    )

    def add_arguments(self, parser):
        parser.add_argument("path", help="TREC run file (gzip accepted)")
        parser.add_argument("--name", required=True, help="name to refer to the run by (e.g. bm25)")
        parser.add_argument("--collection", required=True, help="name of the imported collection the run ranks")
        parser.add_argument(
            "--order", choices=[o.value for o in Run.Order], default=Run.Order.SCORE, help="rank order (default: score)"
        )
        parser.add_argument("--skip-bad-lines", action="store_true", help="skip malformed lines and report them")

    def handle(self, path, name, collection, order, skip_bad_lines, **options):
        collection_obj = get_named(Collection, collection, "collection")
        with command_errors():
            result = services.import_run(path, name, collection_obj, order=order, skip_bad_lines=skip_bad_lines)
        run = result.obj
        report_import(self, result, f"run {run.name!r}: {run.queries:,} queries, {run.rows:,} rows")
        if run.reordered_ties:
            how = "ranked by docid descending" if run.order == Run.Order.SCORE else "kept in file order (--order file)"
            self.stdout.write(
                f"Tied scores: {run.reordered_ties:,} queries had ties that the file ordered differently; {how}."
            )
