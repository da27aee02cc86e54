from core.management.cli import ProjectCommand, command_errors, report_import
from pooling import services


class Command(ProjectCommand):
    help = (
        "Register a query set from a query file: 'qid<TAB>query' lines, a CSV or TSV with a header, or the "
        "study's 'qid,query,label' (with or without its header; the labels are kept, for gold questions and "
        "test sets). Importing the same file again changes nothing."
    )

    def add_arguments(self, parser):
        parser.add_argument("path", help="query file (.tsv, .csv; .gz accepted)")
        parser.add_argument("--name", required=True, help="name to refer to the query set by")
        parser.add_argument("--skip-bad-lines", action="store_true", help="skip malformed lines and report them")
        parser.add_argument("--qid-column", help="the id column: a header name or a number (default: guessed)")
        parser.add_argument("--query-column", help="the query column: a header name or a number (default: guessed)")
        parser.add_argument("--label-column", help="the label column, or none (default: guessed)")

    def handle(self, path, name, skip_bad_lines, qid_column, query_column, label_column, **options):
        chosen = {"qid": qid_column, "query": query_column, "label": label_column}
        with command_errors():
            result = services.import_queries(
                path, name, skip_bad_lines=skip_bad_lines, columns={k: v for k, v in chosen.items() if v}
            )
        labelled = result.obj.queries.exclude(label="").count()
        labels = f", {labelled:,} labelled (gold: --gold queries:{name})" if labelled else ""
        report_import(self, result, f"query set {result.obj.name!r}: {result.obj.queries.count():,} queries{labels}")
