"""Thin shell over :mod:`benchmarks.scan`."""

from pathlib import Path

from django.core.management.base import BaseCommand

from benchmarks.scan import WHAT, run_scan_benchmark


class Command(BaseCommand):
    help = (
        "Time the collection scan (gender-word counts of every passage; --what scan) or the import "
        "of a 7M-line run (--what run-import), or the texts of 300,000 passages of a v2-layout collection "
        "by reference (--what v2-texts; split by bundle file) split over 1 and 2 real Celery worker processes with "
        "a real Redis broker started for the benchmark (loopback port --redis-port), on synthetic "
        "data; checks both give the same result as the in-process reference."
    )

    def add_arguments(self, parser):
        parser.add_argument("--passages", type=int, default=3_000_000, help="synthetic passages (default 3M)")
        parser.add_argument("--workers", type=int, nargs="+", default=[1, 2], help="worker counts to compare")
        parser.add_argument("--redis-port", type=int, default=56503)
        parser.add_argument("--work", default="var/benchmark-scan", help="folder for the data (kept for reruns)")
        parser.add_argument("--what", choices=sorted(WHAT), default="scan", help="what to split (default: scan)")

    def handle(self, passages, workers, redis_port, work, what, **options):
        for line in run_scan_benchmark(Path(work), passages, workers, redis_port, what):
            self.stdout.write(line)
