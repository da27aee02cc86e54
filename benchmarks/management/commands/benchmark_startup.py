"""What first use costs before any work: ``migrate`` on a new database and a small command's start-up.

Every measurement is a fresh process as a user starts it (``python manage.py ...``), the
median of ``--repeat``; the rounds are interleaved (one of each per round) so that load from
elsewhere on the machine falls on all of them alike. ``--compare`` measures another
checkout's ``manage.py`` (an older commit, for a before/after) in the same rounds, with this
one's interpreter.
"""

import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from django.conf import settings

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
        "on a 10-line file), and "
        "'manage.py migrate' on a new SQLite file (and, with --postgres, on a new PostgreSQL "
        "database); prints milliseconds and the multiple of 'manage.py help'."
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
        roots = [Path(settings.BASE_DIR).resolve()]
        if o["compare"]:
            roots.append(Path(o["compare"]).resolve())
        commands = [c.split() for c in o["commands"].split(",") if c.strip()]
        measured: dict[tuple[Path, str], list[tuple[float, float]]] = {}
        with tempfile.TemporaryDirectory(prefix="bench-startup-") as work:
            work = Path(work)
            queries = work / "ten-queries.tsv"
            queries.write_text("".join(f"s{i}\tstart-up query {i}\n" for i in range(10)))
            envs = {}
            for i, root in enumerate(roots):
                envs[root] = dict(
                    os.environ,
                    VAR_DIR=str(work / f"var{i}"),
                    DATABASE_URL=f"sqlite:///{work / f'small{i}.sqlite3'}",
                )
                self._run(root, ["migrate", "-v0"], envs[root])  # the small commands' database
            for round_ in range(o["repeat"]):
                for i, root in enumerate(roots):
                    for way, env in [("", envs[root])]:
                        measured.setdefault((root, f"help{way}"), []).append(self._run(root, ["help"], env))
                        for command in commands:
                            measured.setdefault((root, " ".join(command) + way), []).append(
                                self._run(root, command, env)
                            )
                        # A small command doing its work: a 10-line query file, a new name each time.
                        small = [
                            "import_queries",
                            str(queries),
                            "--name",
                            f"startup-{i}-{round_}{'r' if way else ''}",
                            "-v",
                            "0",
                        ]
                        measured.setdefault((root, f"import_queries (a 10-line file){way}"), []).append(
                            self._run(root, small, env)
                        )
                    env = envs[root]
                    fresh = dict(env, DATABASE_URL=f"sqlite:///{work / f'fresh{i}-{round_}.sqlite3'}")
                    measured.setdefault((root, "migrate (new SQLite file)"), []).append(
                        self._run(root, ["migrate", "-v0"], fresh)
                    )
                    if o["postgres"]:
                        measured.setdefault((root, "migrate (new PostgreSQL database)"), []).append(
                            self._migrate_postgres(root, env, o["postgres"], f"{i}_{round_}")
                        )
        self.stdout.write(
            f"medians of {o['repeat']} fresh processes, rounds interleaved; wall ms and the process's CPU ms "
            "(user + system; on PostgreSQL the server's work is not in it), each × `manage.py help`'s\n"
        )
        header = " | ".join(f"{root}: wall ms | × help | CPU ms | × help" for root in roots)
        self.stdout.write(f"| command | {header} |\n| --- |" + " ---: | ---: | ---: | ---: |" * len(roots))
        names = list(dict.fromkeys(name for _, name in measured))
        for name in names:
            cells = []
            for root in roots:
                if (root, name) not in measured:
                    cells.append(" | | | ")
                    continue
                wall = statistics.median(w for w, _ in measured[root, name])
                cpu = statistics.median(c for _, c in measured[root, name])
                floor_wall = statistics.median(w for w, _ in measured[root, "help"])
                floor_cpu = statistics.median(c for _, c in measured[root, "help"])
                cells.append(
                    f"{wall * 1000:,.0f} | {wall / floor_wall:.2f}× | {cpu * 1000:,.0f} | {cpu / floor_cpu:.2f}×"
                )
            self.stdout.write(f"| `manage.py {name}` | {' | '.join(cells)} |")

    def _run(self, root: Path, arguments: list[str], env: dict) -> tuple[float, float]:
        """Wall seconds and CPU seconds (user + system) of one fresh ``manage.py`` process."""
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "manage.py", *arguments], cwd=root, env=env, capture_output=True, text=True
        )
        seconds = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if done.returncode != 0:
            raise RuntimeError(f"manage.py {' '.join(arguments)} failed:\n{done.stderr}")
        return seconds, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)

    def _migrate_postgres(self, root: Path, env: dict, server: str, tag: str) -> tuple[float, float]:
        import psycopg

        name = f"bench_startup_{os.getpid()}_{tag}"
        with psycopg.connect(server, autocommit=True) as admin:
            admin.execute(f'CREATE DATABASE "{name}"')
        try:
            url = server.rsplit("/", 1)[0] + f"/{name}"
            return self._run(root, ["migrate", "-v0"], dict(env, DATABASE_URL=url))
        finally:
            with psycopg.connect(server, autocommit=True) as admin:
                admin.execute(f'DROP DATABASE "{name}"')
