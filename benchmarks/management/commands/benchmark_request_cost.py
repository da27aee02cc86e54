"""Which requests a viewer or researcher can make cost more as the batch grows (issue 68).

Every GET the site's resolver answers (``tests.support.url_patterns.site_patterns``; the admin,
the annotators' and participants' paths and the token links left out, each named in the output),
with its placeholders filled from a batch and a report built at each size, is asked twice in this
process with Django's test client: once after every cache is emptied (the ``results`` and
``shared`` caches and the report's drawn figures: what the first viewer after new answers pays) and
once again (warm). Jobs a request starts are recorded but not run (their task is not sent), so
a request's figure is its own work, not the job's.
"""

from __future__ import annotations

import re
import shutil
import statistics
import time
from pathlib import Path
from unittest import mock

from django.conf import settings
from django.core.cache import caches
from django.core.management.base import CommandError
from django.db import connection
from django.test import Client

from annotation.models import Assignment, Batch, Hit, Judgment
from benchmarks.management.commands.benchmark_pages import Command as Pages
from benchmarks.management.commands.benchmark_pages import registered_study
from benchmarks.site_load import format_table
from benchmarks.site_server import analyze, refuse_real_batches, researcher_client
from core.management.cli import ProjectCommand, command_errors
from core.models import Job
from metrics import services as metrics_services
from metrics.models import Report
from pooling.models import QuerySet, Run
from tests.support.batches import answered_batch
from tests.support.url_patterns import site_patterns

PREFIX = "cost-"
#: Paths no viewer or researcher reaches (the admin; the annotators' and Prolific participants'
#: pages; links carrying a token) or that answer only POST: not measured, each listed in the output.
LEFT_OUT = re.compile(
    r"^/admin/|^/annotation/(next|assignments|prolific|welcome|batches/\{name\}/training)/|^/favicon|"
    r"/logout/|/acknowledge/|/publish/|/sync/|/cancel/|/escalate/|/bonuses/pay/|/adjudicate|/prelabel/$|"
    r"/calibration-sample/$|/echo/$|\{format\}|\{uidb64\}|/team/\{username\}/(access|active)/"
)

#: A report's figures (a pattern's ``{kind}.png`` and ``{kind}.svg``): each kind asked, with its query string.
FIGURES = {
    "{kind}.png": (("distribution", "?cutoff=10"), ("cutoffs", "")),
    "{kind}.svg": (("metric", "?metric=ARaB&variant=tf"), ("labels", "?metric=ARaB&variant=tf&cutoff=10")),
}


class Command(ProjectCommand):
    help = (
        "Time every GET page and API endpoint a viewer or researcher can reach, cold (every cache emptied) "
        "and warm, on a batch of each --queries size (--answers answers per query, a simulated crowd) and a "
        "report of --runs synthetic runs on that batch's labels (with their uncertainty), in this one "
        "process; prints ms per endpoint and size and the growth from the smallest size to the largest. "
        "Run it on a throw-away database (VAR_DIR of its own)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--queries", default="500,2000", help="batch sizes, comma-separated (500,2000)")
        parser.add_argument("--answers", type=int, default=5, help="answers per query (5)")
        parser.add_argument("--runs", type=int, default=7, help="synthetic runs in the report (7)")
        parser.add_argument("--passages", type=int, default=20_000, help="synthetic collection size (20,000)")
        parser.add_argument("--only", default="", help="measure only the paths matching this regular expression")
        parser.add_argument(
            "--sample", type=int, default=200, help="calibration sample of the machine-labelled batch (200 queries)"
        )
        parser.add_argument("--repeats", type=int, default=1, help="warm requests per path (median; 1)")

    def handle(self, **o):
        sizes = [int(part) for part in o["queries"].split(",") if part.strip()]
        if not sizes or min([*sizes, o["answers"], o["runs"], o["repeats"]]) < 1:
            raise CommandError("every count must be at least 1")
        refuse_real_batches(PREFIX)
        with command_errors():
            states = {n: self._state(n, o["answers"], o["runs"], o["passages"], o["sample"]) for n in sizes}
        client = researcher_client(f"{PREFIX}researcher", "request-cost-password")
        only = re.compile(o["only"]) if o["only"] else None
        figures: dict[str, dict[int, tuple[int, float, float, int]]] = {}
        skipped: list[str] = []
        with mock.patch("core.tasks.send_job"):  # jobs a request starts are recorded (its cost), not run here
            for _label, path in _targets(states[min(sizes)])[0]:  # untimed: imports and first-use costs
                _consume(client.get(path, secure=True))
            for n, state in states.items():
                targets, left = _targets(state)
                skipped = left
                for label, path in targets:
                    if only is not None and not only.search(label):
                        continue
                    figures.setdefault(label, {})[n] = self._ask(client, path, o["repeats"])
                    Job.objects.filter(status=Job.Status.PENDING).delete()  # below the bound on jobs in flight
        small, large = min(sizes), max(sizes)
        rows = []
        post_only = sorted(label for label, by_size in figures.items() if by_size[large][0] == 405)
        for label, by_size in figures.items():
            if label in post_only:
                continue
            row: dict[str, object] = {"path": label, "status": by_size[large][0]}
            for n in sizes:
                row[f"{n:,} cold ms"] = by_size[n][1]
                row[f"{n:,} warm ms"] = by_size[n][2]
            row[f"SQL at {large:,}"] = by_size[large][3]
            if len(sizes) > 1:
                row["cold growth"] = f"{by_size[large][1] / max(by_size[small][1], 0.1):.1f}x"
            rows.append(row)
        rows.sort(key=lambda r: -float(r[f"{large:,} cold ms"]))
        self.stdout.write(
            f"\n{', '.join(f'{n:,}' for n in sizes)} queries, {o['answers']} answers each; report of {o['runs']} runs "
            f"on the batch's labels; {connection.vendor}; one process, slowest cold first"
        )
        self.stdout.write(format_table(rows))
        admin = [path for path in skipped if path.startswith("/admin/")]
        skipped = [path for path in skipped if not path.startswith("/admin/")] + [f"/admin/… ({len(admin)} paths)"]
        self.stdout.write(
            "\nNot measured (no viewer or researcher GETs them, or POST only):\n  " + "\n  ".join(skipped)
        )
        self.stdout.write("\nAsked, but POST only (405):\n  " + "\n  ".join(post_only))

    def _ask(self, client: Client, path: str, repeats: int) -> tuple[int, float, float, int]:
        """(status, cold ms, warm ms (median of ``repeats``), SQL statements of the cold request)."""
        _empty_caches()
        statements = [0]

        def count(execute, sql, params, many, context):
            statements[0] += 1
            return execute(sql, params, many, context)

        with connection.execute_wrapper(count):
            started = time.perf_counter()
            response = client.get(path, secure=True)
            cold = (time.perf_counter() - started) * 1000
            _consume(response)
        warm = []
        for _ in range(repeats):
            started = time.perf_counter()
            _consume(client.get(path, secure=True))
            warm.append((time.perf_counter() - started) * 1000)
        return response.status_code, cold, statistics.median(warm), statements[0]

    # -- the state ---------------------------------------------------------------------------
    def _state(self, queries: int, answers: int, runs: int, passages: int, sample: int) -> dict:
        name = f"{PREFIX}{queries}"
        if (batch := Batch.objects.filter(name=name).first()) is None:
            started = time.monotonic()
            registered_study(Path(settings.VAR_DIR) / "benchmark-request-cost" / name, name, passages, queries, runs)
            batch = answered_batch(name, QuerySet.objects.get(name=name), worker_prefix=PREFIX, answers=answers)
            self.stdout.write(f"Built batch {name} in {time.monotonic() - started:.0f} s")
        run_list = list(Run.objects.filter(name__startswith=f"{name}-run-").order_by("name"))
        if (report := Report.objects.filter(name=name).first()) is None:
            started = time.monotonic()
            report = metrics_services.build_batch_report(name, batch, run_list, baseline=run_list[0], bar=False)
            self.stdout.write(f"Built the report on its labels in {time.monotonic() - started:.0f} s")
        analyze()
        job = Job.objects.filter(description=name).first() or Job.objects.create(
            kind="benchmark", description=name, status=Job.Status.DONE, group_id=batch.group_id
        )
        machine = Pages(stdout=self.stdout)._machine_batch(batch, sample)
        return {"batch": batch, "report": report, "runs": run_list, "machine": machine, "job": job}


def _targets(state: dict) -> tuple[list[tuple[str, str]], list[str]]:
    """(label, path) of every GET a viewer or researcher can make on this state; the patterns left out."""
    batch, report, runs = state["batch"], state["report"], state["runs"]
    hit = Hit.objects.filter(batch=batch).order_by("position").first()
    assignment = Assignment.objects.filter(hit=hit).first()
    judgment = Judgment.objects.filter(assignment=assignment).first()
    qid = batch.queries.order_by("pk").values_list("qid", flat=True).first()
    sensitivity = f"batch={batch.name}&runs={','.join(run.name for run in runs)}"
    fill = {
        "name": batch.name,
        "qid": qid,
        "position": str(hit.position),
        "kind": "prolific",
        "fmt": "tsv",
    }
    extra_queries = {
        "/metrics/label-sensitivity/": f"?{sensitivity}",
        "/api/metrics/label-sensitivity/": f"?{sensitivity}",
    }
    by_prefix = (
        (("/metrics/{name}", "/api/metrics/reports/{name}"), "name", report.name),
        # the synthetic collection and query set share the batch's name
        (("/api/pooling/collections/{name}", "/api/pooling/query-sets/{name}"), "name", batch.name),
        (("/api/pooling/runs/{name}",), "name", runs[0].name),
        (("/pooling/import/{kind}", "/api/pooling/imports/{kind}"), "kind", "queries"),
        (("/api/annotation/hits/{pk}",), "pk", str(hit.pk)),
        (("/api/annotation/assignments/{pk}",), "pk", str(assignment.pk)),
        (("/api/annotation/judgments/{pk}",), "pk", str(judgment.pk)),
        (("/jobs/{pk}", "/api/jobs/{pk}"), "pk", str(state["job"].pk)),
    )
    targets, left = [], []
    for _name, template in site_patterns():
        if LEFT_OUT.search(template):
            left.append(template)
            continue
        values = dict(fill)
        if "calibration" in template or "prelabels" in template or "/machine/" in template:
            values["name"] = state["machine"].name
        values |= {key: value for prefixes, key, value in by_prefix if template.startswith(prefixes)}
        placeholders = re.findall(r"\{(\w+)\}", template)
        if any(p not in values for p in placeholders) or template.startswith("/pooling/pools/{name}"):
            left.append(f"{template} (nothing of its kind in the benchmark's state)")
            continue
        for kind, query in FIGURES.get(template[-10:], ()):
            targets.append(
                (template.replace("{kind}", kind) + query, _filled(template, values | {"kind": kind}) + query)
            )
        if template[-10:] not in FIGURES:
            query = extra_queries.get(template, "")
            targets.append((template + ("?…" if query else ""), _filled(template, values) + query))
    return targets, left


def _filled(template: str, values: dict[str, str]) -> str:
    return re.sub(r"\{(\w+)\}", lambda m: values[m.group(1)], template)


def _consume(response) -> None:
    """Read a streamed body to its end (its cost is the request's)."""
    if getattr(response, "streaming", False):
        for _ in response.streaming_content:
            pass


def _empty_caches() -> None:
    """What a first viewer after new answers meets: no cached results or pages, no drawn figure."""
    for alias in settings.CACHES:
        caches[alias].clear()
    plots = Path(settings.CACHE_DIR) / "plots"
    if plots.exists():
        shutil.rmtree(plots)
