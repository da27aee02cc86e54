import os
import time

from django.core.management.base import CommandError
from django.db import connection

from annotation import services
from annotation.models import Assignment, Batch, Judgment
from benchmarks.site_load import PREFIX, LoadResult, format_table, run_annotators, step_rows
from benchmarks.site_server import annotator_accounts, refuse_real_batches, served
from core.management.cli import ProjectCommand, command_errors
from tests.support.batches import made_up_batch

PASSWORD = "load-benchmark-password"


class Command(ProjectCommand):
    help = (
        "Load benchmark of the in-house annotation site: N virtual annotators at once, for D seconds, against "
        "gunicorn on the configured database (DATABASE_URL). Each logs in through the login form, asks for its "
        "next HIT and submits answers, again and again. Prints the error rate (target 0), the judgments stored "
        "against the submissions accepted, and p50/p95/p99 of each step. Run it on a throw-away database: "
        "bin/benchmark-load makes one on PostgreSQL and one on SQLite and runs this on both."
    )

    def add_arguments(self, parser):
        parser.add_argument("--annotators", type=int, default=50, help="virtual annotators at once (default 50)")
        parser.add_argument("--duration", type=float, default=300, help="seconds of load (default 300)")
        parser.add_argument(
            "--hits", type=int, default=400, help="HITs in the batch; every annotator may do each (default 400)"
        )
        parser.add_argument("--queries-per-hit", type=int, default=5, help="queries per HIT (default 5)")
        parser.add_argument(
            "--workers",
            type=int,
            default=2 * (os.cpu_count() or 1) + 1,
            help="gunicorn worker processes (default 2 x cores + 1)",
        )
        parser.add_argument("--threads", type=int, default=4, help="threads per gunicorn worker (default 4)")
        parser.add_argument(
            "--burst",
            type=int,
            default=0,
            help="launch burst instead: this many Prolific participants (no account) arriving over --over seconds, "
            "each doing one HIT through the study link, their arrival confirmed with a Prolific-compatible "
            "server run in this process (tests/platforms/prolific/fake_server.py)",
        )
        parser.add_argument("--over", type=float, default=60, help="seconds the --burst arrivals spread over (60)")
        parser.add_argument(
            "--places",
            type=int,
            default=0,
            help="a launch: the study's places (default: one per --burst participant); the others wait for a "
            "place on Prolific, as its participants do",
        )
        parser.add_argument(
            "--faults",
            default="",
            help="THROTTLED,FAILED,LOST: shares of Prolific's answers throttled (429, Retry-After 1 s), failed (502) "
            "and lost, e.g. 0.1,0.03,0.01; the launch then runs twice, on two studies: without faults, then with",
        )
        parser.add_argument("--forged", type=int, default=0, help="forged arrivals mixed into the --burst (0)")
        parser.add_argument(
            "--walk-out",
            type=float,
            default=0.0,
            help="a launch: the share of participants who return the study on Prolific once they have their HIT, "
            "without answering; the site then reads its study every 3 s, as poll_prolific and the webhooks do (0)",
        )
        parser.add_argument(
            "--signed",
            action="store_true",
            help="the launch's studies use Prolific's signed study URL (a JWT checked on the site, no API call "
            "per arrival; issue 56) instead of asking Prolific about each session",
        )
        parser.add_argument(
            "--give-up",
            type=float,
            default=60,
            help="seconds a participant waits on the site before returning the study (60)",
        )

    def handle(self, **o):
        for option in ("annotators", "duration", "hits", "queries_per_hit", "workers", "threads"):
            if o[option] <= 0:
                raise CommandError(f"--{option.replace('_', '-')} must be positive")
        refuse_real_batches(PREFIX, " (bin/benchmark-load makes one)")
        if o["burst"]:
            from benchmarks.burst import run_burst

            return run_burst(self, o)
        with command_errors():
            accounts, batch = self._prepare(o["annotators"], o["hits"], o["queries_per_hit"])
        with served(
            "load",
            workers=o["workers"],
            threads=o["threads"],
            say=self.stdout.write,
        ) as (port, _server):
            self.stdout.write(f"{o['annotators']} virtual annotators for {o['duration']:g} s ...")
            result = run_annotators(
                f"http://127.0.0.1:{port}",
                [(user, PASSWORD) for user in accounts],
                o["duration"],
                report=self._progress,
            )
        self._report(o, batch, result)

    def _prepare(self, annotators: int, hits: int, per_hit: int) -> tuple[list[str], Batch]:
        """Annotator accounts and a published batch."""
        names = annotator_accounts([f"{PREFIX}annotator-{i:03d}" for i in range(annotators)], PASSWORD)
        stamp = time.strftime("%Y%m%d-%H%M%S")
        settings = services.BatchSettings(assignments_per_query=annotators, queries_per_hit=per_hit)
        batch = made_up_batch(f"{PREFIX}{stamp}", hits * per_hit, settings)
        services.publish_batch(batch)
        self.stdout.write(f"Prepared {annotators} annotators and batch {batch.name!r}: {hits} HITs of {per_hit}")
        return names, batch

    def _progress(self, elapsed: float, result: LoadResult) -> None:
        errors = sum(result.errors.values())
        self.stdout.write(f"  {elapsed:5.0f} s: {result.accepted:,} submissions accepted, {errors:,} error(s)")

    def _report(self, o: dict, batch: Batch, result: LoadResult) -> None:
        submitted = Assignment.objects.filter(
            hit__batch=batch, status__in=[Assignment.Status.SUBMITTED, Assignment.Status.APPROVED]
        ).count()
        judgments = Judgment.objects.filter(assignment__hit__batch=batch).count()
        expected = result.accepted * o["queries_per_hit"]
        errors = sum(result.errors.values())
        self.stdout.write("")
        self.stdout.write(
            f"{o['annotators']} annotators, {result.seconds:.0f} s, gunicorn {o['workers']}x{o['threads']}, "
            f"{connection.vendor}"
        )
        self.stdout.write(format_table(step_rows(result)))
        self.stdout.write(
            f"error rate: {result.error_rate:.2%} ({errors:,} of {result.requests:,} steps); "
            f"submissions accepted: {result.accepted:,} ({result.accepted / result.seconds:,.1f}/s), "
            f"refused: {result.refused:,}; annotators out of HITs: {result.finished}"
        )
        self.stdout.write(
            f"stored: {submitted:,} submitted assignments, {judgments:,} judgments "
            f"(accepted {result.accepted:,} x {o['queries_per_hit']} = {expected:,})"
        )
        for sample in result.error_samples:
            self.stderr.write(f"  error: {sample}")
        if submitted != result.accepted or judgments != expected:
            raise CommandError("the judgments stored do not match the submissions accepted")
