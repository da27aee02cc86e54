"""The launch burst of ``manage.py benchmark_load --burst N --over T``: a Prolific study's first minute.

N Prolific participants arrive evenly spread over T seconds and each do one HIT through the real study link,
against gunicorn with the shipped config, as :func:`tests.platforms.prolific.launch.run_launch` drives them.
Prolific is ``FakeProlific`` (``tests/platforms/prolific/fake_server.py``) served in this process, gunicorn
pointed at it with ``PROLIFIC_API_URL``; with ``--faults`` it throttles, fails and loses a share of its answers,
and the launch runs twice against one gunicorn, without faults and then with them. What is reported:
docs/benchmarks.md, "Launch burst".
"""

from __future__ import annotations

import os
import time

from django.conf import settings
from django.core.management.base import CommandError
from django.db import connection, connections

from annotation.crowd.services.sync import sync_batch
from annotation.models import Assignment, Batch, Judgment
from benchmarks.site_load import PREFIX, format_table, percentiles, step_rows
from benchmarks.site_server import served
from tests.loopback import free_port
from tests.platforms.prolific.fake_server import TOKEN, FakeProlific, FaultShares, serve
from tests.platforms.prolific.launch import GIVE_UP, PLACES, STEPS, Launch, publish_study, run_launch


def run_burst(command, o: dict) -> None:
    """N participants over T seconds against gunicorn and a Prolific-compatible server (module docstring)."""
    n, over, per_hit = o["burst"], o["over"], o["queries_per_hit"]
    if n <= 0 or over < 0:
        raise CommandError("--burst must be positive and --over not negative")
    places, forged, faults = o.get("places") or n, o.get("forged") or 0, fault_shares(o.get("faults") or "")
    if places <= 0 or forged < 0:
        raise CommandError("--places must be positive and --forged not negative")
    fake = FakeProlific(page_size=100)  # Prolific's pages are long; the sync reads every submission
    fake_url, fake_server = serve(fake)
    port = free_port()
    site = f"http://127.0.0.1:{port}"
    _point_at(fake_url, site, n + forged)
    runs = [("without faults", FaultShares())] + ([("with faults", faults)] if faults else [])
    signed = bool(o.get("signed"))
    if signed:
        fake.study_workspace = settings.PROLIFIC_WORKSPACE_ID  # what Prolific signs into each study URL
    studies = [
        publish_study(
            f"{PREFIX}burst-{time.strftime('%Y%m%d-%H%M%S')}-{'clean' if i == 0 else 'faults'}",
            places,
            per_hit,
            signed=signed,
        )
        for i in range(len(runs))
    ]
    for batch, hits in studies:
        command.stdout.write(
            f"Study {batch.hit_type_id} for batch {batch.name!r}: {hits} HITs of {per_hit}, {hits * PLACES} places; "
            f"Prolific-compatible server at {fake_url}"
        )
    launches = []

    try:
        with served("burst", workers=o["workers"], threads=o["threads"], say=command.stdout.write, port=port):
            for (label, shares), (batch, _hits) in zip(runs, studies, strict=True):
                fake.shares = shares
                command.stdout.write(
                    f"{n} participants ({forged} forged arrivals) arriving over {over:g} s, {label} ..."
                )
                walk_out = o.get("walk_out") or 0.0
                launches.append(
                    run_launch(
                        site,
                        fake,
                        fake_server.lock,
                        batch.hit_type_id,
                        participants=n,
                        over=over,
                        forged=forged,
                        give_up=o.get("give_up") or GIVE_UP,
                        walk_out=walk_out,
                        sync=_syncing(batch) if walk_out else None,
                    )
                )
    finally:
        fake_server.shutdown()
    for (label, shares), (batch, _hits), launch in zip(runs, studies, launches, strict=True):
        _report(command, o, batch, launch, label, shares)
    if len(launches) == 2:
        clean, faulty = (launch.settle_seconds for launch in launches)
        if clean is not None and faulty is not None:
            command.stdout.write(
                f"settled with faults {faulty - clean:+.1f} s against without ({faulty:.1f} s, {clean:.1f} s)"
            )


def _syncing(batch):
    """The site reading the study (``sync_batch``, as ``poll_prolific`` and the webhooks start it), from this
    process: gunicorn's database is this one."""

    def sync() -> None:
        try:
            sync_batch(Batch.objects.get(pk=batch.pk))
        finally:
            connections.close_all()

    return sync


def fault_shares(text: str) -> FaultShares | None:
    """``--faults THROTTLED,FAILED,LOST``: the shares of Prolific's answers (e.g. ``0.1,0.03,0.01``)."""
    if not text:
        return None
    try:
        throttled, failed, lost = (float(part) for part in text.split(","))
        return FaultShares(throttled=throttled, failed=failed, lost=lost, seed=41)
    except ValueError as exc:
        raise CommandError(f"--faults {text!r}: three shares THROTTLED,FAILED,LOST between 0 and 1 ({exc})") from None


def _point_at(fake_url: str, site: str, n: int) -> None:
    """Point gunicorn (through the environment it inherits) and this process at the fake Prolific."""
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


def _report(command, o: dict, batch, launch: Launch, label: str = "", shares: FaultShares | None = None) -> None:
    """The table of steps, the error rate, the launch's figures, and stored = accepted (a ``CommandError`` when they differ)."""
    tally, n = launch.tally, launch.participants
    rows = step_rows(tally, STEPS)
    submitted = Assignment.objects.filter(
        hit__batch=batch, status__in=[Assignment.Status.SUBMITTED, Assignment.Status.APPROVED]
    ).count()
    judgments = Judgment.objects.filter(assignment__hit__batch=batch).count()
    failed = sum(tally.errors.values())
    per_hit = o["queries_per_hit"]
    faults = (
        f"Prolific throttling {shares.throttled:.0%} (Retry-After {shares.retry_after} s), failing {shares.failed:.0%}, "
        f"losing {shares.lost:.0%} of its answers"
        if shares and (shares.throttled or shares.failed or shares.lost)
        else "no faults"
    )
    command.stdout.write("")
    command.stdout.write(
        f"launch burst {label}: {n} participants for {launch.places} places over {o['over']:g} s "
        f"(done in {launch.seconds:.0f} s), {faults}, gunicorn {o['workers']}x{o['threads']}, {connection.vendor}, "
        f"load average {os.getloadavg()[0]:.2f}"
    )
    command.stdout.write(format_table(rows))
    if tally.reloads:
        command.stdout.write("(arrival: each load of the study link, the pages that wait included)")
    else:
        both = [a + b for a, b in zip(tally.latencies["arrival"], tally.latencies["HIT page"], strict=False)]
        command.stdout.write(
            "(arrival: the study link, confirmed with Prolific, a HIT claimed; arrival + HIT page is the next-HIT "
            f"step of benchmark_load: p95 {percentiles(both)[1] * 1000:,.0f} ms)"
        )
    settle = launch.settle_seconds
    command.stdout.write(
        f"settled: {'never' if settle is None else f'{settle:.1f} s'}; longest wait for a HIT {launch.longest_wait:.1f} s "
        f"(p95 {percentiles(tally.waits)[1]:.1f} s); reloads {tally.reloads}; gave up {tally.gave_up}; "
        f"found no place {tally.no_place}; Prolific asked {launch.calls} times, dealt {dict(launch.dealt) or 'nothing'}"
    )
    command.stdout.write(
        f"shown no task: {launch.no_task_share:.1%} ({tally.no_task} of {tally.arrived} arrivals; kept waiting on a "
        f"page with no task: {tally.no_task_waited}); walked out with their HIT {tally.walked_out}; the site read "
        f"the study {tally.syncs} times ({tally.syncs_under_way} found a read under way)"
    )
    if launch.forged:
        command.stdout.write(f"forged arrivals: {dict(tally.forged)}; let in: {len(tally.forged_in)}")
    command.stdout.write(
        f"error rate: {failed / n:.2%} ({failed} of {n} participants); submits accepted: {tally.accepted}; "
        f"stored: {submitted} submitted assignments, {judgments} judgments "
        f"(accepted {tally.accepted} x {per_hit} = {tally.accepted * per_hit})"
    )
    for sample in tally.samples:
        command.stderr.write(f"  error: {sample}")
    if submitted != tally.accepted or judgments != tally.accepted * per_hit:
        raise CommandError("the judgments stored do not match the submissions accepted")
    if tally.forged_in:
        raise CommandError(f"forged arrivals got a HIT: {tally.forged_in[:5]}")
