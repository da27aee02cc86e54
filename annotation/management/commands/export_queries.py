from annotation.exports.services import export_queries
from annotation.management.commands._common import command_errors, get_batch
from annotation.results.export_formats import EXPORT_FORMATS, format_for_path
from core.management.cli import ProjectCommand
from genderbias.labels import EXPORT_CATEGORIES


class Command(ProjectCommand):
    help = (
        "Write a batch's queries of one category (majority vote, or a researcher's adjudication; disputed "
        "queries are otherwise never written as labelled) with a dataset card beside the file. tsv: qid<TAB>query; "
        "csv: qid,query,label,adjudicated,ds_posterior; "
        "jsonl: adds pseudonymous votes, method and agreement. --as also registers them as a query set."
    )

    def add_arguments(self, parser):
        parser.add_argument("name", help="batch name")
        parser.add_argument("--category", required=True, choices=EXPORT_CATEGORIES, help="which queries")
        parser.add_argument("--out", required=True, help="file to write")
        parser.add_argument(
            "--format", choices=list(EXPORT_FORMATS), default=None, help="default: from --out's ending (else tsv)"
        )
        parser.add_argument("--as", dest="as_query_set", metavar="QSET", help="register as a query set of this name")

    def handle(self, name, category, out, as_query_set, **o):
        batch = get_batch(name)
        fmt = o["format"] or format_for_path(out)
        with command_errors():
            export = export_queries(batch, category, out, fmt, as_query_set=as_query_set)
        set_aside = export.counts.get("set_aside", 0)
        self.stdout.write(
            self.style.SUCCESS(
                f"Wrote {export.queries} {category} queries to {export.path} ({fmt}); card: {export.card_path}"
            )
        )
        self.stdout.write(f"{set_aside} queries set aside (disputed or too few votes).")
        if export.query_set is not None:
            self.stdout.write(f"Registered as query set {export.query_set.name!r}.")
