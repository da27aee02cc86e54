"""A virtual in-house annotator: the site's own pages driven over HTTP, as a browser would.

Pure module (standard library only, no Django): it logs in through the login form, asks
for its next HIT at ``/annotation/next/``, and posts answers to the HIT form, keeping its
cookies (session, CSRF) and one keep-alive connection. Each step is timed. The load
benchmark (``manage.py benchmark_load``) runs many of them at once; the fault tests use
one per annotator while PostgreSQL restarts.

A submission is *accepted* when the site answers with a redirect whose newest message
(Django's signed ``messages`` cookie, read here without its key) is a success ("your
answers were recorded") or a warning (recorded, but a gold question failed); a refusal
("You already submitted that HIT", or an error) is an info or error message on the same
redirect; anything else (a 5xx, a dropped connection) is an error. Messages are dropped
once read, as a page showing them would.
"""

from __future__ import annotations

import base64
import http.client
import json
import random
import re
import time
import zlib
from dataclasses import dataclass, field
from http.cookies import SimpleCookie
from urllib.parse import urlencode, urlsplit

from genderbias.labels import LABELS

CSRF_INPUT = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')
QUESTION_INPUT = re.compile(r'<input type="radio" name="(q-\d+)"')
ASSIGNMENT_PATH = re.compile(r"/annotation/assignments/(\d+)/$")
#: Django's message levels that mean the answers were stored (SUCCESS, WARNING).
STORED_LEVELS = (25, 30)
#: A kept-alive connection idle this long is replaced (gunicorn closes idle ones after 2 s).
_IDLE_SECONDS = 1.0


def newest_message_level(cookie: str) -> int | None:
    """Level of the newest message in a Django ``messages`` cookie (``None`` if none or unreadable).

    The value is ``[.]base64(json):timestamp:signature`` (a leading dot: zlib-compressed),
    as ``django.core.signing.TimestampSigner.sign_object`` writes it (base64 has no colon); the JSON lists
    ``["__json_message", safe, level, text, ...]``. The signature is not checked: the
    site is trusted, the level is only read.
    """
    payload = cookie.split(":", 1)[0]
    compressed = payload.startswith(".")
    payload = payload.lstrip(".")
    try:
        data = base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4))
        if compressed:
            data = zlib.decompress(data)
        messages = json.loads(data)
    except (ValueError, zlib.error):
        return None
    found = [m for m in messages if isinstance(m, list) and m[:1] == ["__json_message"]]
    return int(found[-1][2]) if found else None


class SiteError(Exception):
    """The site did not answer as expected (status, or a connection error); ``step`` says where."""

    def __init__(self, step: str, detail: str) -> None:
        self.step = step
        super().__init__(f"{step}: {detail}")


@dataclass
class Response:
    status: int
    headers: dict[str, str]
    body: str
    set_cookies: SimpleCookie


@dataclass
class Hit:
    """The HIT page an annotator was sent to."""

    assignment: int
    path: str
    fields: list[str]
    csrf: str


@dataclass
class Timings:
    """Seconds per step, in order: ``login``, ``next`` (ask and open the HIT), ``submit``."""

    steps: dict[str, list[float]] = field(default_factory=lambda: {"login": [], "next": [], "submit": []})

    def add(self, step: str, seconds: float) -> None:
        self.steps[step].append(seconds)


class VirtualAnnotator:
    """One annotator's browser session against ``base_url`` (``http://host:port``)."""

    def __init__(self, base_url: str, username: str, password: str, *, timeout: float = 30.0, seed: int = 0) -> None:
        parts = urlsplit(base_url)
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 80
        self.username, self.password = username, password
        self.timeout = timeout
        self.cookies: dict[str, str] = {}
        self.timings = Timings()
        self.random = random.Random(seed)
        self._connection: http.client.HTTPConnection | None = None
        self._last_used = 0.0

    # -- HTTP ----------------------------------------------------------------------------
    def request(self, method: str, path: str, form: dict[str, str] | None = None) -> Response:
        """One request on the kept-alive connection (reopened once if the server closed it)."""
        headers = {"Host": f"{self.host}:{self.port}"}
        if self.cookies:
            headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        body = None
        if form is not None:
            body = urlencode(form)
            headers["Content-Type"] = "application/x-www-form-urlencoded"
            headers["Referer"] = f"http://{self.host}:{self.port}{path}"
        if time.monotonic() - self._last_used > _IDLE_SECONDS:
            self.close()  # the server may be closing it: never race it with a form
        for attempt in (1, 2):
            if self._connection is None:
                self._connection = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
            try:
                self._connection.request(method, path, body=body, headers=headers)
                raw = self._connection.getresponse()
                data = raw.read().decode("utf-8", errors="replace")
                self._last_used = time.monotonic()
                break
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
                self.close()
                if attempt == 2 or method != "GET":  # never send a form twice
                    raise
            except OSError:
                self.close()
                raise
        cookies = SimpleCookie()
        for value in raw.headers.get_all("Set-Cookie") or []:
            cookies.load(value)
        for name, morsel in cookies.items():
            if morsel.value:
                self.cookies[name] = morsel.value
            else:
                self.cookies.pop(name, None)
        if raw.getheader("Connection", "").lower() == "close":
            self.close()
        return Response(raw.status, {k.lower(): v for k, v in raw.getheaders()}, data, cookies)

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def _timed(self, step: str, work):
        started = time.perf_counter()
        try:
            return work()
        except (OSError, http.client.HTTPException) as exc:  # refused, reset, timed out, cut off mid-answer
            raise SiteError(step, f"connection error ({exc!r})") from None
        finally:
            self.timings.add(step, time.perf_counter() - started)

    # -- the annotator's steps -----------------------------------------------------------------
    def login(self) -> None:
        """The login form: GET it (CSRF cookie and token), POST the credentials, expect the redirect."""

        def work() -> None:
            page = self.request("GET", "/accounts/login/")
            token = CSRF_INPUT.search(page.body)
            if page.status != 200 or token is None:
                raise SiteError("login", f"login page answered {page.status}")
            form = {"username": self.username, "password": self.password, "csrfmiddlewaretoken": token.group(1)}
            answer = self.request("POST", "/accounts/login/", form)
            if answer.status != 302:
                raise SiteError("login", f"credentials of {self.username!r} refused ({answer.status})")

        self._timed("login", work)

    def next_hit(self) -> Hit | None:
        """Ask for the next HIT and open it; ``None`` when there is nothing left to do."""

        def work() -> Hit | None:
            answer = self.request("GET", "/annotation/next/")
            if answer.status == 200:
                return None  # the "no more HITs" page
            location = urlsplit(answer.headers.get("location", "")).path
            match = ASSIGNMENT_PATH.search(location)
            if answer.status != 302 or match is None:
                raise SiteError("next", f"/annotation/next/ answered {answer.status} {location}")
            page = self.request("GET", location)
            token = CSRF_INPUT.search(page.body)
            fields = list(dict.fromkeys(QUESTION_INPUT.findall(page.body)))
            if page.status != 200 or token is None or not fields:
                raise SiteError("next", f"{location} answered {page.status}")
            return Hit(int(match.group(1)), location, fields, token.group(1))

        return self._timed("next", work)

    def submit(self, hit: Hit, answers: dict[str, str] | None = None) -> bool:
        """Answer every query of the HIT (``answers``: field -> label; default at random); ``True`` when
        accepted, ``False`` when refused."""

        def work() -> bool:
            form = dict(answers) if answers is not None else {name: self.random.choice(LABELS) for name in hit.fields}
            form["csrfmiddlewaretoken"] = hit.csrf
            answer = self.request("POST", hit.path, form)
            if answer.status != 302:
                raise SiteError("submit", f"{hit.path} answered {answer.status}")
            message = answer.set_cookies["messages"].value if "messages" in answer.set_cookies else ""
            self.cookies.pop("messages", None)  # read, as a page showing it would
            return newest_message_level(message) in STORED_LEVELS

        return self._timed("submit", work)
