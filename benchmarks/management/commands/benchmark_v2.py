"""Thin shell over :mod:`benchmarks.v2_layout`."""

import itertools
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from benchmarks.measure import shown
from benchmarks.v2_layout import (
    V2,
    measured,
    register_pool_report,
    write_collection,
    write_flat_collection,
    write_runs,
)
from core.management.cli import command_errors
from genderbias.numbers import NumberError, parse_counts


class Command(BaseCommand):
    help = (
        "MS MARCO v2 passage by reference at two (or more) collection sizes: writes synthetic collections in "
        "v2's own layout (70 bundle files, v2 ids; each a prefix of the next) and one set of 14 runs x 4,000 "
        "queries x 100 over passages all sizes hold (kept in --work for reruns), then registers the collection "
        "by reference, imports the queries and runs, pools the 14 runs and reports on 7, as the README types "
        "them (each a fresh manage.py process on a new SQLite database), printing per step wall time, CPU time "
        "and peak memory, and the ratio of the totals between sizes (it should stay near 1); checks the pool and "
        "the report at every size equal those of the smallest size's passages imported with the full scan."
    )

    def add_arguments(self, parser):
        parser.add_argument("--work", default="var/benchmark-v2", help="folder for the data (about 0.4 KB a passage)")
        parser.add_argument(
            "--sizes", default="300000,3000000", help="collection sizes in passages, comma-separated (default 0.3M,3M)"
        )
        parser.add_argument(
            "--retrieved-from",
            type=int,
            default=None,
            help="the runs rank passages among the first N of the collection (default: the smallest size)",
        )

    def handle(self, work, sizes, retrieved_from, **options):
        with command_errors(NumberError):
            sizes = list(parse_counts(sizes, "--sizes", minimum=V2["bundles"], maximum=200_000_000, most=4))
        retrieved_from = retrieved_from or sizes[0]
        if retrieved_from > sizes[0]:
            raise CommandError(f"--retrieved-from {retrieved_from:,} exceeds the smallest size {sizes[0]:,}")
        work = Path(work).resolve()
        work.mkdir(parents=True, exist_ok=True)
        totals = {}
        files = None
        for size in sizes:
            folder = shown(write_collection(work, size), self.stdout.write)[-1]
            files = files or shown(write_runs(work, folder, retrieved_from), self.stdout.write)[-1]
            self.stdout.write(f"{size:,} passages (runs over the first {retrieved_from:,}):")
            steps = shown(register_pool_report(work, folder, files, tag=str(size)), self.stdout.write)
            total = measured(steps)
            totals[size] = total
            if size == sizes[0]:  # the same passages imported with the full scan: the figures to equal
                flat = write_flat_collection(work, folder)
                self.stdout.write(f"The same {size:,} passages as {flat.name}, imported with the full scan:")
                full = measured(shown(register_pool_report(work, flat, files, tag="full-scan"), lambda _line: None))
                self.stdout.write(
                    f"  registration + pool + report: {full.seconds:,.1f} s, {full.cpu_seconds:,.1f} s CPU"
                )
            same = all(
                (work / f"{what}-{size}.{ext}").read_bytes() == (work / f"{what}-full-scan.{ext}").read_bytes()
                for what, ext in (("pooled", "tsv"), ("report", "csv"))
            )
            self.stdout.write(f"Pool and report equal to the full scan's: {'yes' if same else 'NO'}")
            self.stdout.write("| step | seconds | CPU s | peak MB |\n| --- | ---: | ---: | ---: |")
            for step in [*steps, total]:
                self.stdout.write(
                    f"| `{step.name}` | {step.seconds:,.1f} | {step.cpu_seconds:,.1f} | {step.peak_mb:,.0f} |"
                )
        for smaller, size in itertools.pairwise(sizes):  # each size against the one before
            small, large = totals[smaller], totals[size]
            self.stdout.write(
                f"{size:,} vs {smaller:,} passages: {large.seconds:,.1f} s / {small.seconds:,.1f} s = "
                f"{large.seconds / small.seconds:.2f}x (CPU {large.cpu_seconds / small.cpu_seconds:.2f}x); peak "
                f"{max(small.peak_mb, large.peak_mb):,.0f} MB; {V2['runs']} runs x {V2['queries']:,} x {V2['depth']}, "
                f"report on {V2['report_runs']}"
            )
