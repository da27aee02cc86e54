"""Peak memory of importing compression bombs, command line and site, beside an ordinary file (issue 44.1).

Writes (once, in ``--workdir``) a gzip of one run line repeated to ``--expanded`` bytes, a gzip of newlines and a
small ordinary run, and a SQLite database there with a small collection and a researcher; then measures each
import in a fresh process (:mod:`benchmarks.upload_memory`): its outcome, seconds and peak memory.
"""

import os
import subprocess
import sys
from pathlib import Path

from django.conf import settings

from benchmarks.measure import run_module
from benchmarks.upload_memory import COLLECTION, write_ordinary_run
from core.management.cli import ProjectCommand
from tests.support.compression_bombs import write_repeated


class Command(ProjectCommand):
    help = (
        "Peak resident memory of importing a gzip bomb (one run line repeated to 2 GiB; newlines to "
        "1 GiB) from the command line and through the site (test client, the Job in the same process), "
        "each in a fresh process, beside the same imports of a small ordinary run."
    )

    def add_arguments(self, parser):
        parser.add_argument("--workdir", default="/tmp/bench-uploads", help="where files and the database go")
        parser.add_argument("--expanded", type=int, default=2 * 1024**3, help="the bomb's expanded bytes (2 GiB)")
        parser.add_argument("--newlines", type=int, default=1024**3, help="the newline bomb's expanded bytes (1 GiB)")

    def handle(self, *args, workdir, expanded, newlines, **options):
        work = Path(workdir)
        work.mkdir(parents=True, exist_ok=True)
        bomb = work / f"bomb-{expanded}.trec.gz"
        if not bomb.exists():
            write_repeated(bomb, b"q1 Q0 d1 1 1.0 bench\n", expanded)
        blank = work / f"newlines-{newlines}.gz"
        if not blank.exists():
            write_repeated(blank, b"\n", newlines)
        ordinary = write_ordinary_run(work / "ordinary.trec.gz")
        collection = work / "collection.tsv"
        collection.write_text("".join(f"d{i}\tpassage number {i}\n" for i in range(1000)))

        env = {
            **os.environ,
            "DATABASE_URL": f"sqlite:///{work / 'db.sqlite3'}",
            "VAR_DIR": str(work / "var"),
            "PYTHONPATH": str(settings.BASE_DIR),
            "CELERY_BROKER_URL": "",
        }
        (work / "db.sqlite3").unlink(missing_ok=True)
        make_user = (
            "from django.contrib.auth import get_user_model; "
            "get_user_model().objects.create_user('bench', password='bench-pw-123', is_staff=True)"
        )
        for arguments in (
            ["migrate", "-v0"],
            ["import_collection", str(collection), "--name", COLLECTION, "-v0"],
            ["shell", "-c", make_user],
        ):
            subprocess.run(
                [sys.executable, str(settings.BASE_DIR / "manage.py"), *arguments],
                env=env,
                check=True,
                cwd=settings.BASE_DIR,
            )

        cases = [
            ("ordinary run (baseline)", "run", ordinary),
            (f"run: one line repeated to {expanded:,} bytes", "run", bomb),
            (f"run: newlines to {newlines:,} bytes", "run", blank),
            (f"collection: newlines to {newlines:,} bytes", "collection", blank),
        ]
        self.stdout.write(f"{'case':<48} {'where':<5} {'gz MB':>7} {'seconds':>8} {'peak MB':>8}  outcome")
        for index, (label, kind, path) in enumerate(cases):
            for mode in ("cli", "site"):
                name = f"{kind}-{mode}-{index}"
                try:
                    result = run_module("benchmarks.upload_memory", mode, kind, path, name, env=env)
                except subprocess.CalledProcessError as exc:
                    self.stdout.write(f"{label:<48} {mode:<5} failed: {exc.stderr[-500:]}")
                    continue
                outcome = result["outcome"].replace(str(path), path.name)
                self.stdout.write(
                    f"{label:<48} {mode:<5} {path.stat().st_size / 1e6:>7.2f} {result['seconds']:>8.2f} "
                    f"{result['peak_mb']:>8.1f}  {outcome[:110]}"
                )
