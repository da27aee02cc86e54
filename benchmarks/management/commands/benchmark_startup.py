"""What first use costs before any work: ``migrate`` on a new database and a small command's start-up.

Every measurement is a fresh process as a user starts it, the median of ``--repeat``; the rounds are interleaved
so that load from elsewhere on the machine falls on all of them alike. A bare Django project with the same
framework apps (:mod:`benchmarks.bare_django`) runs beside this checkout: what this project adds to Django's own
start-up. ``--compare`` measures another checkout in the same rounds, with this one's interpreter. Python caches
the bytecode (in the work folder) as it does for a user; one untimed ``help`` per project compiles it first.
"""

import os
import statistics
import tempfile
from collections.abc import Callable
from pathlib import Path

from django.conf import settings

from benchmarks.bare_django import write_bare_project
from benchmarks.fullsize import run_command
from benchmarks.measure import load_average
from core.management.cli import ProjectCommand

SMALL_COMMANDS = [
    "import_run --help",
    "import_collection --help",
    "pool --help",
    "agreement --help",
    "export_queries --help",
    "bias_report --help",
    "check",
]


class Command(ProjectCommand):
    help = (
        "Start-up of first use, each a fresh process, medians of --repeat interleaved rounds: "
        "'manage.py help' (Django's floor), small commands (their --help, 'check', and import_queries "
        "on a 10-line file) and 'manage.py migrate' on a new SQLite file (and, with --postgres, on a new "
        "PostgreSQL database), beside a bare Django project with the same framework apps; prints "
        "milliseconds, the multiple of 'manage.py help' and the machine's load"
    )

    def add_arguments(self, parser):
        parser.add_argument("--repeat", type=int, default=5, help="fresh processes per measurement (5)")
        parser.add_argument(
            "--compare",
            default=None,
            metavar="PATH",
            help="another checkout, measured in the same rounds (before/after)",
        )
        parser.add_argument(
            "--commands",
            default=",".join(SMALL_COMMANDS),
            help="small commands, comma-separated, each with its arguments (default: %(default)s)",
        )
        parser.add_argument(
            "--postgres",
            default=None,
            metavar="URL",
            help="a PostgreSQL server's URL (postgres://user@host:port/maintenance-db): migrate a new database there too",
        )

    def handle(self, **o):
        here = Path(settings.BASE_DIR).resolve()
        commands = [c.split() for c in o["commands"].split(",") if c.strip()]
        measured: dict[tuple[str, str], list[tuple[float, float]]] = {}
        load = [load_average()]
        with tempfile.TemporaryDirectory(prefix="bench-startup-") as work:
            work = Path(work)
            queries = work / "ten-queries.tsv"
            queries.write_text("".join(f"s{i}\tstart-up query {i}\n" for i in range(10)))
            base = {
                k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "DJANGO_SETTINGS_MODULE")
            }
            base["PYTHONPYCACHEPREFIX"] = str(work / "pycache")
            own = {"core", "pooling", "annotation", "platforms", "metrics", "publishing", "benchmarks"}
            apps = [app for app in settings.INSTALLED_APPS if app.split(".", 1)[0] not in own]  # Django's own
            bare = write_bare_project(work / "bare", apps)
            # label -> (folder, environment for a database file, whether it has the project's commands)
            projects: dict[str, tuple[Path, Callable[[Path], dict], bool]] = {
                "this checkout": (
                    here,
                    lambda db, i=0: dict(base, VAR_DIR=str(work / "var0"), DATABASE_URL=f"sqlite:///{db}"),
                    True,
                ),
                "bare Django": (bare, lambda db: dict(base, BARE_DATABASE=str(db)), False),
            }
            if o["compare"]:
                projects["compared"] = (
                    Path(o["compare"]).resolve(),
                    lambda db: dict(base, VAR_DIR=str(work / "var1"), DATABASE_URL=f"sqlite:///{db}"),
                    True,
                )
            envs = {}
            for i, (label, (root, env_of, _)) in enumerate(projects.items()):
                envs[label] = env_of(work / f"small{i}.sqlite3")
                run_command(["help"], envs[label], root)  # untimed: the bytecode compiled once
                run_command(["migrate", "-v0"], envs[label], root)  # the small commands' database
            for round_ in range(o["repeat"]):
                for i, (label, (root, env_of, ours)) in enumerate(projects.items()):
                    env = envs[label]
                    # A small command doing its work: a 10-line query file, a new name each time.
                    small = ["import_queries", str(queries), "--name", f"startup-{i}-{round_}", "-v", "0"]
                    runs = [("help", ["help"], env)]
                    runs += [(" ".join(command), command, env) for command in (commands if ours else [])]
                    runs += [
                        ("import_queries (a 10-line file)", small, env),
                        ("migrate (new SQLite file)", ["migrate", "-v0"], env_of(work / f"fresh{i}-{round_}.sqlite3")),
                    ]
                    for name, arguments, run_env in runs:
                        measured.setdefault((label, name), []).append(run_command(arguments, run_env, root)[:2])
                    if o["postgres"] and ours:
                        measured.setdefault((label, "migrate (new PostgreSQL database)"), []).append(
                            self._migrate_postgres(root, env, o["postgres"], f"{i}_{round_}")
                        )
        load.append(load_average())
        self.stdout.write(
            f"medians of {o['repeat']} fresh processes, rounds interleaved; wall ms and the process's CPU ms "
            "(user + system; on PostgreSQL the server's work is not in it), each × its own project's "
            f"`manage.py help`; load average before {load[0]}, after {load[1]} (/proc/loadavg)\n"
        )
        labels = list(projects)
        header = " | ".join(f"{label}: wall ms | CPU ms | × help" for label in labels)
        self.stdout.write(f"| command | {header} |\n| --- |" + " ---: | ---: | ---: |" * len(labels))
        names = list(dict.fromkeys(name for _, name in measured))
        median = {
            key: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v)) for key, v in measured.items()
        }
        for name in names:
            cells = []
            for label in labels:
                if (label, name) not in median:
                    cells.append(" | | ")
                    continue
                wall, cpu = median[label, name]
                cells.append(f"{wall * 1000:,.0f} | {cpu * 1000:,.0f} | {cpu / median[label, 'help'][1]:.2f}×")
            self.stdout.write(f"| `manage.py {name}` | {' | '.join(cells)} |")
        self.stdout.write("\nThis checkout beside the bare Django project (CPU; wall in brackets):")
        for name in ("help", "import_queries (a 10-line file)", "migrate (new SQLite file)"):
            (w1, c1), (w0, c0) = median["this checkout", name], median["bare Django", name]
            self.stdout.write(
                f"  {name}: {c1 * 1000:,.0f} ms against {c0 * 1000:,.0f} ms, {(c1 - c0) * 1000:+,.0f} ms, "
                f"{c1 / c0:.2f}× ({w1 * 1000:,.0f} against {w0 * 1000:,.0f} ms)"
            )

    def _migrate_postgres(self, root: Path, env: dict, server: str, tag: str) -> tuple[float, float]:
        import psycopg

        name = f"bench_startup_{os.getpid()}_{tag}"
        with psycopg.connect(server, autocommit=True) as admin:
            admin.execute(f'CREATE DATABASE "{name}"')
        try:
            url = server.rsplit("/", 1)[0] + f"/{name}"
            return run_command(["migrate", "-v0"], dict(env, DATABASE_URL=url), root)[:2]
        finally:
            with psycopg.connect(server, autocommit=True) as admin:
                admin.execute(f'DROP DATABASE "{name}"')
