"""The launch burst of ``manage.py benchmark_load --burst N --over T``: a Prolific study's first minute.

N Prolific participants (no account, no password) arrive evenly spread over T seconds, each
on its own thread with its own cookies, and do one HIT through the real study link, against
gunicorn with the shipped config: the study link (``/annotation/prolific/<batch>/``, the
arrival confirmed with Prolific's API, then a HIT claimed), the HIT page, the submit (a
redirect to Prolific's completion URL). Prolific is ``tests/platforms/prolific/fake_server.py``'s
``FakeProlific``, served in this process on loopback; gunicorn is pointed at it with
``PROLIFIC_API_URL``. The study is published through it as for real (``publish_batch``).

A launch (:func:`run_launch`, issue 41) is the study's places against more participants than
places: each takes a place on Prolific as soon as one is free (Prolific sends nobody to a
full study), and does what a participant does with the site's pages: a page that asks to be
loaded again (its ``<meta http-equiv="refresh">``, or a ``Retry-After`` on a 429 or 503) is
loaded again after the time it names; a participant kept waiting past ``give_up`` seconds
returns the study on Prolific, which frees the place for someone else. Forged arrivals mix
in (made-up sessions, a real session under another participant id, a real link opened in a
second browser): none may get a HIT. With ``--faults`` Prolific throttles, fails and loses
a share of its answers (``FaultShares``), and the launch runs twice, on two studies against
one gunicorn: without faults, then with them.

Reported: the error rate, p50/p95/p99 per step, stored = accepted (the submitted assignments
and judgments against the submits that reached the completion URL), and for a launch the
time it took to settle (every place's work submitted), the longest a participant waited
between opening the link and getting a HIT, reloads, participants who gave up, forged
arrivals let in.
"""

from __future__ import annotations

import math
import os
import re
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from urllib.parse import urlsplit

from django.conf import settings
from django.core.management.base import CommandError
from django.db import connection

from annotation import services
from annotation.models import Assignment, Judgment
from benchmarks.site_load import PREFIX, format_table, free_port, percentiles, step_rows
from benchmarks.site_server import benchmark_batch, start_gunicorn, stop
from benchmarks.virtual_annotator import CSRF_INPUT, QUESTION_INPUT, VirtualAnnotator
from genderbias.labels import LABELS
from tests.platforms.prolific.fake_server import FaultShares, hexid

STEPS = ("arrival", "HIT page", "submit")
PLACES = 3  # participants per HIT: claims of the same HITs meet, as in a real study
#: A page that asks to be loaded again after some seconds, as a browser reads it.
REFRESH = re.compile(r'<meta http-equiv="refresh" content="(\d+)')
#: How long a participant waits on the site before returning the study (seconds), by default.
GIVE_UP = 60.0


@dataclass
class Tally:
    """What the participants measured, step by step, shared by their threads under ``lock``.

    ``waits``: seconds from a participant's first request of the study link to their HIT;
    ``settled``: seconds from the launch to each accepted submit, in order.
    """

    latencies: dict[str, list[float]] = field(default_factory=lambda: {step: [] for step in STEPS})
    errors: dict[str, int] = field(default_factory=lambda: {step: 0 for step in STEPS})
    samples: list[str] = field(default_factory=list)
    accepted: int = 0
    waits: list[float] = field(default_factory=list)
    settled: list[float] = field(default_factory=list)
    reloads: int = 0
    gave_up: int = 0
    no_place: int = 0
    forged: Counter = field(default_factory=Counter)
    forged_in: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def took(self, step: str, started: float) -> None:
        with self.lock:
            self.latencies[step].append(time.perf_counter() - started)

    def accept(self, at: float | None = None) -> None:
        with self.lock:
            self.accepted += 1
            if at is not None:
                self.settled.append(at)

    def failed(self, step: str, message: str) -> None:
        with self.lock:
            self.errors[step] += 1
            if len(self.samples) < 5:
                self.samples.append(message[:300])

    def count(self, what: str, n: int = 1) -> None:
        with self.lock:
            setattr(self, what, getattr(self, what) + n)


@dataclass
class Launch:
    """A launch's figures (see the module docstring)."""

    places: int
    participants: int
    forged: int
    tally: Tally
    seconds: float
    calls: int = 0
    dealt: dict[str, int] = field(default_factory=dict)

    @property
    def settle_seconds(self) -> float | None:
        """Seconds from the launch until every place's work was submitted (``None``: it never settled)."""
        done = sorted(self.tally.settled)
        return done[self.places - 1] if len(done) >= self.places else None

    @property
    def longest_wait(self) -> float:
        return max(self.tally.waits, default=0.0)


def run_burst(command, o: dict) -> None:
    """N participants over T seconds against gunicorn and a Prolific-compatible server (module docstring)."""
    from tests.platforms.prolific.fake_server import FakeProlific, serve

    n, over, per_hit = o["burst"], o["over"], o["queries_per_hit"]
    if n <= 0 or over < 0:
        raise CommandError("--burst must be positive and --over not negative")
    places, forged, faults = o.get("places") or n, o.get("forged") or 0, fault_shares(o.get("faults") or "")
    if places <= 0 or forged < 0:
        raise CommandError("--places must be positive and --forged not negative")
    fake = FakeProlific()
    fake_url, fake_server = serve(fake)
    port = free_port()
    site = f"http://127.0.0.1:{port}"
    _point_at(fake_url, site, n + forged)
    runs = [("without faults", FaultShares())] + ([("with faults", faults)] if faults else [])
    signed = bool(o.get("signed"))
    if signed:
        fake.study_workspace = settings.PROLIFIC_WORKSPACE_ID  # what Prolific signs into each study URL
    studies = [
        _publish_study(places, per_hit, label="clean" if i == 0 else "faults", signed=signed) for i in range(len(runs))
    ]
    for batch, hits in studies:
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
    launches = []
    try:
        for (label, shares), (batch, _hits) in zip(runs, studies, strict=True):
            fake.shares = shares
            command.stdout.write(f"{n} participants ({forged} forged arrivals) arriving over {over:g} s, {label} ...")
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
                )
            )
    finally:
        stop(server)
        fake_server.shutdown()
    for (label, shares), (batch, _hits), launch in zip(runs, studies, launches, strict=True):
        _report(command, o, batch, launch, label, shares)
    if len(launches) == 2:
        clean, faulty = (launch.settle_seconds for launch in launches)
        if clean is not None and faulty is not None:
            command.stdout.write(
                f"settled with faults {faulty - clean:+.1f} s against without ({faulty:.1f} s, {clean:.1f} s)"
            )


def fault_shares(text: str) -> FaultShares | None:
    """``--faults THROTTLED,FAILED,LOST``: the shares of Prolific's answers (e.g. ``0.1,0.03,0.01``)."""
    if not text:
        return None
    try:
        throttled, failed, lost = (float(part) for part in text.split(","))
        return FaultShares(throttled=throttled, failed=failed, lost=lost, seed=41)
    except ValueError as exc:
        raise CommandError(f"--faults {text!r}: three shares THROTTLED,FAILED,LOST between 0 and 1 ({exc})") from None


def run_launch(
    site: str,
    fake,
    lock: threading.Lock,
    study_id: str,
    *,
    participants: int,
    over: float,
    forged: int = 0,
    give_up: float = GIVE_UP,
    cap: float = 300.0,
) -> Launch:
    """The launch of ``study_id``: ``participants`` arriving over ``over`` seconds for its places on
    ``fake`` (whose server holds ``lock``), ``forged`` forged arrivals among them; returns its figures
    once every participant is done, or after ``cap`` seconds."""
    places = fake.studies[study_id]["total_available_places"]
    tally = Tally()
    started = time.monotonic()
    calls = len(fake.call_times)
    dealt = dict(fake.dealt)
    settled = threading.Event()
    sessions: list[tuple[str, str, str]] = []  # (participant, session, url) of those who got in

    def participant(i: int) -> None:
        time.sleep(max(0.0, started + i * over / max(participants, 1) - time.monotonic()))
        pid = f"{i:024x}"  # Prolific-shaped ids
        while True:  # a place on Prolific, as soon as one is free
            if settled.is_set() or time.monotonic() > started + cap:
                tally.count("no_place")
                return
            with lock:  # the fake is not thread-safe; its own handler holds this lock
                if fake._taken(study_id) < places:
                    session, url = fake.start(study_id, pid)
                    break
            time.sleep(0.25)
        got_in = _one_participant(site, url, i, tally, started=started, give_up=give_up, lock=lock, fake=fake)
        with tally.lock:
            if len(tally.settled) >= places:
                settled.set()
            if got_in:
                sessions.append((pid, session, url))

    def forger(j: int) -> None:
        time.sleep(max(0.0, started + (j + 0.5) * over / max(forged, 1) - time.monotonic()))
        path = urlsplit(fake.studies[study_id]["external_study_url"]).path
        kind = ("made-up", "another participant's session", "a second browser")[j % 3]
        with tally.lock:
            victims = list(sessions)
        if kind == "made-up" or not victims:
            kind, query = "made-up", _query(hexid(f"forger{j}"), study_id, hexid(f"forged{j}"))
        elif kind == "another participant's session":
            _pid, session, _url = victims[j % len(victims)]
            query = _query(hexid(f"forger{j}"), study_id, session)
        else:  # the owner's very link, word for word, opened in another browser after the owner
            query = urlsplit(victims[j % len(victims)][2]).query
        _one_forgery(site, f"{path}?{query}", j, kind, tally, give_up=give_up)

    threads = [threading.Thread(target=participant, args=(i,), daemon=True) for i in range(participants)]
    threads += [threading.Thread(target=forger, args=(j,), daemon=True) for j in range(forged)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(max(0.0, started + cap + 60 - time.monotonic()))
    with lock:
        now_dealt = {kind: count - dealt.get(kind, 0) for kind, count in fake.dealt.items()}
        asked = sum(1 for name, _ in fake.call_times[calls:] if name == "get_submission")
    return Launch(places, participants, forged, tally, time.monotonic() - started, asked, now_dealt)


def _query(pid: str, study_id: str, session: str) -> str:
    return f"PROLIFIC_PID={pid}&STUDY_ID={study_id}&SESSION_ID={session}"


def _point_at(fake_url: str, site: str, n: int) -> None:
    """Point gunicorn (through the environment it inherits) and this process at the fake Prolific."""
    from tests.platforms.prolific.fake_server import TOKEN

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


def _publish_study(n: int, per_hit: int, *, label: str = "", signed: bool = False):
    """A batch of made-up queries published as a Prolific study with ``PLACES`` places per HIT (``n`` at least)."""
    from platforms.prolific.client import Prolific
    from platforms.prolific.provider import ProlificProvider
    from tests.platforms.prolific.fake_server import TOKEN

    hits = math.ceil(n / PLACES)
    batch = benchmark_batch(
        f"{PREFIX}burst-{time.strftime('%Y%m%d-%H%M%S')}{'-' + label if label else ''}",
        hits * per_hit,
        services.BatchSettings(
            provider="prolific",
            assignments_per_query=PLACES,
            queries_per_hit=per_hit,
            reward=Decimal("0.90"),
            provider_options={"estimated_minutes": 4, **({"signed_urls": True} if signed else {})},
        ),
    )
    services.publish_batch(batch, ProlificProvider(Prolific(settings.PROLIFIC_API_URL, TOKEN)))
    batch.refresh_from_db()
    return batch, hits


def _asks_again(answer) -> float | None:
    """The seconds after which a page asks to be loaded again: its refresh, or a 429's or 503's
    ``Retry-After`` (a page that says "reload in a minute"); ``None`` for a page that does not ask."""
    found = REFRESH.search(answer.body)
    if found:
        return float(found.group(1))
    if answer.status in (429, 503) and (answer.headers.get("retry-after") or "").isdigit():
        return float(answer.headers["retry-after"])
    return None


def _until_answered(browser: VirtualAnnotator, path: str, tally: Tally, give_up: float):
    """Open ``path`` and load it again whenever the page asks, as a participant does; the first
    answer that does not ask, or ``None`` after ``give_up`` seconds of waiting."""
    arrived = time.monotonic()
    while True:
        started = time.perf_counter()
        answer = browser.request("GET", path)
        tally.took("arrival", started)
        again = _asks_again(answer)
        if again is None:
            return answer, time.monotonic() - arrived
        if time.monotonic() + again - arrived > give_up:
            return None, time.monotonic() - arrived
        tally.count("reloads")
        time.sleep(again)


def _one_participant(
    site: str,
    url: str,
    i: int,
    tally: Tally,
    *,
    started: float | None = None,
    give_up: float = GIVE_UP,
    lock: threading.Lock | None = None,
    fake=None,
) -> bool:
    """One participant: the study link (loaded again as its pages ask), the HIT page, the submit; each
    step timed, a failure tallied; one kept waiting past ``give_up`` returns the study on ``fake``.
    Whether they got a HIT."""
    parts = urlsplit(url)
    browser = VirtualAnnotator(site, "-", "-", seed=i)
    step = "arrival"
    try:
        answer, waited = _until_answered(browser, f"{parts.path}?{parts.query}", tally, give_up)
        back = urlsplit(answer.headers.get("location", "")).path if answer is not None else ""
        if answer is not None and answer.status == 302 and back == parts.path:
            # A signed study URL (issue 56): the token verified, the page comes back without it.
            more, waited_more = _until_answered(browser, back, tally, max(0.0, give_up - waited))
            answer, waited = more, waited + waited_more
        if answer is None:
            tally.count("gave_up")
            _return_study(fake, lock, parse_session(url))
            return False
        location = urlsplit(answer.headers.get("location", "")).path
        if answer.status != 302 or "/prolific/hits/" not in location:
            raise ValueError(f"study link answered {answer.status} {location}")
        with tally.lock:
            tally.waits.append(waited)
        step = "HIT page"
        begun = time.perf_counter()
        page = browser.request("GET", location)
        token = CSRF_INPUT.search(page.body)
        fields = list(dict.fromkeys(QUESTION_INPUT.findall(page.body)))
        if page.status != 200 or token is None or not fields:
            raise ValueError(f"{location} answered {page.status}")
        tally.took(step, begun)
        step = "submit"
        form = {name: browser.random.choice(LABELS) for name in fields}
        form["csrfmiddlewaretoken"] = token.group(1)
        begun = time.perf_counter()
        answer = browser.request("POST", location, form)
        done = answer.headers.get("location", "")
        if answer.status != 302 or not done.startswith(settings.PROLIFIC_COMPLETION_URL):
            raise ValueError(f"submit answered {answer.status} {done}")
        tally.took(step, begun)
        if fake is not None:  # back on Prolific with the code: the place is the participant's for good
            with lock:
                fake.set_status(parse_session(url), "AWAITING REVIEW")
        tally.accept(None if started is None else time.monotonic() - started)
    except Exception as exc:
        tally.failed(step, f"participant {i}, {step}: {exc!r}")
    finally:
        browser.close()
    return step != "arrival"


def parse_session(url: str) -> str:
    """The ``SESSION_ID`` of a study URL."""
    return dict(part.split("=", 1) for part in urlsplit(url).query.split("&")).get("SESSION_ID", "")


def _return_study(fake, lock: threading.Lock | None, session: str) -> None:
    """The participant gives up and returns the study: Prolific frees the place for someone else."""
    if fake is not None:
        with lock:
            fake.set_status(session, "RETURNED")


def _one_forgery(site: str, path: str, j: int, kind: str, tally: Tally, *, give_up: float) -> None:
    """A forged arrival, loading the page again as it asks; a HIT for it is recorded in ``forged_in``."""
    browser = VirtualAnnotator(site, "-", "-", seed=10_000 + j)
    try:
        answer, _waited = _until_answered(browser, path, Tally(), give_up)
        if answer is None:
            outcome = "still waiting"
        elif answer.status == 302 and "/prolific/hits/" in answer.headers.get("location", ""):
            outcome = "got a HIT"
            with tally.lock:
                tally.forged_in.append(f"{kind}: {path}")
        else:
            outcome = f"{answer.status}"
    except Exception as exc:
        outcome = f"error {exc!r:.80}"
    finally:
        browser.close()
    with tally.lock:
        tally.forged[f"{kind}: {outcome}"] += 1


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
