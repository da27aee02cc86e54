"""What an import holds against ``IMPORT_MAX_HELD_BYTES`` (issue 82): one file just within the limit, imported.

``python -m benchmarks.held_memory KIND WORKDIR``, in a process whose environment names a migrated
database (``DATABASE_URL``, ``VAR_DIR``) and the limit (``IMPORT_MAX_HELD_BYTES``). KIND ``queries``: short
query lines, imported as a query set as a job does it; ``qrels``: short judgments, read by the qrels reader;
``long``: queries of about 1,000 characters with an emoji each, which makes Python store every character of the
line in 4 bytes. The file's lines fill the limit as the reader counts them (``HELD_LINE_BYTES``). Prints the
lines, the file's size and this process's peak memory (VmHWM) grown during the import.
"""

from __future__ import annotations

import os
import sys
import time

from benchmarks.measure import peak_memory_mb, setup_django


def _lines(kind: str):
    if kind == "queries":
        return lambda i: f"{i}\twhat is thing {i}\n"
    if kind == "qrels":
        return lambda i: f"{i // 10} 0 d{i} 1\n"
    return lambda i: f"{i}\t{'what is a thing ' * 60}\U0001f600\n"


def main(kind: str, work: str) -> None:
    setup_django()
    import numpy  # noqa: F401  (loaded in a worker anyway: not counted as the import's)
    import polars  # noqa: F401
    from django.conf import settings

    from genderbias.files.qrelfiles import read_qrels
    from genderbias.files.textfiles import HELD_LINE_BYTES
    from pooling import services

    limit = settings.IMPORT_MAX_HELD_BYTES
    path = os.path.join(work, f"held-{kind}-{limit}.txt")
    line, width = _lines(kind), 4 if kind == "long" else 1  # the reader counts a line with an emoji 4 times
    counted = lines = 0
    with open(path, "w", encoding="utf-8") as out:
        while counted + width * len(line(lines).encode()) + HELD_LINE_BYTES <= limit:
            text = line(lines)
            out.write(text)
            counted, lines = counted + width * len(text.encode()) + HELD_LINE_BYTES, lines + 1
    before = peak_memory_mb()
    if kind == "qrels":
        read_qrels(path)
    else:
        services.import_queries(path, f"held-{kind}-{int(time.time() * 1000)}")
    grown = (peak_memory_mb() - before) * 2**20
    size = os.path.getsize(path)
    print(
        f"{kind}: {lines:,} lines, {size / 2**20:.1f} MiB; setting {limit / 2**20:.0f} MiB; peak grew "
        f"{grown / 2**20:.0f} MiB = {grown / limit:.2f} x the setting ({grown / size:.1f} x the file)"
    )


if __name__ == "__main__":
    main(*sys.argv[1:3])
