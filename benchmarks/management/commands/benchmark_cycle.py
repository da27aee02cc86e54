import os
import re
import statistics
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import CommandError
from django.db import connection, transaction
from django.db.models.sql import compiler as compilers
from django.template.base import Template
from django.test import Client
from django.utils import timezone

from annotation import services
from annotation.crowd.services.pseudonyms import worker_for
from annotation.models import Assignment, Batch, Hit, Judgment, Provider
from benchmarks.measure import sqlite_commit_seconds
from benchmarks.site_load import format_table, interleaved_multiple, interleaved_schedule
from benchmarks.site_server import ServerCPU, analyze, annotator_accounts, refuse_real_batches, served
from core.management.cli import ProjectCommand, command_errors
from pooling.models import QuerySet
from pooling.services import create_query_set
from tests.support.virtual_annotator import ASSIGNMENT_PATH, CSRF_INPUT, QUESTION_INPUT, VirtualAnnotator

PREFIX = "cycle-"
PASSWORD = "cycle-benchmark-password"
KINDS = ("template page", "login", "next", "HIT page", "submit")
CYCLE = ("next", "HIT page", "submit")


class _Meter(ServerCPU):
    def timed(self, cpu: dict, kind: str, work):
        """``work()``, its server CPU (gunicorn's, the database's) added to ``cpu[kind]``."""
        result, _wall, site, db = self.spent(work)
        cpu[kind].append((site, db))
        return result


def _statement_label(sql: str) -> str:
    """``SELECT django_session``: a statement's verb and the first table it names outside parentheses
    (the shape of the statement, not its SQL)."""
    verb = sql.split(None, 1)[0].upper() if sql.strip() else "?"
    if verb in ("BEGIN", "SAVEPOINT", "RELEASE", "COMMIT"):
        return verb
    depth, outer = 0, []
    for char in sql[:4000]:
        depth += char == "("
        outer.append(char if depth == 0 else " ")
        depth -= char == ")"
    table = re.search(r'(?:FROM|INTO|UPDATE)\s+"?([A-Za-z_][A-Za-z0-9_]*)"?', "".join(outer))
    return f"{verb} {table.group(1)}" if table else verb


class _Anatomy:
    """One request kind's statements and this thread's CPU: the total, the database call (on PostgreSQL the
    client's side), the ORM's SQL compilers and template rendering (outermost calls); the rest is Django's
    request handling, the middleware and the views' own Python."""

    def __init__(self) -> None:
        self.cpu: list[float] = []
        self.parts: dict[str, list[float]] = {"SQL run": [], "SQL compile": [], "templates": []}
        self.statements: list[list[str]] = []

    @property
    def statements_per_request(self) -> float:
        return statistics.mean(len(s) for s in self.statements) if self.statements else 0.0

    @classmethod
    def measure(cls, into: "_Anatomy | None", request):
        spent = {"SQL run": 0.0, "SQL compile": 0.0, "templates": 0.0}
        statements: list[str] = []
        depth = {"SQL compile": 0, "templates": 0}
        patched = [
            (owner, "as_sql", "SQL compile")
            for owner in (
                compilers.SQLCompiler,
                compilers.SQLInsertCompiler,
                compilers.SQLUpdateCompiler,
                compilers.SQLDeleteCompiler,
                compilers.SQLAggregateCompiler,
            )
        ] + [(Template, "render", "templates")]
        originals = [(owner, name, owner.__dict__[name]) for owner, name, _ in patched]

        def timed(original, part):
            def wrapper(*args, **kwargs):
                depth[part] += 1
                started = time.thread_time()
                try:
                    return original(*args, **kwargs)
                finally:
                    depth[part] -= 1
                    if depth[part] == 0:
                        spent[part] += time.thread_time() - started

            return wrapper

        def run(execute, sql, params, many, context):
            statements.append(_statement_label(sql))
            started = time.thread_time()
            try:
                return execute(sql, params, many, context)
            finally:
                spent["SQL run"] += time.thread_time() - started

        for (owner, name, part), (_, _, original) in zip(patched, originals, strict=True):
            setattr(owner, name, timed(original, part))
        try:
            started = time.thread_time()
            with connection.execute_wrapper(run):
                response = request()
            cpu = time.thread_time() - started
        finally:
            for owner, name, original in originals:
                setattr(owner, name, original)
        if into is not None:
            into.cpu.append(cpu)
            for part, seconds in spent.items():
                into.parts[part].append(seconds)
            into.statements.append(statements)
        return response

    def describe(self) -> str:
        if not self.cpu:
            return "not measured"
        total = statistics.median(self.cpu) * 1000
        parts = {part: statistics.median(v) * 1000 for part, v in self.parts.items()}
        rest = statistics.median(c - sum(p[i] for p in self.parts.values()) for i, c in enumerate(self.cpu)) * 1000
        split = ", ".join(f"{part} {ms:.2f}" for part, ms in parts.items())
        shapes = self.statements[-1]
        listed = "; ".join(shapes) if shapes else "none"
        return (
            f"CPU {total:.2f} ms ({split}, Django/middleware/views {rest:.2f}); "
            f"{self.statements_per_request:g} statements: {listed}"
        )


class Command(ProjectCommand):
    help = (
        "Server cost of the annotator's path, one request at a time: server CPU per request kind (the "
        "gunicorn worker and, on PostgreSQL, the database's processes, read from /proc) and SQL statements "
        "per request, for batches of each --hits size (half of their HITs already answered), next to a "
        "template page without SQL (GET /admin/login/). One sequential client, gunicorn 1 worker x 1 thread; "
        "after an uncounted warm-up, small blocks of template pages and of HIT cycles alternate (--block), "
        "the sizes taking turns, and each multiple is taken from the interleaved totals. "
        "Run it on a throw-away database: bin/benchmark-cycle makes one on PostgreSQL and one on SQLite."
    )

    def add_arguments(self, parser):
        parser.add_argument("--hits", default="100,10000", help="batch sizes, comma-separated (default 100,10000)")
        parser.add_argument("--cycles", type=int, default=60, help="HIT cycles measured per batch (default 60)")
        parser.add_argument("--template-requests", type=int, default=100, help="template pages measured (100)")
        parser.add_argument("--queries-per-hit", type=int, default=5, help="queries per HIT (default 5)")
        parser.add_argument("--places", type=int, default=3, help="annotators per HIT (default 3)")
        parser.add_argument("--annotators", type=int, default=3, help="accounts taking turns (default 3)")
        parser.add_argument(
            "--block",
            type=int,
            default=3,
            help="HIT cycles per block; each block of a size follows its share of template pages (default 3)",
        )
        parser.add_argument(
            "--sqlite-settings",
            action="store_true",
            help="only compare SQLite journal, synchronous and checkpoint settings: time per small write transaction",
        )

    def handle(self, **o):
        if o["sqlite_settings"]:
            return self._sqlite_settings()
        sizes = [int(s) for s in o["hits"].split(",") if s.strip()]
        if not sizes or min(sizes) < 2 or min(o["cycles"], o["annotators"], o["block"], o["template_requests"]) <= 0:
            raise CommandError(
                "--hits needs sizes >= 2; --cycles, --annotators, --block and --template-requests must be positive"
            )
        refuse_real_batches(PREFIX)
        Batch.objects.filter(name__startswith=PREFIX, status=Batch.Status.PUBLISHED).update(
            status=Batch.Status.CANCELLED
        )
        with command_errors():
            accounts = annotator_accounts(
                [f"{PREFIX}annotator-{i:02d}" for i in range(o["annotators"] + 1)], PASSWORD, reuse=True
            )
        counted_user, accounts = accounts[-1], accounts[:-1]
        with served(
            "cycle",
            workers=1,
            threads=1,
            say=self.stdout.write,
            detail=f", CONN_MAX_AGE={connection.settings_dict['CONN_MAX_AGE']}",
        ) as (port, server):
            meter = _Meter(server.pid)
            if connection.vendor == "postgresql" and meter.postmaster is None:
                self.stderr.write("PostgreSQL is not on this machine: its CPU is not counted")
            base = f"http://127.0.0.1:{port}"
            batches = {}
            for size in sizes:
                with command_errors():
                    batches[size] = self._batch(size, o["queries_per_hit"], o["places"])
            _publish(batches, None)
            clients = [VirtualAnnotator(base, name, PASSWORD, seed=i) for i, name in enumerate(accounts)]
            cpu = {size: {k: [] for k in KINDS} for size in sizes}
            for client in clients:
                meter.timed(cpu[sizes[0]], "login", client.login)
            for size in sizes[1:]:
                cpu[size]["login"] = cpu[sizes[0]]["login"]
            # Warm-up, not counted: the first requests of each kind load templates and code.
            _publish(batches, sizes[0])
            self._measure(base, meter, clients, 5, len(clients), {k: [] for k in KINDS})
            blocks = {size: [] for size in sizes}
            schedule = interleaved_schedule(sizes, o["template_requests"], o["cycles"], o["block"])
            published = None
            for size, templates, cycles in schedule:
                if published != size:
                    _publish(batches, size)
                    published = size
                blocks[size].append(self._measure(base, meter, clients, templates, cycles, cpu[size]))
            for client in clients:
                client.close()
            pages = [sum(r) for size in sizes for r in cpu[size]["template page"]]
            self.stdout.write(
                f"\ntemplate page (GET /admin/login/, no SQL): {statistics.mean(pages) * 1000:.2f} ms of CPU over "
                f"{len(pages)} requests; {len(schedule)} blocks of about {o['block']} HIT cycles, each after its "
                "template pages; every multiple is against the template pages interleaved with that size"
            )
            multiples = {}
            for size in sizes:
                _publish(batches, size)
                found = self._count_sql(counted_user)
                _publish(batches, None)
                multiples[size] = self._report(
                    size, cpu[size], blocks[size], {k: a.statements_per_request for k, a in found.items()}
                )
                self.stdout.write(
                    "What each request does (this process, Django's test client; CPU ms per request, median; "
                    "'SQL run': the database call (on PostgreSQL its client side only), 'SQL compile': the ORM "
                    "turning querysets into SQL):"
                )
                for kind, anatomy in found.items():
                    self.stdout.write(f"  {kind}: {anatomy.describe()}")
            first = multiples[sizes[0]]  # each size's CPU per HIT cycle against the first size's
            for size in sizes[1:]:
                change = multiples[size].value / first.value - 1
                raw = multiples[size].measured / first.measured - 1
                self.stdout.write(
                    f"{size:,} HITs against {sizes[0]:,}: {change:+.1%} per HIT cycle in multiples of the template "
                    f"page ({first.value:.2f}x -> {multiples[size].value:.2f}x; in CPU ms {raw:+.1%})"
                )

    def _sqlite_settings(self) -> None:
        folder = Path(
            tempfile.mkdtemp(prefix="benchmark-sqlite-", dir=settings.VAR_DIR if settings.VAR_DIR.exists() else None)
        )
        columns = ("journal", "synchronous", "checkpoint pages", "µs per commit")
        choices = (
            ("delete", "full", 1000),
            ("wal", "full", 1000),
            ("wal", "normal", 1000),
            ("wal", "normal", 10000),
        )
        path = str(folder / "commit.sqlite3")
        rows = [dict(zip(columns, (*c, 1e6 * sqlite_commit_seconds(path, *c)), strict=True)) for c in choices]
        folder.rmdir()
        self.stdout.write(f"2,000 small write transactions each, in {folder}:")
        self.stdout.write(format_table(rows))

    # -- preparation -------------------------------------------------------------------------
    def _batch(self, hits: int, per_hit: int, places: int) -> Batch:
        """A published in-house batch whose first half of HITs is answered by other workers (complete)."""
        started = time.monotonic()
        stamp = f"{PREFIX}{hits}-{time.strftime('%Y%m%d-%H%M%S')}"
        query_set = create_query_set(
            stamp,
            [(str(i), f"cycle benchmark query {i}") for i in range(hits * per_hit)],
            origin=QuerySet.Origin.IMPORTED,
        )
        batch_settings = services.BatchSettings(assignments_per_query=places, queries_per_hit=per_hit)
        with transaction.atomic():
            batch = services.create_batch(stamp, batch_settings, query_set=query_set)
            services.publish_batch(batch)
            fillers = [worker_for(Provider.LOCAL, f"{PREFIX}filler-{i}") for i in range(places)]
            answered = list(batch.hits.order_by("position")[: hits // 2].prefetch_related("hit_queries"))
            now = timezone.now()
            made = Assignment.objects.bulk_create(
                [
                    Assignment(
                        hit=hit,
                        worker=worker,
                        provider_assignment_id=f"{stamp}-{hit.pk}-{worker.pk}",
                        status=Assignment.Status.SUBMITTED,
                        accepted_at=now,
                        submitted_at=now,
                        valid=True,
                    )
                    for hit in answered
                    for worker in fillers
                ],
                batch_size=2000,
            )
            queries = {hit.pk: list(hit.hit_queries.all()) for hit in answered}
            Judgment.objects.bulk_create(
                [
                    Judgment(assignment=a, batch_query_id=hq.batch_query_id, label="n")
                    for a in made
                    for hq in queries[a.hit_id]
                ],
                batch_size=5000,
            )
            Hit.objects.filter(pk__in=[h.pk for h in answered]).update(status=Hit.Status.COMPLETE)
        analyze()
        self.stdout.write(
            f"\nBatch {batch.name}: {hits:,} HITs of {per_hit}, {places} places each, "
            f"{len(answered):,} answered ({len(made):,} assignments); prepared in {time.monotonic() - started:.1f} s"
        )
        return batch

    # -- measuring ---------------------------------------------------------------------------
    def _measure(
        self, base: str, meter: "_Meter", clients, templates: int, cycles: int, cpu: dict
    ) -> tuple[float, int, float, int]:
        """A block: ``templates`` template pages, then ``cycles`` HIT cycles; returns their CPU and counts."""
        start = {kind: len(cpu[kind]) for kind in KINDS}
        probe = VirtualAnnotator(base, "-", "-")
        for _ in range(templates):
            page = meter.timed(cpu, "template page", lambda: probe.request("GET", "/admin/login/"))
            if page.status != 200:
                raise CommandError(f"/admin/login/ answered {page.status}")
        probe.close()
        for cycle in range(cycles):
            client = clients[cycle % len(clients)]
            answer = meter.timed(cpu, "next", lambda c=client: c.request("GET", "/annotation/next/"))
            location = urlsplit(answer.headers.get("location", "")).path
            if answer.status != 302 or not ASSIGNMENT_PATH.search(location):
                raise CommandError(f"cycle {cycle}: /annotation/next/ answered {answer.status} {location}")
            page = meter.timed(cpu, "HIT page", lambda c=client, p=location: c.request("GET", p))
            token = CSRF_INPUT.search(page.body)
            fields = list(dict.fromkeys(QUESTION_INPUT.findall(page.body)))
            if page.status != 200 or token is None or not fields:
                raise CommandError(f"cycle {cycle}: {location} answered {page.status}")
            form = {name: "n" for name in fields} | {"csrfmiddlewaretoken": token.group(1)}
            answer = meter.timed(cpu, "submit", lambda c=client, p=location, f=form: c.request("POST", p, f))
            if answer.status != 302:
                raise CommandError(f"cycle {cycle}: submit answered {answer.status}")

        def spent(kind: str) -> float:
            return sum(sum(r) for r in cpu[kind][start[kind] :])

        return spent("template page"), templates, sum(spent(kind) for kind in CYCLE), cycles

    def _count_sql(self, username: str, rounds: int = 5) -> dict[str, "_Anatomy"]:
        """What each request kind does, in this process (Django's test client, same database and settings):
        its SQL statements and where its CPU goes, over ``rounds`` HIT cycles after one uncounted."""
        browser = Client(HTTP_HOST="127.0.0.1")
        browser.force_login(get_user_model().objects.get(username=username))
        found = {k: _Anatomy() for k in ("template page", "next", "HIT page", "submit")}
        anonymous = Client(HTTP_HOST="127.0.0.1")
        for round_ in range(rounds + 1):
            keep = round_ > 0  # the first round compiles and loads what later ones reuse
            _Anatomy.measure(found["template page"] if keep else None, lambda: anonymous.get("/admin/login/"))
            answer = _Anatomy.measure(found["next"] if keep else None, lambda: browser.get("/annotation/next/"))
            if answer.status_code != 302:
                raise CommandError(f"counting: /annotation/next/ answered {answer.status_code}")
            where = answer["Location"]
            page = _Anatomy.measure(found["HIT page"] if keep else None, lambda w=where: browser.get(w))
            fields = list(dict.fromkeys(QUESTION_INPUT.findall(page.content.decode())))
            form = {name: "n" for name in fields}
            _Anatomy.measure(found["submit"] if keep else None, lambda w=where, f=form: browser.post(w, f))
        return found

    def _report(self, size: int, cpu: dict, blocks, sql: dict):
        """One table per batch size; ``x template``: CPU over the template pages interleaved with this size."""
        cycle = interleaved_multiple(blocks)
        template = cycle.template * 1000
        columns = ("request", "count", "site CPU ms", "db CPU ms", "total ms", "x template", "SQL")

        def per_request(kind: str) -> tuple[float, float]:
            rows = cpu[kind]
            return (statistics.mean(r[0] for r in rows) * 1000, statistics.mean(r[1] for r in rows) * 1000)

        rows = []
        for kind in KINDS:
            site, db = per_request(kind)
            statements = f"{sql[kind]:g}" if kind in sql else ""
            shown = (kind, len(cpu[kind]), site, db, site + db, (site + db) / template, statements)
            rows.append(dict(zip(columns, shown, strict=True)))
        site, db = (sum(part) for part in zip(*(per_request(k) for k in CYCLE), strict=True))
        shown = ("HIT cycle", len(cpu["submit"]), site, db, site + db, cycle.value, f"{sum(sql[k] for k in CYCLE):g}")
        rows.append(dict(zip(columns, shown, strict=True)))
        self.stdout.write(f"\n{size:,} HITs, {connection.vendor}, load average {os.getloadavg()[0]:.2f}:")
        self.stdout.write(format_table(rows))
        low, mid, high = cycle.spread()
        self.stdout.write(
            f"HIT cycle: {cycle.value:.2f}x template from the interleaved totals ({len(blocks)} blocks); "
            f"per block median {mid:.2f}x, middle half {low:.2f}-{high:.2f}x"
        )
        return cycle


def _publish(batches: dict, size: int | None) -> None:
    """Only the batch of ``size`` published (``None``: none): the annotators' next HIT comes from it."""
    Batch.objects.filter(pk__in=[b.pk for b in batches.values()]).update(status=Batch.Status.CANCELLED)
    if size is not None:
        Batch.objects.filter(pk=batches[size].pk).update(status=Batch.Status.PUBLISHED)
