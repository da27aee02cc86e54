"""Thin shell over :mod:`pooling.scan_benchmark`."""

from pathlib import Path

from django.core.management.base import BaseCommand

from pooling.scan_benchmark import run_scan_benchmark


class Command(BaseCommand):
    help = (
        "Time the collection scan (gender-word counts of every passage) split over 1 and 2 real "
        "Celery worker processes with a real Redis broker started for the benchmark (loopback "
        "port --redis-port), on a synthetic collection; checks both give the same counts as one "
        "in-process pass."
    )

    def add_arguments(self, parser):
        parser.add_argument("--passages", type=int, default=3_000_000, help="synthetic passages (default 3M)")
        parser.add_argument("--workers", type=int, nargs="+", default=[1, 2], help="worker counts to compare")
        parser.add_argument("--redis-port", type=int, default=56503)
        parser.add_argument("--work", default="var/benchmark-scan", help="folder for the data (kept for reruns)")

    def handle(self, passages, workers, redis_port, work, **options):
        for line in run_scan_benchmark(Path(work), passages, workers, redis_port):
            self.stdout.write(line)
