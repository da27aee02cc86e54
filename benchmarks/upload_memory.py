"""Peak memory of importing a compression bomb, from the command line and through the site (issue 44.1).

``python -m benchmarks.upload_memory MODE KIND PATH NAME``, in a process whose environment names
the benchmark's database (``DATABASE_URL``, ``VAR_DIR``): MODE ``cli`` runs ``manage.py
import_<KIND>`` as a user types it, ``site`` posts the file to ``/api/pooling/imports/<KIND>/``
with Django's test client as a logged-in researcher and waits for the import's Job (run inside
this process, as a site without a broker runs it: the memory a gunicorn worker would hold).
Prints one JSON line: the outcome and this process's peak resident memory (VmHWM).
The bombs are written by :func:`tests.support.compression_bombs.write_repeated` (streamed, never held whole).
"""

from __future__ import annotations

import gzip
import json
import sys
import time
from pathlib import Path

from benchmarks.measure import peak_memory_mb, setup_django

COLLECTION = "bench-collection"


def write_ordinary_run(path: Path, queries: int = 2000, depth: int = 10, docs: int = 1000) -> Path:
    """A small ordinary gzipped TREC run over docids ``d0…`` of the benchmark's collection."""
    lines = (
        f"q{q} Q0 d{(q * 7 + r) % docs} {r + 1} {depth - r}.5 bench\n" for q in range(queries) for r in range(depth)
    )
    path.write_bytes(gzip.compress("".join(lines).encode()))
    return path


def _cli(kind: str, path: str, name: str) -> str:
    from django.core.management import CommandError, call_command

    options = {"collection": COLLECTION} if kind == "run" else {}
    try:
        call_command(f"import_{kind}", path, name=name, verbosity=0, **options)
    except CommandError as exc:
        return str(exc)
    return "imported"


def _site(kind: str, path: str, name: str) -> str:
    from django.contrib.auth import get_user_model
    from django.core.files.uploadedfile import SimpleUploadedFile
    from django.test import Client

    from core.models import Job

    client = Client(SERVER_NAME="localhost")
    client.force_login(get_user_model().objects.get(username="bench"))
    data = Path(path).read_bytes()  # the upload itself: a few megabytes at most
    body = {"name": name, "file": SimpleUploadedFile(Path(path).name, data, content_type="application/gzip")}
    if kind == "run":
        body["collection"] = COLLECTION
    response = client.post(f"/api/pooling/imports/{kind}/", body)
    if response.status_code != 202:
        return f"HTTP {response.status_code}: {response.content[:300]!r}"
    job = Job.objects.get(pk=response.json()["id"])
    while job.status not in (Job.Status.DONE, Job.Status.FAILED):
        time.sleep(0.2)
        job.refresh_from_db()
    return "imported" if job.status == Job.Status.DONE else job.message


def main(argv: list[str]) -> None:
    mode, kind, path, name = argv
    setup_django()
    started = time.perf_counter()
    outcome = (_cli if mode == "cli" else _site)(kind, path, name)
    seconds = time.perf_counter() - started
    print(json.dumps({"outcome": outcome, "seconds": round(seconds, 2), "peak_mb": round(peak_memory_mb(), 1)}))


if __name__ == "__main__":
    main(sys.argv[1:])
