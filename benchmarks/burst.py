"""The launch burst of ``manage.py benchmark_load --burst N --over T``: a Prolific study's first minute.

N Prolific participants (no account, no password) arrive evenly spread over T seconds, each
on its own thread with its own cookies, and do one HIT through the real study link, against
gunicorn with the shipped config: the study link (``/annotation/prolific/<batch>/``, the
arrival confirmed with Prolific's API, then a HIT claimed), the HIT page, the submit (a
redirect to Prolific's completion URL). Prolific is ``benchmarks/fakes/prolific.py``'s
``FakeProlific``, served in this process on loopback; gunicorn is pointed at it with
``PROLIFIC_API_URL``. The study is published through it as for real (``publish_batch``).

Reported: the error rate, p50/p95/p99 per step, and stored = accepted (the submitted
assignments and judgments against the submits that reached the completion URL).
"""

from __future__ import annotations

import math
import os
import tempfile
import threading
import time
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from urllib.parse import urlsplit

from django.conf import settings
from django.core.management.base import CommandError
from django.db import connection

from annotation import services
from annotation.labels import LABELS
from annotation.models import Assignment, Judgment
from benchmarks.site_load import PREFIX, format_table, free_port, percentiles, step_rows
from benchmarks.site_server import benchmark_batch, start_gunicorn, stop
from benchmarks.virtual_annotator import CSRF_INPUT, QUESTION_INPUT, VirtualAnnotator

STEPS = ("arrival", "HIT page", "submit")
PLACES = 3  # participants per HIT: claims of the same HITs meet, as in a real study


@dataclass
class Tally:
    """What the participants measured, step by step, shared by their threads under ``lock``."""

    latencies: dict[str, list[float]] = field(default_factory=lambda: {step: [] for step in STEPS})
    errors: dict[str, int] = field(default_factory=lambda: {step: 0 for step in STEPS})
    samples: list[str] = field(default_factory=list)
    accepted: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def took(self, step: str, started: float) -> None:
        with self.lock:
            self.latencies[step].append(time.perf_counter() - started)

    def accept(self) -> None:
        with self.lock:
            self.accepted += 1

    def failed(self, step: str, message: str) -> None:
        with self.lock:
            self.errors[step] += 1
            if len(self.samples) < 5:
                self.samples.append(message[:300])


def run_burst(command, o: dict) -> None:
    """N participants over T seconds against gunicorn and a Prolific-compatible server (module docstring)."""
    from benchmarks.fakes.prolific import FakeProlific, serve

    n, over, per_hit = o["burst"], o["over"], o["queries_per_hit"]
    if n <= 0 or over < 0:
        raise CommandError("--burst must be positive and --over not negative")
    fake = FakeProlific()
    fake_url, fake_server = serve(fake)
    port = free_port()
    site = f"http://127.0.0.1:{port}"
    _point_at(fake_url, site, n)
    batch, hits = _publish_study(n, per_hit)
    command.stdout.write(
        f"Study {batch.hit_type_id} for batch {batch.name!r}: {hits} HITs of {per_hit}, {hits * PLACES} places; "
        f"Prolific-compatible server at {fake_url}"
    )
    log = Path(tempfile.mkstemp(prefix="benchmark-burst-gunicorn-", suffix=".log")[1])
    command.stdout.write(
        f"gunicorn: {o['workers']} worker(s) x {o['threads']} thread(s) on {site}, "
        f"{connection.vendor} ({connection.settings_dict['NAME']}); log {log}"
    )
    server = start_gunicorn(port, workers=o["workers"], threads=o["threads"], log=log)
    tally = Tally()

    def participant(i: int, at: float) -> None:
        time.sleep(max(0.0, at - time.monotonic()))
        with fake_server.lock:  # the fake is not thread-safe; its own handler holds this lock
            _session, url = fake.start(batch.hit_type_id, f"{i:024x}")  # Prolific-shaped ids
        _one_participant(site, url, i, tally)

    started = time.monotonic()
    threads = [
        threading.Thread(target=participant, args=(i, started + (i * over / n if n > 1 else 0)), daemon=True)
        for i in range(n)
    ]
    command.stdout.write(f"{n} participants arriving over {over:g} s ...")
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(over + 300)
    finally:
        stop(server)
        fake_server.shutdown()
    _report(command, o, batch, tally, n, over, time.monotonic() - started)


def _point_at(fake_url: str, site: str, n: int) -> None:
    """Point gunicorn (through the environment it inherits) and this process at the fake Prolific."""
    from benchmarks.fakes.prolific import TOKEN

    env = {
        "PROLIFIC_API_URL": f"{fake_url}/api/v1/",
        "PROLIFIC_API_TOKEN": TOKEN,
        "PROLIFIC_PROJECT_ID": "burst-project",
        "PROLIFIC_WORKSPACE_ID": "burst-workspace",
        "PROLIFIC_COMPLETION_URL": f"{fake_url}/submissions/complete?cc=",
        "SITE_URL": site,
    }
    os.environ.update(env)  # gunicorn inherits them
    # Every participant arrives from this machine's address: one client with n arrivals (gunicorn only).
    os.environ["PROLIFIC_ARRIVALS_PER_CLIENT_PER_MINUTE"] = str(max(n, 30))
    os.environ["PROLIFIC_ARRIVAL_CHECKS_PER_STUDY_PER_MINUTE"] = str(max(n, 600))
    for key, value in env.items():
        setattr(settings, key, value)  # and this process publishes through the same fake


def _publish_study(n: int, per_hit: int):
    """A batch of made-up queries published as a Prolific study with ``PLACES`` places per HIT."""
    from annotation.crowd.clients.prolific_api import Prolific
    from annotation.crowd.providers.prolific import ProlificProvider
    from benchmarks.fakes.prolific import TOKEN

    hits = math.ceil(n / PLACES)
    batch = benchmark_batch(
        f"{PREFIX}burst-{time.strftime('%Y%m%d-%H%M%S')}",
        hits * per_hit,
        services.BatchSettings(
            provider="prolific",
            assignments_per_query=PLACES,
            queries_per_hit=per_hit,
            reward=Decimal("0.90"),
            provider_options={"estimated_minutes": 4},
        ),
    )
    services.publish_batch(batch, ProlificProvider(Prolific(settings.PROLIFIC_API_URL, TOKEN)))
    batch.refresh_from_db()
    return batch, hits


def _one_participant(site: str, url: str, i: int, tally: Tally) -> None:
    """One participant: the study link, the HIT page, the submit; each step timed, a failure tallied."""
    parts = urlsplit(url)
    browser = VirtualAnnotator(site, "-", "-", seed=i)
    step = "arrival"
    try:
        started = time.perf_counter()
        answer = browser.request("GET", f"{parts.path}?{parts.query}")
        location = urlsplit(answer.headers.get("location", "")).path
        if answer.status != 302 or "/prolific/hits/" not in location:
            raise ValueError(f"study link answered {answer.status} {location}")
        tally.took(step, started)
        step = "HIT page"
        started = time.perf_counter()
        page = browser.request("GET", location)
        token = CSRF_INPUT.search(page.body)
        fields = list(dict.fromkeys(QUESTION_INPUT.findall(page.body)))
        if page.status != 200 or token is None or not fields:
            raise ValueError(f"{location} answered {page.status}")
        tally.took(step, started)
        step = "submit"
        form = {name: browser.random.choice(LABELS) for name in fields}
        form["csrfmiddlewaretoken"] = token.group(1)
        started = time.perf_counter()
        answer = browser.request("POST", location, form)
        done = answer.headers.get("location", "")
        if answer.status != 302 or not done.startswith(settings.PROLIFIC_COMPLETION_URL):
            raise ValueError(f"submit answered {answer.status} {done}")
        tally.took(step, started)
        tally.accept()
    except Exception as exc:
        tally.failed(step, f"participant {i}, {step}: {exc!r}")
    finally:
        browser.close()


def _report(command, o: dict, batch, tally: Tally, n: int, over: float, seconds: float) -> None:
    """The table of steps, the error rate, and stored = accepted (a ``CommandError`` when they differ)."""
    rows = step_rows(tally, STEPS)
    both = [a + b for a, b in zip(tally.latencies["arrival"], tally.latencies["HIT page"], strict=False)]
    submitted = Assignment.objects.filter(
        hit__batch=batch, status__in=[Assignment.Status.SUBMITTED, Assignment.Status.APPROVED]
    ).count()
    judgments = Judgment.objects.filter(assignment__hit__batch=batch).count()
    failed = sum(tally.errors.values())
    per_hit = o["queries_per_hit"]
    command.stdout.write("")
    command.stdout.write(
        f"launch burst: {n} participants over {over:g} s (done in {seconds:.0f} s), gunicorn "
        f"{o['workers']}x{o['threads']}, {connection.vendor}, load average {os.getloadavg()[0]:.2f}"
    )
    command.stdout.write(format_table(rows))
    command.stdout.write(
        "(arrival: the study link, confirmed with Prolific, a HIT claimed; arrival + HIT page is the next-HIT "
        f"step of benchmark_load: p95 {percentiles(both)[1] * 1000:,.0f} ms)"
    )
    command.stdout.write(
        f"error rate: {failed / n:.2%} ({failed} of {n} participants); submits accepted: {tally.accepted}; "
        f"stored: {submitted} submitted assignments, {judgments} judgments "
        f"(accepted {tally.accepted} x {per_hit} = {tally.accepted * per_hit})"
    )
    for sample in tally.samples:
        command.stderr.write(f"  error: {sample}")
    if submitted != tally.accepted or judgments != tally.accepted * per_hit:
        raise CommandError("the judgments stored do not match the submissions accepted")
