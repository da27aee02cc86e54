import os
import signal
import statistics
import time
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError

from annotation import services
from annotation.machine.services.calibration import create_calibration_sample
from annotation.machine.services.prelabels import prelabel_batch
from annotation.models import Batch
from benchmarks.measure import children
from benchmarks.site_load import format_table
from benchmarks.site_server import ServerCPU, analyze, refuse_real_batches, served, site_answers
from core.management.cli import ProjectCommand, command_errors
from metrics import services as metrics_services
from metrics.models import Report
from platforms.inhouse.services.simulation import simulate_local_annotations
from pooling.models import QuerySet, Run
from pooling.synthetic import SyntheticSpec, write_collection, write_queries, write_runs
from tests.support.batches import answered_batch
from tests.support.virtual_annotator import VirtualAnnotator

PREFIX = "pages-"
PASSWORD = "pages-benchmark-password"
TEMPLATE = ("template page", "/admin/login/")


def registered_study(folder: Path, name: str, passages: int, queries: int, runs: int) -> list[str]:
    """A synthetic study written in ``folder`` (the collection is read from its file) and registered with the
    commands as ``name``: its runs' names."""
    folder.mkdir(parents=True, exist_ok=True)
    spec = SyntheticSpec(passages=passages, queries=queries, runs=runs, depth=100)
    write_collection(folder / "collection.tsv", spec)
    write_queries(folder / "queries.tsv", spec)
    paths = write_runs(folder, folder / "queries.tsv", spec)
    call_command("import_collection", str(folder / "collection.tsv"), name=name, verbosity=0)
    call_command("import_queries", str(folder / "queries.tsv"), name=name, verbosity=0)
    run_names = [f"{name}-run-{i}" for i in range(len(paths))]
    for path, run in zip(paths, run_names, strict=True):
        call_command("import_run", str(path), name=run, collection=name, verbosity=0)
    return run_names


class Command(ProjectCommand):
    help = (
        "Server cost of the researcher's pages: builds a batch of --queries queries with three answers "
        "each (a simulated crowd) and a bias report of --runs synthetic runs over the same queries, serves "
        "the site with gunicorn as shipped (config.gunicorn; --workers x --threads), and prints per page the "
        "server CPU (gunicorn's processes and, on PostgreSQL, the database's, from /proc) and the wall time "
        "of the first request and the median of --repeats later ones, next to a template page without SQL "
        "(GET /admin/login/) measured between them. Run it on a throw-away database."
    )

    def add_arguments(self, parser):
        parser.add_argument("--queries", type=int, default=5000, help="queries of the batch and the report (5000)")
        parser.add_argument("--runs", type=int, default=7, help="synthetic runs in the report (7)")
        parser.add_argument("--passages", type=int, default=50_000, help="synthetic collection size (50,000)")
        parser.add_argument("--repeats", type=int, default=5, help="repeat requests per page (5)")
        parser.add_argument("--workers", type=int, default=1, help="gunicorn workers (1: one request at a time)")
        parser.add_argument("--threads", type=int, default=1, help="threads per worker (1)")
        parser.add_argument(
            "--sample", type=int, default=300, help="calibration sample of the machine-labelled batch (300 queries)"
        )
        parser.add_argument(
            "--browser",
            type=int,
            default=0,
            help="also load the report page this many times in Chromium (Playwright; CHROMIUM_PATH, "
            "default /usr/bin/chromium): HTML and every image, in a new browser and again (0: not)",
        )
        parser.add_argument(
            "--new-workers",
            type=int,
            default=3,
            help="times a worker is replaced to measure the calibration report's first view in a new worker (3)",
        )

    def handle(self, **o):
        if min(o["queries"], o["runs"], o["repeats"], o["workers"], o["threads"]) < 1:
            raise CommandError("every count must be at least 1")
        refuse_real_batches(PREFIX)
        with command_errors():
            batch, report = self._state(o["queries"], o["runs"], o["passages"])
            machine = self._machine_batch(batch, o["sample"])
        user = f"{PREFIX}researcher"
        model = get_user_model()
        if not model.objects.filter(username=user).exists():
            model.objects.create_user(user, password=PASSWORD, is_staff=True)
        started = time.monotonic()
        with served(
            "pages",
            workers=o["workers"],
            threads=o["threads"],
            say=self.stdout.write,
        ) as (port, server):
            self.stdout.write(f"gunicorn answered after {time.monotonic() - started:.1f} s (master imports included)")
            client = VirtualAnnotator(f"http://127.0.0.1:{port}", user, PASSWORD)
            client.login()
            probe = VirtualAnnotator(f"http://127.0.0.1:{port}", "-", "-")  # the template page, logged out
            pages = [
                ("batch page", f"/annotation/batches/{batch.name}/"),
                ("live fragment", f"/annotation/batches/{batch.name}/live/"),
                ("agreement", f"/annotation/batches/{batch.name}/agreement/"),
                ("review queue", f"/annotation/batches/{batch.name}/review/"),
                ("report page", f"/metrics/{report.name}/"),
                ("distribution PNG", f"/metrics/{report.name}/distribution.png?cutoff=10"),
                ("metric SVG", f"/metrics/{report.name}/metric.svg?metric=ARaB&variant=tf"),
                ("calibration report", f"/annotation/batches/{machine.name}/calibration/"),
            ]
            cost = _Server(server.pid)
            rows = self._measure(client, probe, cost, pages, o["repeats"])
            base = float(rows[0]["repeat CPU ms"])
            rows.append(self._new_worker(client, cost, port, pages[-1][1], o["new_workers"], base))
            browser = (
                self._browser(
                    f"http://127.0.0.1:{port}", dict(client.cookies), f"/metrics/{report.name}/", o["browser"]
                )
                if o["browser"]
                else []
            )
            client.close()
            probe.close()
        self.stdout.write(f"\n{o['queries']:,} queries, {o['queries'] * 3:,} judgments; report of {o['runs']} runs")
        self.stdout.write(format_table(rows))
        if browser:
            self.stdout.write("\nThe report page in Chromium, HTML and every image loaded (ms from navigation):")
            self.stdout.write(format_table(browser))

    # -- the state ---------------------------------------------------------------------------
    def _state(self, queries: int, runs: int, passages: int) -> tuple[Batch, Report]:
        name = f"{PREFIX}{queries}"
        batch = Batch.objects.filter(name=name).first()
        report = Report.objects.filter(name=name).first()
        if batch is not None and report is not None:
            self.stdout.write(f"Reusing batch and report {name}")
            return batch, report
        started = time.monotonic()
        run_names = registered_study(Path(settings.VAR_DIR) / "benchmark-pages" / name, name, passages, queries, runs)
        query_set = QuerySet.objects.get(name=name)
        batch = answered_batch(name, query_set, worker_prefix=PREFIX)
        report = metrics_services.build_report(
            name, query_set, list(Run.objects.filter(name__in=run_names)), baseline=None, bar=False
        )
        analyze()
        self.stdout.write(f"Built batch and report {name} in {time.monotonic() - started:.0f} s")
        return batch, report

    def _machine_batch(self, crowd: Batch, sample: int) -> Batch:
        """A machine-labelled batch of the same queries (the rules pre-labeller) whose blind
        calibration sample of ``sample`` queries three simulated annotators answered (85% right)."""
        name = f"{crowd.name}-machine"
        batch = Batch.objects.filter(name=name).first()
        if batch is not None:
            return batch
        started = time.monotonic()
        batch = services.create_batch(name, services.BatchSettings(), query_set=crowd.query_set)
        prelabel_batch(batch, "rules")
        sample_batch = create_calibration_sample(batch, sample, seed=1)
        services.publish_batch(sample_batch)
        simulate_local_annotations(sample_batch, annotators=3, accuracy=0.85, seed=2, prefix=f"{PREFIX}sim")
        self.stdout.write(
            f"Built machine-labelled batch {name} ({sample}-query sample) in {time.monotonic() - started:.0f} s"
        )
        return batch

    # -- measuring ---------------------------------------------------------------------------
    def _browser(self, base: str, cookies: dict[str, str], path: str, times: int) -> list[dict]:
        """The report page as Chromium loads it, after the plots' first drawing (the measurement
        above drew them): the time from navigation until the page and every one of its images are
        loaded, in a new browser profile (nothing cached) and then again in the same one (what a
        researcher coming back pays: images kept or revalidated). The window is tall enough that
        every lazily loaded image is in view, so all of them load."""
        from playwright.sync_api import sync_playwright

        chromium = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
        complete = "Array.from(document.images).every(image => image.complete && image.naturalWidth > 0)"
        timings = """() => {
            const navigation = performance.getEntriesByType("navigation")[0];
            const images = performance.getEntriesByType("resource").filter(r => r.initiatorType === "img");
            return [navigation.responseEnd, navigation.loadEventEnd,
                    Math.max(0, ...images.map(r => r.responseEnd)), performance.now(), document.images.length];
        }"""
        fresh, again = [], []
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=chromium,
                headless=True,
                args=["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"],
            )
            try:
                for _ in range(times):
                    context = browser.new_context(viewport={"width": 1280, "height": 20000})
                    context.add_cookies([{"name": k, "value": v, "url": base} for k, v in cookies.items()])
                    page = context.new_page()
                    for into in (fresh, again):
                        answer = page.goto(base + path, wait_until="load")
                        if answer is None or answer.status != 200:
                            raise CommandError(f"Chromium: GET {path} answered {answer and answer.status}")
                        page.wait_for_function(complete, polling=10, timeout=60_000)
                        into.append(page.evaluate(timings))
                    context.close()
            finally:
                browser.close()

        def row(load: str, runs: list) -> dict:
            html, loaded, images, complete, count = (statistics.median(r[i] for r in runs) for i in range(5))
            return {
                "load": load,
                "HTML ms": f"{html:.0f}",
                "load event ms": f"{loaded:.0f}",
                "last image ms": f"{images:.0f}",
                "all images shown ms": f"{complete:.0f}",
                "images": int(count),
            }

        return [row("new browser (nothing cached)", fresh), row("again (same browser)", again)]

    def _new_worker(self, client, server: "_Server", port: int, path: str, times: int, base: float) -> dict:
        """The first view of ``path`` in a new worker (what a restart or a new worker pays, the
        report computed by another): each time the workers are stopped, gunicorn's master forks
        new ones, and once they answer the login page the view is timed."""
        timings = []
        for _ in range(times):
            old = set(children(server.gunicorn))
            for pid in old:
                os.kill(pid, signal.SIGTERM)
            deadline = time.monotonic() + 60
            while (
                set(children(server.gunicorn)) & old or not children(server.gunicorn)
            ) and time.monotonic() < deadline:
                time.sleep(0.1)
            while not site_answers(port) and time.monotonic() < deadline:
                time.sleep(0.2)
            client.close()  # a new connection: the old one was the stopped worker's
            timings.append(server.timed(client, path))
        return _row("calibration report, new worker", statistics.median(c for c, _ in timings), None, base, timings)

    def _measure(self, client, probe, server: "_Server", pages, repeats: int) -> list[dict]:
        template = [server.timed(probe, TEMPLATE[1]) for _ in range(3)]  # warm-up of the template page itself
        measured = {}
        for kind, path in pages:
            first = server.timed(client, path)
            again = []
            for _ in range(repeats):  # each repeat beside a template page, so load changes fall on both
                template.append(server.timed(probe, TEMPLATE[1]))
                again.append(server.timed(client, path))
            measured[kind] = (first, again)
        base = statistics.median(c for c, _ in template[3:]) if len(template) > 3 else template[-1][0]
        rows = [_row(TEMPLATE[0], None, base, base, template[3:])]
        for kind, (first, again) in measured.items():
            rows.append(_row(kind, first[0], statistics.median(c for c, _ in again), base, again))
        return rows


class _Server(ServerCPU):
    def timed(self, by: VirtualAnnotator, path: str) -> tuple[float, float]:
        """GET ``path`` (refused unless 200): the server's CPU ms and the wall ms."""
        answer, wall, site, db = self.spent(lambda: by.request("GET", path))
        if answer.status != 200:
            raise CommandError(f"GET {path} answered {answer.status}")
        return (site + db) * 1000, wall * 1000


def _row(page: str, first: float | None, repeat: float | None, base: float, timings) -> dict:
    """A row of the table: CPU ms of the first request and the repeats' median (``None``: not measured), the
    latter (else the former) over the template page's, and the median wall ms of ``timings``."""
    cost = first if repeat is None else repeat
    return {
        "page": page,
        "first CPU ms": "" if first is None else f"{first:.1f}",
        "repeat CPU ms": "" if repeat is None else f"{repeat:.1f}",
        "× template": f"{cost / base:.1f}" if base > 0 else "–",
        "repeat wall ms": f"{statistics.median(w for _, w in timings):.1f}",
    }
