"""Benchmark: a pool's provenance rows written to PostgreSQL by ``executemany`` and by ``COPY``.

``python -m benchmarks.bulk_insert postgres://…/DB [--rows 23233] [--repeat 3]`` on a migrated
database (``pooling_poolentry`` exists): each way inserts the same rows into a temporary copy of
that table with its indexes (``LIKE … INCLUDING ALL``) and commits, best of ``--repeat``. What
``core.db.insert_rows`` chose for PostgreSQL (``COPY``) rests on these figures (docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Callable

COLUMNS = "pool_id, query_id, run_id, rank_bias, female_position, male_position"


def provenance_rows(count: int, runs: int = 7, seed: int = 1) -> list[tuple]:
    """``count`` rows shaped like a pool's provenance: one per (run, query), a RaB, few positions."""
    rng = random.Random(seed)
    per_run = -(-count // runs)
    rows = [
        (1, query, run, rng.uniform(-1, 1), rng.choice([None, None, rng.randint(1, 500)]), None)
        for run in range(runs)
        for query in range(per_run)
    ]
    return rows[:count]


def best_seconds(url: str, insert: Callable, repeat: int) -> float:
    import psycopg

    best = float("inf")
    for _ in range(repeat):
        with psycopg.connect(url) as connection:
            connection.execute("CREATE TEMP TABLE bench_entries (LIKE pooling_poolentry INCLUDING ALL)")
            start = time.perf_counter()
            insert(connection)
            connection.commit()
            best = min(best, time.perf_counter() - start)
    return best


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("url", help="a migrated PostgreSQL database (postgres://…)")
    parser.add_argument("--rows", type=int, default=23_233, help="rows (default: the 1M benchmark's pool)")
    parser.add_argument("--repeat", type=int, default=3)
    options = parser.parse_args(argv)
    rows = provenance_rows(options.rows)

    def executemany(connection) -> None:
        with connection.cursor() as cursor:
            cursor.executemany(f"INSERT INTO bench_entries ({COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s)", rows)

    def copy(connection) -> None:
        with connection.cursor() as cursor, cursor.copy(f"COPY bench_entries ({COLUMNS}) FROM STDIN") as stream:
            for row in rows:
                stream.write_row(row)

    for name, insert in (("executemany", executemany), ("COPY", copy)):
        print(f"{name:12} {best_seconds(options.url, insert, options.repeat):.3f} s for {len(rows):,} rows")


if __name__ == "__main__":
    main()
