from pathlib import Path

from django.core.management.base import CommandError

from core.management.cli import ProjectCommand, command_errors, get_named
from genderbias.files.atomic import check_writable
from genderbias.ranking.counterfactual import HER_CHOICES, Swapper, swap_table, write_counterfactual
from genderbias.text.wordlists import load_wordlist
from metrics.services import default_representative_wordlist
from pooling.models import Collection


class Command(ProjectCommand):
    help = (
        "Write the counterfactual of a registered collection: every gendered word swapped for its "
        "counterpart (he<->she, himself<->herself, man<->woman, ...; his/him -> her, hers -> his, her -> his "
        "or him), and every first name of the word list swapped for a name of the other gender; case is "
        "kept (He -> She, HE -> SHE) and everything else is copied byte for byte. Gzipped output when "
        "--out ends in .gz. Import the result with import_collection and run the ranker on it for CRBO."
    )

    def add_arguments(self, parser):
        parser.add_argument("--collection", required=True, help="name of the registered collection")
        parser.add_argument("--out", required=True, help="path of the counterfactual collection (.gz to compress)")
        parser.add_argument(
            "--wordlist",
            help="'word,f|m' file whose first names are swapped (default: the built-in representative list)",
        )
        parser.add_argument("--her", choices=HER_CHOICES, default="his", help="what 'her' becomes (default his)")

    def handle(self, **o):
        collection = get_named(Collection, o["collection"], "collection")
        if collection.by_reference:
            raise CommandError(
                f"collection {collection.name!r} is registered by reference: give a pid<TAB>passage file's"
            )
        out = Path(o["out"])
        if out.resolve() == Path(collection.path).resolve():
            raise CommandError("--out must not be the collection itself")
        with command_errors():
            check_writable(out)
            words = load_wordlist(o["wordlist"]) if o["wordlist"] else default_representative_wordlist()
        swapper = Swapper(swap_table(words.words.items(), her=o["her"]))
        source = Path(collection.path)
        from tqdm import tqdm  # here: a command's --help need not load it

        with tqdm(
            total=source.stat().st_size, unit="B", unit_scale=True, desc="Swapping", disable=o["verbosity"] == 0
        ) as bar:

            def progress(done: int) -> None:
                bar.update(done - bar.n)

            lines = write_counterfactual(source, out, swapper, progress=progress)
        self.stdout.write(self.style.SUCCESS(f"Wrote {lines:,} passages to {out} ({len(swapper.table)} swap rules)"))
