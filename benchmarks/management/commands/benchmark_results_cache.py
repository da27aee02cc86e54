"""The results cache through answer-and-view cycles: its size beside its bound (issue 44.2).

Builds (or reuses) a published in-house batch of ``--queries`` made-up queries, then repeats ``--cycles`` times:
an annotator submits one HIT's answers (a new answers version) and a researcher views the batch's live page,
which stores the figures of the new answers. Every ``--every`` cycles it prints what the results cache holds
(the ledger, ``core.db.bounded_cache``, and the table as the database holds it) beside
``RESULTS_CACHE_MAX_BYTES``: without the bound, the table would grow by every cycle's figures. Run it on a
throw-away database.
"""

import time

from django.conf import settings
from django.core.management.base import CommandError
from django.db import connection

from annotation import services
from annotation.models import Batch
from benchmarks.site_server import refuse_real_batches, researcher_client
from core.db import bounded_cache
from core.management.cli import ProjectCommand
from core.models import CacheEntry
from platforms.inhouse.services.annotators import create_annotator
from platforms.inhouse.services.handout import next_assignment
from platforms.inhouse.services.hit_page import submit_local_assignment
from tests.support.batches import made_up_batch

PREFIX = "cache-"
LABELS = ("n", "f", "m", "o")


class Command(ProjectCommand):
    help = (
        "Answer-and-view cycles on a batch of --queries queries: one HIT answered, then the live page "
        "viewed; prints the results cache's size (ledger and table) every --every cycles beside its bound."
    )

    def add_arguments(self, parser):
        parser.add_argument("--queries", type=int, default=5000, help="queries of the batch (5000)")
        parser.add_argument("--cycles", type=int, default=1000, help="answer-and-view cycles (1000)")
        parser.add_argument("--every", type=int, default=100, help="print the cache's size every N cycles (100)")
        parser.add_argument("--bound", type=int, default=None, help="RESULTS_CACHE_MAX_BYTES for this run")

    def handle(self, *args, queries, cycles, every, bound, **options):
        refuse_real_batches(PREFIX)
        if bound is not None:
            settings.RESULTS_CACHE_MAX_BYTES = bound
        name = f"{PREFIX}{queries}"
        batch = Batch.objects.filter(name=name).first()
        if batch is None:
            batch = made_up_batch(name, queries, services.BatchSettings())
            services.publish_batch(batch)
        annotators = [
            create_annotator(f"{PREFIX}ann-{i}-{time.time_ns()}", password="cache-bench-pw-1") for i in range(3)
        ]
        client = researcher_client(f"{PREFIX}researcher", "cache-bench-pw-1")
        limit = settings.RESULTS_CACHE_MAX_BYTES
        self.stdout.write(
            f"batch {name}: {queries:,} queries; bound RESULTS_CACHE_MAX_BYTES = {limit:,} bytes; {connection.vendor}"
        )
        self.stdout.write(
            f"{'cycles':>7} {'entries':>8} {'ledger bytes':>13} {'table rows':>11} {'table bytes':>12} "
            f"{'bound':>12} {'under':>6} {'stored in all':>14} {'s/cycle':>8}"
        )
        started, peak = time.monotonic(), 0
        seen: set[str] = set()
        stored = 0  # what the table would hold had nothing been removed (every entry ever stored)
        for cycle in range(1, cycles + 1):
            annotator = annotators[cycle % len(annotators)]
            assignment = next_assignment(annotator, batch)
            if assignment is None:
                raise CommandError(f"no HIT left to answer after {cycle - 1} cycles: use more queries")
            answers = {
                hq.field_name: LABELS[(cycle + i) % len(LABELS)]
                for i, hq in enumerate(assignment.hit.hit_queries.all())
            }
            submit_local_assignment(assignment, answers)
            response = client.get(f"/annotation/batches/{batch.name}/live/")
            if response.status_code != 200:
                raise CommandError(f"the live page answered {response.status_code}")
            for key, weight in CacheEntry.objects.filter(cache="results").values_list("key", "bytes"):
                if key not in seen:
                    seen.add(key)
                    stored += weight
            entries, held = bounded_cache.size("results")
            rows, table = _table()
            peak = max(peak, table)
            if cycle % every == 0 or cycle == cycles:
                per = (time.monotonic() - started) / cycle
                self.stdout.write(
                    f"{cycle:>7} {entries:>8} {held:>13,} {rows:>11} {table:>12,} {limit:>12,} "
                    f"{'yes' if held <= limit else 'NO':>6} {stored:>14,} {per:>8.2f}"
                )
        self.stdout.write(f"largest table size seen after a cycle: {peak:,} bytes (bound {limit:,})")


def _table() -> tuple[int, int]:
    """Rows and bytes of the results cache's table (the base64 text the database cache stores)."""
    if "DatabaseCache" not in settings.CACHES["results"]["BACKEND"]:
        return 0, 0
    with connection.cursor() as cursor:
        cursor.execute("SELECT COUNT(*), COALESCE(SUM(LENGTH(value)), 0) FROM results_cache")
        rows, size = cursor.fetchone()
    return rows, size
