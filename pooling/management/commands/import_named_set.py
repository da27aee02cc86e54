from core.management.cli import ProjectCommand, command_errors, imported_parts, report_import
from genderbias.datasets import NAMED_SETS
from pooling.services import import_named_set, write_named_set_files


class Command(ProjectCommand):
    help = (
        "Import one of the field's data sets by name, with everything it has, from the files bundled "
        "with the product (no network): grep-biasir (Grep-BiasIR: queries with categories, documents in "
        "male, female and neutral wording, judgments), cpjku-msmarco and cpjku-trecdl (the bias-sensitive "
        "MS MARCO and TREC DL 2019 queries with their categories), rekabsaz-3750 (3,750 queries with the "
        "study's labels). The query set records the set's source, licence and citation. MS MARCO passages "
        "cannot be shipped: give your collection with --collection. The sets' known faults are repaired "
        "and listed with file and line. Importing again changes nothing."
    )

    def add_arguments(self, parser):
        parser.add_argument("set", choices=list(NAMED_SETS), help="the set's name")
        parser.add_argument("--name", default="", help="name of what it makes (default: the set's name)")
        parser.add_argument(
            "--collection",
            default="",
            help="an MS MARCO set's passages: your collection file, or the name of a collection already imported",
        )
        parser.add_argument(
            "--qrels", default="", help="your judgments of the set's queries (TREC qrels; needs --collection)"
        )
        parser.add_argument(
            "--out",
            default="",
            help="also write the set's texts into this folder for your own system to rank: queries.tsv "
            "(qid<TAB>query) and, for grep-biasir, collection.tsv (docid<TAB>text) and qrels.txt; then "
            "import_run your run with --collection the set's name",
        )

    def handle(self, **o):
        with command_errors():
            result = import_named_set(o["set"], o["name"], collection=o["collection"] or None, qrels=o["qrels"] or None)
        found = result.obj
        for note in result.notes:
            self.stdout.write(f"Note: {note}" if not note.endswith(":") else note)
        named = found.named
        report_import(self, result, f"{named.key}: " + imported_parts(found))
        self.stdout.write(f"Source: {named.url} ({named.source}); licence {named.licence}; cite {named.citation_key}")
        if o["out"]:
            with command_errors():
                written = write_named_set_files(found, o["out"])
            self.stdout.write(f"Wrote {', '.join(path.name for path in written)} to {o['out']}")
            if found.collection is not None:
                self.stdout.write(
                    f"Rank them with your system, then: manage.py import_run RUN --collection {found.collection.name}"
                )
