import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from django.conf import settings

from benchmarks.fullsize import run_command
from benchmarks.measure import run_module
from core.management.cli import ProjectCommand
from pooling.synthetic import SyntheticSpec, write_collection, write_queries, write_runs


class Command(ProjectCommand):
    help = (
        "Benchmark pooling on synthetic MS MARCO-shaped data (7 runs x 3,750 queries x 100 documents): "
        "this project's import + pool against the reference notebooks' approach (a Counter per "
        "document, dictionaries of tuples, a Python loop per run), each in a fresh process, "
        "printing seconds, passages per second and peak memory side by side."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--passages", default="1000000,3000000", help="collection sizes, comma-separated (default 1M and 3M)"
        )
        parser.add_argument(
            "--naive-up-to",
            type=int,
            default=1_000_000,
            help="run the naive approach only up to this size (it needs ~5 GB per 1M passages)",
        )
        parser.add_argument("--queries", type=int, default=3750)
        parser.add_argument("--runs", type=int, default=7)
        parser.add_argument("--depth", type=int, default=100, help="documents per query in each run")
        parser.add_argument(
            "--pool-depth", type=int, default=500, help="queries taken from the top of each list (default 500)"
        )
        parser.add_argument("--workdir", default=None, help="where synthetic data is kept (default: VAR_DIR/bench)")
        parser.add_argument(
            "--no-bytecode-cache",
            action="store_true",
            help="keep this machine's PYTHONDONTWRITEBYTECODE for the commands (default: Python caches the "
            "project's bytecode, as it does for a user)",
        )

    def handle(self, **o):
        workdir = Path(o["workdir"] or Path(settings.VAR_DIR) / "bench")
        self.bytecode = (workdir / "pycache") if not o["no_bytecode_cache"] else None
        rows = []
        for size in [int(s) for s in o["passages"].split(",")]:
            spec = SyntheticSpec(passages=size, queries=o["queries"], runs=o["runs"], depth=o["depth"])
            files = self._data(workdir / f"{size}", spec)
            with tempfile.TemporaryDirectory(prefix="bench-") as work:
                args = [
                    work,
                    str(files["collection"]),
                    str(files["queries"]),
                    "10",
                    str(o["pool_depth"]),
                    *map(str, files["runs"]),
                ]
                row = {"passages": size, "import": self._child("import", args), "pool": self._child("pool", args)}
                row["phases"] = self._child("phases", args)["phases"]
                row["startup"] = self._startup(Path(work))
            with tempfile.TemporaryDirectory(prefix="bench-") as work:
                row["first"] = self._child("first", [work, *args[1:]])
            with tempfile.TemporaryDirectory(prefix="bench-") as work:
                row["commands"] = self._commands(Path(work), files, o["pool_depth"])
            row["grep"] = self._grep(files["collection"])
            if size <= o["naive_up_to"]:
                row["naive"] = self._child("naive", args)
                row["same_pool"] = row["naive"]["qids"] == row["pool"]["qids"]
            rows.append(row)
            self._print(row)
        self.stdout.write("\n" + self._markdown(rows, o))

    def _data(self, directory: Path, spec: SyntheticSpec) -> dict:
        directory.mkdir(parents=True, exist_ok=True)
        collection = directory / "collection.tsv"
        queries = directory / "queries.tsv"
        if not collection.exists():
            self.stdout.write(f"Writing a synthetic collection of {spec.passages:,} passages to {directory} …")
            t = time.perf_counter()
            write_collection(collection, spec)
            write_queries(queries, spec)
            write_runs(directory, queries, spec)
            self.stdout.write(f"  done in {time.perf_counter() - t:.0f} s")
        return {"collection": collection, "queries": queries, "runs": sorted(directory.glob("run*.trec"))}

    def _child(self, mode: str, args: list[str]) -> dict:
        return run_module("benchmarks.pooling", mode, *args, env=_user_env(Path(args[0]), self.bytecode))

    def _commands(self, work: Path, files: dict, depth: int) -> dict:
        """Registration and pool as the README types them, each command a fresh ``manage.py`` process on a new
        database, with its wall and CPU seconds and peak memory; then ``pool --wordlist`` given the same 64 words
        as a file, as a reproduction of the paper passes them, not added to the totals: the counts cache is keyed
        by the words, not the list's name, so it reads what ``import_run`` counted."""
        from genderbias.text.wordlists import default_wordlist

        env = _user_env(work, self.bytecode)
        names = [Path(r).stem for r in files["runs"]]
        out = work / "pooled.tsv"
        words = work / "wordlist_genderspecific.txt"
        words.write_text("".join(f"{word},{gender}\n" for word, gender in default_wordlist().words.items()))
        from_file = work / "pooled-from-file.tsv"
        steps = [
            ("migrate", ["migrate"]),
            ("import_collection", ["import_collection", str(files["collection"]), "--name", "bench"]),
            ("import_queries", ["import_queries", str(files["queries"]), "--name", "q"]),
            ("import_run", ["import_run", *map(str, files["runs"]), "--collection", "bench", "--order", "file"]),
            (
                "pool",
                [
                    *("pool", "--name", "p", "--queries", "q", "--runs", ",".join(names), "--rank-cutoff", "10"),
                    *("--depth", str(depth), "--tokenizer", "whitespace", "--out", str(out)),
                ],
            ),
        ]
        _manage(["help"], env)  # untimed: Python compiles the project once, as at a user's first command
        seconds: dict[str, float] = {}
        cpu: dict[str, float] = {}
        peak: dict[str, float] = {}
        for step, arguments in steps:
            seconds[step], cpu[step], peak[step] = _manage([*arguments, "-v", "0"], env)
        qids = sorted((line.split("\t", 1)[0] for line in out.read_text().splitlines()), key=int)
        pool_file = [
            *("pool", "--name", "p-file", "--queries", "q", "--runs", ",".join(names), "--rank-cutoff", "10"),
            *("--depth", str(depth), "--tokenizer", "whitespace", "--wordlist", str(words), "--out", str(from_file)),
        ]
        wordlist_file = dict(zip(("seconds", "cpu", "peak_mb"), _manage([*pool_file, "-v", "0"], env), strict=True))
        wordlist_file["same_pool"] = qids == sorted(
            (line.split("\t", 1)[0] for line in from_file.read_text().splitlines()), key=int
        )
        return {
            "wordlist_file": wordlist_file,
            "seconds": sum(seconds.values()),
            "cpu": sum(cpu.values()),
            "steps": seconds,
            "cpu_steps": cpu,
            "peak_steps": peak,
            "qids": qids,
            "peak_mb": max(peak.values()),
            "pooled": len(qids),
        }

    def _startup(self, work: Path, repeat: int = 5) -> dict:
        """Median seconds of a small command as a user runs it, ``manage.py import_queries``
        on a 10-line file (a new name each time), beside Django's own ``manage.py help``;
        each a fresh process against the database the import step created."""
        queries = work / "ten-queries.tsv"
        queries.write_text("".join(f"s{i}\tstart-up query {i}\n" for i in range(10)))
        env = _user_env(work, self.bytecode)
        _manage(["help"], env)  # untimed: the bytecode compiled once

        def seconds(*arguments: str) -> float:
            return _manage(list(arguments), env)[0]

        command = [seconds("import_queries", str(queries), "--name", f"startup{i}", "-v", "0") for i in range(repeat)]
        help_ = [seconds("help") for _ in range(repeat)]
        return {"command": statistics.median(command), "help": statistics.median(help_), "repeat": repeat}

    def _grep(self, path: Path) -> float:
        """Seconds for ``grep -c ''`` over the collection: the practical floor of any pass over it."""
        start = time.perf_counter()
        subprocess.run(["grep", "-c", "", str(path)], check=True, capture_output=True)
        return time.perf_counter() - start

    def _print(self, row: dict) -> None:
        i, p = row["import"], row["pool"]
        self.stdout.write(
            f"{row['passages']:>10,} passages  import {i['seconds']:6.1f} s {i['peak_mb']:6.0f} MB "
            f"({', '.join(f'{k} {v:.1f} s' for k, v in i['phases'].items())})\n"
            f"{'':>20}  pool   {p['seconds']:6.1f} s {p['peak_mb']:6.0f} MB  ({p['pooled']:,} queries)\n"
            f"{'':>20}  floor  {row['grep']:6.2f} s  (grep -c over the collection, from the page cache)\n"
            f"{'':>20}  start-up {row['startup']['command']:4.2f} s  (manage.py import_queries on a 10-line file; "
            f"manage.py help {row['startup']['help']:4.2f} s; medians of {row['startup']['repeat']} fresh processes)"
        )
        self.stdout.write(f"{'':>20}  where pool's work goes (a fresh process, CPU s / wall s):")
        for name, spent in row["phases"].items():
            self.stdout.write(f"{'':>22}  {spent['cpu']:5.2f} / {spent['wall']:5.2f}  {name}")
        f = row["first"]
        self.stdout.write(
            f"{'':>20}  first pool in one command (pool given the files): {f['seconds']:6.1f} s {f['peak_mb']:6.0f} MB"
        )
        c = row["commands"]
        each = ", ".join(
            f"{k} {v:.1f} s (CPU {c['cpu_steps'][k]:.1f}, {c['peak_steps'][k]:.0f} MB)" for k, v in c["steps"].items()
        )
        self.stdout.write(
            f"{'':>20}  as typed (a process per command; bytecode "
            f"{'cached' if self.bytecode else 'not cached'}): {c['seconds']:6.1f} s, CPU {c['cpu']:.1f} s ({each})"
        )
        w = c["wordlist_file"]
        self.stdout.write(
            f"{'':>20}  pool --wordlist (the same 64 words as a file): {w['seconds']:.2f} s, CPU {w['cpu']:.2f} s, "
            f"{w['peak_mb']:.0f} MB (the built-in list: {c['steps']['pool']:.2f} s, CPU {c['cpu_steps']['pool']:.2f} s; "
            f"same pool: {w['same_pool']})"
        )
        if "naive" in row:
            n = row["naive"]
            self.stdout.write(
                f"{'':>20}  naive  {n['seconds']:6.1f} s {n['peak_mb']:6.0f} MB  "
                f"pool {n['seconds'] / p['seconds']:.1f}x faster, import + pool {n['seconds'] / (i['seconds'] + p['seconds']):.1f}x; "
                f"same pool: {row['same_pool']}\n"
                f"{'':>20}  first pool in one command {n['seconds'] / f['seconds']:.1f}x faster than naive "
                f"(its score order; same pool as naive's file order: {n['qids'] == f['qids']})\n"
                f"{'':>20}  as commands {n['seconds'] / c['seconds']:.1f}x faster than naive, "
                f"{n['cpu'] / c['cpu']:.1f}x in CPU (same pool: {n['qids'] == c['qids']}); "
                f"its pool command {n['seconds'] / c['steps']['pool']:.1f}x, {n['cpu'] / c['cpu_steps']['pool']:.1f}x in CPU"
            )

    def _markdown(self, rows: list[dict], o: dict) -> str:
        lines = [
            "| passages | step | seconds | CPU s | peak MB | pooled queries | naive ÷ this | in CPU |",
            "| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
        ]
        for row in rows:
            naive = row.get("naive")
            commands = row["commands"]

            def last(c: dict) -> dict:
                return {
                    "seconds": c["steps"]["pool"],
                    "cpu": c["cpu_steps"]["pool"],
                    "peak_mb": c["peak_steps"]["pool"],
                    "pooled": c["pooled"],
                }

            both = {
                "seconds": row["import"]["seconds"] + row["pool"]["seconds"],
                "cpu": row["import"]["cpu"] + row["pool"]["cpu"],
                "peak_mb": max(row["import"]["peak_mb"], row["pool"]["peak_mb"]),
                "pooled": row["pool"]["pooled"],
            }
            steps = {
                "import": row["import"],
                "pool": row["pool"],
                "import + pool": both,
                "first pool in one command": row["first"],
                "as typed (5 commands, a process each)": commands,
                "`pool` as a command (its own process)": last(commands),
                "`pool --wordlist` (the same words as a file)": dict(
                    commands["wordlist_file"], pooled=commands["pooled"]
                ),
            }
            if naive:
                steps["naive"] = naive
            for step, r in steps.items():
                ratio = f"{naive['seconds'] / r['seconds']:.1f}x" if naive and step != "naive" else ""
                cpu_ratio = f"{naive['cpu'] / r['cpu']:.1f}x" if naive and step != "naive" else ""
                pooled = f"{r['pooled']:,}" if step != "import" else ""
                peak = f"{r['peak_mb']:,.0f}" if r["peak_mb"] is not None else ""
                lines.append(
                    f"| {row['passages']:,} | {step} | {r['seconds']:.1f} | {r['cpu']:.1f} | {peak} | {pooled} "
                    f"| {ratio} | {cpu_ratio} |"
                )
            startup = row["startup"]
            lines.append(
                f"\nStart-up: `manage.py import_queries` on a 10-line file {startup['command']:.2f} s, "
                f"`manage.py help` {startup['help']:.2f} s (medians of {startup['repeat']} fresh processes)."
            )
        return "\n".join(lines)


def _user_env(work: Path, bytecode: Path | None) -> dict[str, str]:
    """The environment of a user's command on the benchmark's database (in ``work``): Python caching the
    project's bytecode in the folder ``bytecode``, as Python does by default (this machine sets
    ``PYTHONDONTWRITEBYTECODE``, which would make every command compile the project again; the folder keeps
    the checkout untouched); ``None`` keeps the machine's setting."""
    env = dict(os.environ, VAR_DIR=str(work), DATABASE_URL=f"sqlite:///{work / 'db.sqlite3'}")
    if bytecode is not None:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(bytecode)
    return env


def _manage(arguments: list[str], env: dict[str, str]) -> tuple[float, float, float]:
    return run_command(arguments, env, settings.BASE_DIR)
