from core.management.cli import ProjectCommand, command_errors, imported_parts, report_import
from pooling import services


class Command(ProjectCommand):
    help = (
        "Import a dataset of the ir_datasets package by its id (e.g. msmarco-passage/dev/small): its "
        "documents as a collection, its queries as a query set and its qrels as qrels of both, each "
        "part it has, all under --name. ir_datasets downloads and caches the dataset itself (under "
        "IR_DATASETS_HOME, default ~/.ir_datasets). Importing the same dataset again changes nothing."
    )

    def add_arguments(self, parser):
        parser.add_argument("dataset", help="ir_datasets id, e.g. msmarco-passage/dev/small")
        parser.add_argument("--name", required=True, help="name of the collection, query set and qrels")
        parser.add_argument("--skip-bad-lines", action="store_true", help="skip malformed records and report them")
        parser.add_argument(
            "--by-reference",
            action="store_true",
            help="do not write the documents out: read them through the dataset's docstore, by id, as needed",
        )

    def handle(self, dataset, name, skip_bad_lines, by_reference, **options):
        with command_errors():
            result = services.import_dataset(dataset, name, skip_bad_lines=skip_bad_lines, by_reference=by_reference)
        found = result.obj
        for note in result.notes:
            self.stdout.write(f"Note: {note}")
        report_import(self, result, f"{found.dataset_id} (ir_datasets {found.version}): " + imported_parts(found))
