"""Thin shell over :mod:`benchmarks.fullsize` (and :mod:`benchmarks.scan` for the workers)."""

import itertools
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from benchmarks.fullsize import (
    MSMARCO,
    Step,
    check_empty,
    reference_on_prefix,
    register_and_pool,
    scale_reference,
    table,
    write_data,
)
from benchmarks.measure import load_average, shown
from benchmarks.scan import run_scan_benchmark
from core.management.cli import command_errors
from genderbias.numbers import NumberError, parse_counts


class Command(BaseCommand):
    help = (
        "The design card's study at MS MARCO's full size (8,841,823 passages, 6,980 queries, 14 runs x "
        "1,000): writes synthetic data of those sizes (kept in --work for reruns), then registers and "
        "pools it as the README types it (one import_run given every run), each command a fresh manage.py "
        "process on a new SQLite database (or an empty PostgreSQL one, --database-url), "
        "printing wall time, CPU time, peak memory and disk per step beside the reference notebooks' "
        "approach (measured on a prefix of the collection and scaled); then the collection scan and a "
        "run's import over 1 and 2 real Celery workers (--workers; 0 to skip)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--work", default="var/benchmark-fullsize", help="folder for the data (about 10 GB)")
        parser.add_argument("--passages", type=int, default=MSMARCO["passages"], help="passages (default: MS MARCO's)")
        parser.add_argument("--queries", type=int, default=MSMARCO["queries"], help="queries (default: the dev set's)")
        parser.add_argument("--runs", type=int, default=MSMARCO["runs"], help="runs (default 14)")
        parser.add_argument("--depth", type=int, default=MSMARCO["depth"], help="documents per query (default 1,000)")
        parser.add_argument(
            "--reference-passages",
            type=int,
            default=1_000_000,
            help="passages the reference approach runs on before scaling (it needs ~5 GB per million; 0 skips it)",
        )
        parser.add_argument(
            "--workers", default="1,2", help="Celery worker counts for the scan and a run's import (0 skips)"
        )
        parser.add_argument(
            "--database-url",
            default=None,
            help="an empty PostgreSQL database to register and pool on (postgres://…; default: a new SQLite file)",
        )
        parser.add_argument("--redis-port", type=int, default=56507, help="loopback port of the benchmark's Redis")
        parser.add_argument(
            "--expect-pool",
            default=None,
            help="a pool file written before (e.g. a copy of --work's pooled.tsv): the new pool must be the same, "
            "byte for byte, or the benchmark fails naming the first line that differs",
        )

    def handle(
        self,
        work,
        passages,
        queries,
        runs,
        depth,
        reference_passages,
        workers,
        redis_port,
        database_url,
        expect_pool,
        **options,
    ):
        if expect_pool and not Path(expect_pool).is_file():  # refused before the long run, not after it
            raise CommandError(f"--expect-pool: no such file: {expect_pool}")
        work = Path(work).resolve()
        work.mkdir(parents=True, exist_ok=True)
        sizes = {"passages": passages, "queries": queries, "runs": runs, "depth": depth}
        files = shown(write_data(work, sizes), self.stdout.write)[-1]
        where = "PostgreSQL" if database_url else "SQLite"
        self.stdout.write(
            f"Registration and pool on {where}, as the README types them (load average {load_average()}):"
        )
        steps = []
        if database_url:
            with command_errors(ValueError):
                check_empty(database_url)
        for item in register_and_pool(work, files, database_url=database_url):
            if isinstance(item, Step):
                steps.append(item)
                self.stdout.write(
                    f"    {item.seconds:8.1f} s  {item.cpu_seconds:8.1f} s CPU  {item.peak_mb:7,.0f} MB peak  "
                    f"{item.disk_mb:8,.0f} MB on disk"
                )
            else:
                self.stdout.write(item)
        self.stdout.write(f"  done (load average {load_average()})")
        self.stdout.write(
            f"  all {len(steps)} commands: {sum(s.seconds for s in steps):.1f} s, "
            f"{sum(s.cpu_seconds for s in steps):.1f} s CPU, {max(s.peak_mb for s in steps):,.0f} MB peak"
        )
        if expect_pool:
            differs = _first_different_line(work / "pooled.tsv", Path(expect_pool))
            if differs is not None:
                raise CommandError(f"the pool differs from {expect_pool}: first at line {differs}")
            self.stdout.write(f"  the pool is {expect_pool}, byte for byte")
        run_lines = queries * depth * runs
        if reference_passages:
            self.stdout.write(f"The reference approach on the first {reference_passages:,} passages …")
            reference = reference_on_prefix(work, files, reference_passages)
            scaled = scale_reference(reference, passages, run_lines)
            self.stdout.write("\n" + "\n".join(table(steps, reference, scaled, sizes, run_lines)))
        with command_errors(NumberError):
            worker_counts = [n for n in parse_counts(workers, "--workers", maximum=16, most=4) if n]
        if worker_counts:
            for what in ("scan", "run-import"):
                self.stdout.write(f"\n{what} over {', '.join(map(str, worker_counts))} Celery worker(s):")
                for line in run_scan_benchmark(work, passages, worker_counts, redis_port, what, files["runs"][0]):
                    self.stdout.write(line)


def _first_different_line(new: Path, old: Path) -> int | None:
    """The first line (1-based) where two files differ, a file that ends first included, or ``None``."""
    with open(new, "rb") as a, open(old, "rb") as b:
        for number, (x, y) in enumerate(itertools.zip_longest(a, b), 1):
            if x != y:
                return number
    return None
