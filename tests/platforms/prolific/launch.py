"""A Prolific study's launch, driven over HTTP: participants taking its places, forged arrivals among them.

Test support (the launch test, tests/platforms/prolific/test_prolific_launch.py), also driven by
``manage.py benchmark_load --burst`` (benchmarks/burst.py). A launch (:func:`run_launch`, issue 41)
is the study's places against more participants than places: each takes a place on Prolific
(``FakeProlific``, tests/platforms/prolific/fake_server.py) as soon as one is free (Prolific sends
nobody to a full study), and does what a participant does with the site's pages: a page that asks
to be loaded again (its ``<meta http-equiv="refresh">``, or a ``Retry-After`` on a 429 or 503) is
loaded again after the time it names; a participant kept waiting past ``give_up`` seconds returns
the study on Prolific, which frees the place for someone else. Forged arrivals mix in (made-up
sessions, a real session under another participant id, a real link opened in a second browser):
none may get a HIT. Each participant is a :class:`~tests.support.virtual_annotator.VirtualAnnotator`
with no account: the study link (the arrival confirmed with Prolific's API, then a HIT claimed),
the HIT page, the submit (a redirect to Prolific's completion URL), each step timed.
"""

from __future__ import annotations

import math
import re
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from decimal import Decimal
from urllib.parse import urlsplit

from django.conf import settings

from annotation import services
from core.services.leases import LeaseHeld
from genderbias.labels import LABELS
from tests.platforms.prolific.fake_server import hexid
from tests.support.batches import made_up_batch
from tests.support.virtual_annotator import CSRF_INPUT, QUESTION_INPUT, VirtualAnnotator

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
    #: Participants who took a place on Prolific and opened the study link.
    arrived: int = 0
    #: Arrivals answered "no task for you now" (issue 67), and of them those whose answer was a page that waits
    #: (it refreshes itself: the participant kept on a page with no task).
    no_task: int = 0
    no_task_waited: int = 0
    #: Participants who left on Prolific (returned the study) after getting their HIT, without submitting.
    walked_out: int = 0
    syncs: int = 0
    #: The site's reads of its study that found one under way already (another process's): nothing lost.
    syncs_under_way: int = 0
    #: When each participant got their HIT (``time.monotonic()``): the tasks held at each moment.
    got_task: list[float] = field(default_factory=list)
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

    @property
    def no_task_share(self) -> float:
        """The share of arrivals shown no task (issue 67)."""
        return self.tally.no_task / self.tally.arrived if self.tally.arrived else 0.0


#: The answers of a study link with no task for the participant: this site's, and before issue 67 its older words.
NO_TASK_PAGES = ("No task for you right now", "All places of this study are taken")
BACK_LINK = re.compile(r'href="([^"]*cc=([A-Z0-9]+))"')


def places_past_tasks(fake, study_id: str, tasks: int, got_task: list[float]) -> list[tuple]:
    """The moments of ``fake.place_log`` at which Prolific offered newcomers more places than there were tasks
    left for them, computed here from the participants' own record (not the site's): ``tasks`` task places in
    all, less those handed out by then (``got_task``), less the sessions on their way (taken on Prolific, no
    task yet: taken places less tasks handed out). Every place a participant holds is one of those two."""
    past = []
    for at, study, total, status, taken in fake.place_log:
        if study != study_id or status != "ACTIVE":
            continue
        handed = sum(1 for t in got_task if t <= at)
        on_their_way = max(0, taken - handed)
        left = tasks - handed - on_their_way
        if total - taken > max(0, left):
            past.append((at, total, taken, handed))
    return past


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
    walk_out: float = 0.0,
    sync=None,
    sync_every: float = 3.0,
) -> Launch:
    """The launch of ``study_id``: ``participants`` arriving over ``over`` seconds for its places on
    ``fake`` (whose server holds ``lock``), ``forged`` forged arrivals among them; returns its figures
    once every participant is done, or after ``cap`` seconds. ``walk_out``: the share of participants
    who return the study on Prolific once they have their HIT, without answering (their place frees on
    Prolific at once, their task when the site reads the return); ``sync``: called every ``sync_every``
    seconds while the launch runs (the site reading its study, as ``poll_prolific`` and the webhooks do)."""
    places = fake.studies[study_id]["total_available_places"]
    tally = Tally()
    started = time.monotonic()
    calls = len(fake.call_times)
    dealt = dict(fake.dealt)
    settled = threading.Event()
    sessions: list[tuple[str, str, str]] = []  # (participant, session, url) of those who got in

    def participant(i: int, walks_out: bool = False) -> None:
        time.sleep(max(0.0, started + i * over / max(participants, 1) - time.monotonic()))
        pid = f"{i:024x}"  # Prolific-shaped ids
        while True:  # a place on Prolific, as soon as one is free
            if settled.is_set() or time.monotonic() > started + cap:
                tally.count("no_place")
                return
            with lock:  # the fake is not thread-safe; its own handler holds this lock
                study = fake.studies[study_id]
                if study["status"] == "ACTIVE" and fake._taken(study_id) < study["total_available_places"]:
                    session, url = fake.start(study_id, pid)
                    break
            time.sleep(0.25)
        tally.count("arrived")
        got_in = _one_participant(
            site, url, i, tally, started=started, give_up=give_up, lock=lock, fake=fake, walks_out=walks_out
        )
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

    def syncing() -> None:
        while not done.wait(sync_every):
            try:
                sync()
                tally.count("syncs")
            except LeaseHeld:  # the site's own read of the study is under way: this one is not needed
                tally.count("syncs_under_way")
            except Exception as exc:  # counted, and the next one tries again
                tally.failed("arrival", f"sync: {exc!r}")

    done = threading.Event()
    if sync is not None:
        threading.Thread(target=syncing, daemon=True).start()
    threads = [
        threading.Thread(target=participant, args=(i,), kwargs={"walks_out": _walks_out(i, walk_out)}, daemon=True)
        for i in range(participants)
    ]
    threads += [threading.Thread(target=forger, args=(j,), daemon=True) for j in range(forged)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(max(0.0, started + cap + 60 - time.monotonic()))
    done.set()
    with lock:
        now_dealt = {kind: count - dealt.get(kind, 0) for kind, count in fake.dealt.items()}
        asked = sum(1 for name, _ in fake.call_times[calls:] if name == "get_submission")
    return Launch(places, participants, forged, tally, time.monotonic() - started, asked, now_dealt)


def _walks_out(i: int, share: float) -> bool:
    """Whether participant ``i`` walks out: every participant whose turn of ``1 / share`` comes (none for 0)."""
    return share > 0 and int((i + 1) * share) > int(i * share)


def _query(pid: str, study_id: str, session: str) -> str:
    return f"PROLIFIC_PID={pid}&STUDY_ID={study_id}&SESSION_ID={session}"


def publish_study(name: str, n: int, per_hit: int, *, signed: bool = False):
    """A batch ``name`` of made-up queries published as a Prolific study with ``PLACES`` places per HIT
    (``n`` at least); the batch and its number of HITs."""
    from platforms.prolific.client import Prolific
    from platforms.prolific.provider import ProlificProvider
    from tests.platforms.prolific.fake_server import TOKEN

    hits = math.ceil(n / PLACES)
    batch = made_up_batch(
        name,
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
    walks_out: bool = False,
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
        if answer.status == 200 and any(words in answer.body for words in NO_TASK_PAGES):
            # No task now (issue 67): back to Prolific at once, by the page's link (its return code, if any).
            with tally.lock:
                tally.no_task += 1
                tally.no_task_waited += int(REFRESH.search(answer.body) is not None)
            back = BACK_LINK.search(answer.body)
            if fake is not None:
                with lock:
                    if back:
                        fake.complete_with(parse_session(url), back.group(2))
                    else:
                        fake.set_status(parse_session(url), "RETURNED")
            return False
        location = urlsplit(answer.headers.get("location", "")).path
        if answer.status != 302 or "/prolific/hits/" not in location:
            raise ValueError(f"study link answered {answer.status} {location}")
        with tally.lock:
            tally.waits.append(waited)
            tally.got_task.append(time.monotonic())
        step = "HIT page"
        begun = time.perf_counter()
        page = browser.request("GET", location)
        token = CSRF_INPUT.search(page.body)
        fields = list(dict.fromkeys(QUESTION_INPUT.findall(page.body)))
        if page.status != 200 or token is None or not fields:
            raise ValueError(f"{location} answered {page.status}")
        tally.took(step, begun)
        if walks_out and fake is not None:  # leaves on Prolific with the HIT open: Prolific frees the place at once
            with lock:
                fake.set_status(parse_session(url), "RETURNED")
            tally.count("walked_out")
            return True
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
