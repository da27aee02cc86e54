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
from decimal import Decimal
from pathlib import Path
from urllib.parse import urlsplit

from django.conf import settings
from django.core.management.base import CommandError
from django.db import connection

from annotation import services
from annotation.labels import LABELS
from annotation.models import Assignment, Judgment
from benchmarks.site_load import PREFIX, format_table, free_port, percentiles
from benchmarks.site_server import benchmark_batch, start_gunicorn, stop
from benchmarks.virtual_annotator import _CSRF_INPUT, _QUESTION, VirtualAnnotator

STEPS = ("arrival", "HIT page", "submit")
PLACES = 3  # participants per HIT: claims of the same HITs meet, as in a real study


def run_burst(command, o: dict) -> None:
    from annotation.crowd.providers.prolific import ProlificProvider
    from annotation.crowd.providers.prolific_api import Prolific
    from benchmarks.fakes.prolific import TOKEN, FakeProlific, serve

    n, over, per_hit = o["burst"], o["over"], o["queries_per_hit"]
    if n <= 0 or over < 0:
        raise CommandError("--burst must be positive and --over not negative")
    fake = FakeProlific()
    fake_url, fake_server = serve(fake)
    port = free_port()
    site = f"http://127.0.0.1:{port}"
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
    stamp = time.strftime("%Y%m%d-%H%M%S")
    hits = math.ceil(n / PLACES)
    batch = benchmark_batch(
        f"{PREFIX}burst-{stamp}",
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
    latencies: dict[str, list[float]] = {step: [] for step in STEPS}
    errors: dict[str, int] = {step: 0 for step in STEPS}
    samples: list[str] = []
    accepted = [0]
    lock = threading.Lock()

    def participant(i: int, at: float) -> None:
        time.sleep(max(0.0, at - time.monotonic()))
        with fake_server.lock:  # the fake is not thread-safe; its own handler holds this lock
            _session, url = fake.start(batch.hit_type_id, f"{i:024x}")  # Prolific-shaped ids
        parts = urlsplit(url)
        browser = VirtualAnnotator(site, "-", "-", seed=i)
        step = "arrival"
        try:
            started = time.perf_counter()
            answer = browser.request("GET", f"{parts.path}?{parts.query}")
            location = urlsplit(answer.headers.get("location", "")).path
            if answer.status != 302 or "/prolific/hits/" not in location:
                raise ValueError(f"study link answered {answer.status} {location}")
            with lock:
                latencies[step].append(time.perf_counter() - started)
            step = "HIT page"
            started = time.perf_counter()
            page = browser.request("GET", location)
            token = _CSRF_INPUT.search(page.body)
            fields = list(dict.fromkeys(_QUESTION.findall(page.body)))
            if page.status != 200 or token is None or not fields:
                raise ValueError(f"{location} answered {page.status}")
            with lock:
                latencies[step].append(time.perf_counter() - started)
            step = "submit"
            form = {name: browser.random.choice(LABELS) for name in fields}
            form["csrfmiddlewaretoken"] = token.group(1)
            started = time.perf_counter()
            answer = browser.request("POST", location, form)
            done = answer.headers.get("location", "")
            if answer.status != 302 or not done.startswith(settings.PROLIFIC_COMPLETION_URL):
                raise ValueError(f"submit answered {answer.status} {done}")
            with lock:
                latencies[step].append(time.perf_counter() - started)
                accepted[0] += 1
        except Exception as exc:
            with lock:
                errors[step] += 1
                if len(samples) < 5:
                    samples.append(f"participant {i}, {step}: {exc!r}"[:300])
        finally:
            browser.close()

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
    seconds = time.monotonic() - started
    rows = []
    for step in STEPS:
        p50, p95, p99 = percentiles(latencies[step])
        rows.append(
            {
                "step": step,
                "count": len(latencies[step]),
                "errors": errors[step],
                "p50 ms": p50 * 1000,
                "p95 ms": p95 * 1000,
                "p99 ms": p99 * 1000,
            }
        )
    both = [a + b for a, b in zip(latencies["arrival"], latencies["HIT page"], strict=False)]
    submitted = Assignment.objects.filter(
        hit__batch=batch, status__in=[Assignment.Status.SUBMITTED, Assignment.Status.APPROVED]
    ).count()
    judgments = Judgment.objects.filter(assignment__hit__batch=batch).count()
    failed = sum(errors.values())
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
        f"error rate: {failed / n:.2%} ({failed} of {n} participants); submits accepted: {accepted[0]}; "
        f"stored: {submitted} submitted assignments, {judgments} judgments "
        f"(accepted {accepted[0]} x {per_hit} = {accepted[0] * per_hit})"
    )
    for sample in samples:
        command.stderr.write(f"  error: {sample}")
    if submitted != accepted[0] or judgments != accepted[0] * per_hit:
        raise CommandError("the judgments stored do not match the submissions accepted")
