"""Times of the label-sensitivity flood (issue 68.1), printed beside the unloaded baseline.

Not a test (no assertion on time): run it with pytest, which builds the fixtures' batch::

    REFERENCE_DIR=... .venv/bin/python -m pytest -q -s -p no:randomly tests/metrics/sensitivity_flood_benchmark.py

It prints: one label-sensitivity computation as a request used to do it (the cost one member could
multiply); lab A's researcher's 16 requests now (each answers a job or a 429, or the kept result); and
another lab's researcher's pages unloaded, then with those jobs waiting (issue 68.1's flood was a
viewer's; a viewer starts no job since issue 82). The counted
assertions live in ``test_label_sensitivity_flood.py``.
"""

from __future__ import annotations

import statistics
import time

import pytest
from django.urls import reverse

from core.jobs import in_process
from metrics import services
from pooling.models import Run
from tests.metrics.test_label_sensitivity_flood import FLOOD, HeldPool, two_labs  # noqa: F401

pytestmark = pytest.mark.django_db

ROUNDS = 5


def _median_ms(call, rounds: int = ROUNDS) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        call()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def test_print_the_flood_figures(batch, two_labs, client, settings, monkeypatch, django_capture_on_commit_callbacks):  # noqa: F811
    _, _, flooder, researcher = two_labs
    runs = list(Run.objects.filter(name__in=["a", "b"]).order_by("name"))
    report_settings = services.ReportSettings(cutoffs=(1, 2), bootstrap_samples=1000)
    in_request_ms = _median_ms(lambda: services.label_sensitivity(batch, runs, report_settings, bar=False), 3)

    settings.JOB_LOCAL_RUNNER = "threads"
    monkeypatch.setattr(in_process, "_pool", lambda: HeldPool())
    pages = [reverse("home"), reverse("metrics:label-sensitivity"), reverse("pooling:import")]
    pages.append(reverse("metrics:report-list"))
    client.force_login(researcher)
    unloaded = {page: _median_ms(lambda page=page: client.get(page)) for page in pages}

    client.force_login(flooder)
    api = reverse("metrics-api-label-sensitivity")
    flood_ms = []
    with django_capture_on_commit_callbacks(execute=True):
        for i in range(FLOOD):
            start = time.perf_counter()
            client.get(api, {"batch": "sens", "runs": "a,b", "cutoffs": "1,2", "bootstrap": str(1000 + i)})
            flood_ms.append((time.perf_counter() - start) * 1000)

    client.force_login(researcher)
    loaded = {page: _median_ms(lambda page=page: client.get(page)) for page in pages}
    print()
    print(f"one label-sensitivity computation (bootstrap 1000), as a request used to do it: {in_request_ms:.0f} ms")
    print(
        f"the flooder's {FLOOD} requests now: median {statistics.median(flood_ms):.0f} ms, max {max(flood_ms):.0f} ms"
    )
    print(f"{'page':<40} {'unloaded ms':>12} {'flooded ms':>12} {'ratio':>6}")
    for page in pages:
        print(f"{page:<40} {unloaded[page]:>12.1f} {loaded[page]:>12.1f} {loaded[page] / unloaded[page]:>6.2f}")
