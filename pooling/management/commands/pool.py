from pathlib import Path

from django.core.management.base import CommandError

from core.management.cli import (
    ProjectCommand,
    add_option,
    command_errors,
    get_named,
    get_named_list,
    name_list,
    whole_number,
)
from core.options import TIES_OPTION
from genderbias.files.atomic import check_writable
from genderbias.text.tokenize import DEFAULT_TOKENIZER, TOKENIZERS
from genderbias.text.wordlists import load_wordlist
from pooling import selectors, services
from pooling.analysis import MAGNITUDES
from pooling.management.commands.import_run import run_name
from pooling.models import Collection, QuerySet, Run


class Command(ProjectCommand):
    help = (
        "Pool the most gender-biased queries: per run, RaB@cutoff of every query of the query set "
        "the run contains; a female-leaning list (most negative first) and a male-leaning list "
        "(most positive first); the union of the top --depth of every list. Stored as a pool and "
        "as a query set of the same name. For a first pool in one process, give files instead of "
        "names: --queries queries.tsv, --runs bm25.trec,bert.tsv with --collection collection.tsv; "
        "each is registered first (as import_queries/import_run/import_collection would, named after "
        "its file, unchanged if already imported)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--name", required=True, help="name of the new pool (and of its query set)")
        parser.add_argument("--queries", required=True, help="name (or file) of the query set to pool from")
        parser.add_argument("--runs", required=True, help="comma-separated run names (or run files)")
        parser.add_argument(
            "--collection", help="collection name (or file) the run files rank; needed only when --runs has files"
        )
        parser.add_argument("--rank-cutoff", type=whole_number, default=10, help="t of RaB@t (default 10)")
        parser.add_argument(
            "--depth", type=whole_number, default=500, help="queries taken from the top of each list (default 500)"
        )
        parser.add_argument(
            "--magnitude", choices=MAGNITUDES, default="tf", help="gender magnitude (default tf = ln(1+count))"
        )
        parser.add_argument(
            "--tokenizer",
            choices=TOKENIZERS,
            default=DEFAULT_TOKENIZER,
            help="words (default) or whitespace (the reference code's split)",
        )
        add_option(parser, TIES_OPTION)
        parser.add_argument("--wordlist", help="'word,f|m' file (default: the 32+32 definitional words)")
        parser.add_argument("--out", help="also write the pooled queries as 'qid<TAB>query' lines to this file")
        parser.add_argument(
            "--queue", action="store_true", help="queue as a Celery task and return at once (needs CELERY_BROKER_URL)"
        )

    def handle(self, **o):
        with command_errors():
            self._register_files(o)
        query_set = get_named(QuerySet, o["queries"], "query set")
        runs = get_named_list(Run, name_list(o["runs"]), "run")
        settings = services.PoolSettings(o["rank_cutoff"], o["depth"], o["magnitude"], o["tokenizer"], o["ties"])
        with command_errors():
            settings.validate()
            if o["out"]:
                check_writable(o["out"])  # before the work, not after it
            words = load_wordlist(o["wordlist"]) if o["wordlist"] else None
            if o["queue"]:
                job = services.start_pool(o["name"], query_set, runs, settings, o["wordlist"] or "")
                self.stdout.write(
                    f"Queued as job {job.pk}; follow it at /jobs/{job.pk}/ (JSON: /jobs/{job.pk}/progress.json)"
                )
                return
            pool = services.build_pool(o["name"], query_set, runs, settings, words, bar=o["verbosity"] > 0)
        summary = selectors.pool_summary(pool)
        self.stdout.write(
            self.style.SUCCESS(f"Pool {pool.name!r}: {summary['size']:,} unique queries from {2 * len(runs)} lists")
        )
        for row in summary["per_list"]:
            self.stdout.write(
                f"  {row['run']:<20} female {row['female']:>5}  male {row['male']:>5}  only in this run {row['only_here']:>5}"
            )
        if o["out"]:
            written = services.write_query_file(pool.queries, o["out"])
            self.stdout.write(f"Wrote {written:,} queries to {o['out']}")

    def _register_files(self, o: dict) -> None:
        """Register the files given instead of names (idempotent) and put their names in ``o``."""
        if _is_file(o["queries"]):
            o["queries"] = services.import_queries(o["queries"], run_name(o["queries"])).obj.name
        entries = [n.strip() for n in o["runs"].split(",") if n.strip()]
        files = [e for e in entries if _is_file(e)]
        if not files:
            return
        if not o["collection"]:
            raise CommandError("--runs names files: give --collection (the collection's name or file)")
        if _is_file(o["collection"]):
            path = o["collection"]
            collection = services.import_collection(path, run_name(path), bar=o["verbosity"] > 0).obj
        else:
            collection = get_named(Collection, o["collection"], "collection")
        known = services.known_docids(collection)  # prepared once for every run
        for path in files:
            services.import_run(path, run_name(path), collection, known=known)
        o["runs"] = ",".join(run_name(e) if _is_file(e) else e for e in entries)


def _is_file(value: str | None) -> bool:
    """A value names a file (rather than a registered name) when it has a suffix and exists."""
    return bool(value) and bool(Path(value).suffix) and Path(value).is_file()
