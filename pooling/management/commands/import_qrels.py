from core.management.cli import ProjectCommand, command_errors, get_named, report_import
from pooling import services
from pooling.models import Collection, QuerySet


class Command(ProjectCommand):
    help = (
        "Register relevance judgments from a TREC qrels file ('qid 0 docid relevance' lines, graded "
        "integer relevance; gzip accepted) of queries of an imported query set over an imported "
        "collection. Importing the same file again changes nothing; a bad line refuses the file "
        "(every one listed) unless --skip-bad-lines."
    )

    def add_arguments(self, parser):
        parser.add_argument("path", help="qrels file")
        parser.add_argument("--name", required=True, help="name to refer to the judgments by")
        parser.add_argument("--queries", required=True, help="name of the imported query set they judge")
        parser.add_argument("--collection", required=True, help="name of the imported collection of the documents")
        parser.add_argument("--skip-bad-lines", action="store_true", help="skip malformed lines and report them")

    def handle(self, path, name, queries, collection, skip_bad_lines, **options):
        collection_obj = get_named(Collection, collection, "collection")
        query_set = get_named(QuerySet, queries, "query set")
        with command_errors():
            result = services.import_qrels(path, name, collection_obj, query_set, skip_bad_lines=skip_bad_lines)
        qrels = result.obj
        report_import(
            self,
            result,
            f"qrels {qrels.name!r}: {qrels.judgments:,} judgments of {qrels.queries:,} queries "
            f"({qrels.relevant:,} relevant)",
        )
