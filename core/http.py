"""The one retrying JSON-over-HTTP client of the project's outbound calls. Pure (no Django).

Prolific's client and the pre-labellers' chat client both call through :class:`JsonClient`, so
their retry loops cannot drift apart; each turns :class:`HttpError` into its own error. Every call gets:

- **A deadline.** ``timeout`` bounds each connect and socket read; ``deadline`` the whole call,
  retries included. A watchdog closes the socket at the deadline, so a server trickling one
  byte per read cannot hold the call longer.
- **Back-off.** A 429, a 503 with ``Retry-After``, another 5xx, a broken or timed-out connection
  and a 2xx that is not JSON are retried up to ``max_attempts`` (:func:`core.backoff.backoff_delay`);
  a wait that would pass the deadline is not begun.
- **No redirects.** A 3xx is an error, and an absolute URL outside the configured origin is
  refused before sending: the ``Authorization`` header never leaves its origin.
- **A shared rate.** ``pace`` is asked before each attempt for a start within the time left
  (``core.services.ratelimit.shared_pace``); with none free the call fails having sent nothing.
- **A size limit.** Bodies are streamed and the call fails past ``max_bytes``.
- **Repeatable or not.** ``repeatable=False`` marks a call not safe to send twice (it creates or
  pays). A throttled refusal is still retried, but once a request may have been carried out and
  its answer is lost, :class:`HttpError` says ``unknown_outcome``: the caller looks the result up.

Every failure of the transport and every unreadable answer becomes an :class:`HttpError`.
Standard library only; the environment's proxy variables are not read.
"""

from __future__ import annotations

import contextlib
import functools
import http.client
import json
import socket
import ssl
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator, Mapping
from dataclasses import KW_ONLY, dataclass, field, fields
from typing import Any

from core.backoff import backoff_delay, retry_after_seconds
from core.redaction import mask_secret


@functools.cache
def _tls_context() -> ssl.SSLContext:
    """The system's trusted certificates, loaded once per process (a context is thread-safe)."""
    return ssl.create_default_context()


#: How much of an error answer (a 4xx/5xx body) is read for its message.
ERROR_BODY_BYTES = 64 * 1024
_CHUNK = 64 * 1024


@dataclass(eq=False, repr=False)
class HttpError(Exception):
    """An outbound call failed; ``str()`` says how.

    ``kind``: ``refused`` (a 4xx other than 429), ``throttled``, ``server`` (5xx), ``lost``,
    ``deadline``, ``redirect``, ``too_large``, ``not_json`` or ``origin``; ``upstream``: a failure of
    the service (retrying later may work), not a refusal of the request; ``unknown_outcome``: a
    call that is not repeatable may have been carried out; ``text``: the start of an error body;
    ``retry_after``: the seconds ``Retry-After`` asked for.
    """

    message: str
    _: KW_ONLY
    kind: str
    status: int | None = None
    upstream: bool = True
    unknown_outcome: bool = False
    text: str = ""
    attempts: int = 1
    retry_after: float | None = None

    def __post_init__(self) -> None:
        super().__init__(self.message)


@dataclass(eq=False, repr=False)
class _Retry(Exception):
    """One attempt failed in a way worth another (internal)."""

    error: HttpError
    retry_after: float | None = None
    _: KW_ONLY
    sent: bool = True  # the request may have reached the server


@dataclass(kw_only=True, eq=False, repr=False)  # a client's own identity and repr stay its own
class Transport:
    """A client's limits and retries, declared once: :class:`JsonClient` and every service client that makes one
    (each may redeclare a default)."""

    timeout: float = 30.0
    deadline: float = 120.0
    max_attempts: int = 6
    base_delay: float = 0.5
    max_delay: float = 30.0
    max_bytes: int = 10 * 1024 * 1024
    sleep: Callable[[float], None] = time.sleep
    #: Asked before each attempt with the seconds left: the seconds to wait for a start of a shared
    #: rate of calls, or ``None`` when none is free within them (see the module docstring).
    pace: Callable[[float], float | None] | None = None

    def transport_settings(self) -> dict[str, Any]:
        """These settings as :class:`JsonClient`'s keywords."""
        return {f.name: getattr(self, f.name) for f in fields(Transport)}


@dataclass
class JsonClient(Transport):
    """JSON calls to ``base_url`` (its origin is the only one ``headers`` are sent to); see the module docstring."""

    base_url: str
    headers: Mapping[str, str] = field(default_factory=dict)
    clock: Callable[[], float] = time.monotonic
    #: The headers (names in lower case) of the last answer read (an answer's header that a caller needs, e.g. Prolific's X-Hook-Secret).
    last_headers: dict[str, str] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.base_url = self.base_url.rstrip("/") + "/"
        parts = urllib.parse.urlsplit(self.base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) address: {self.base_url!r}")
        self.origin = _origin(parts)  # a ValueError for a port that is not a number

    def url_for(self, path: str) -> str:
        """``path`` under the base URL, or an absolute URL of the same origin (else an ``origin`` error)."""
        if urllib.parse.urlsplit(path).scheme:
            try:
                origin = _origin(urllib.parse.urlsplit(path))
            except ValueError:
                origin = "an unreadable address"
            if origin != self.origin:
                raise HttpError(
                    f"refused to send a request to {origin[:200]}, outside {self.origin}", kind="origin", upstream=True
                )
            return path
        return urllib.parse.urljoin(self.base_url, path.lstrip("/"))

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        repeatable: bool = True,
        deadline: float | None = None,
        content: bytes | None = None,
    ) -> Any:
        """The JSON answer (``None`` for an empty body) of ``method path`` with ``body`` as JSON;
        ``content`` sends raw bytes instead; ``deadline`` (seconds) shortens this call's deadline.
        Raises :class:`HttpError`."""
        url = self.url_for(path)
        data = content if content is not None else None if body is None else json.dumps(body).encode()
        headers = {"Accept": "application/json", **self.headers}
        if content is not None:
            headers["Content-Type"] = "application/octet-stream"
        elif data is not None:
            headers["Content-Type"] = "application/json"
        budget = self.deadline if deadline is None else min(self.deadline, deadline)
        ends = self.clock() + budget
        attempts = max(1, self.max_attempts)
        for attempt in range(1, attempts + 1):
            remaining = ends - self.clock()
            try:
                if remaining <= 0:
                    raise _Retry(HttpError(f"no answer within the {budget:g} s deadline", kind="deadline"), sent=False)
                if self.pace is not None:
                    remaining = self._paced(remaining, ends, budget)
                return self._attempt(method, url, data, headers, remaining, budget)
            except HttpError as error:  # not worth another attempt
                error.attempts = attempt
                if error.kind == "too_large" and not repeatable:
                    error.unknown_outcome = True  # a 2xx arrived: it was done, and its answer is unreadable
                raise self._masked(error) from None
            except _Retry as retry:
                error = retry.error
                error.attempts = attempt
                unknown = not repeatable and retry.sent and error.kind != "throttled"  # may have been done
                if error.kind != "deadline" and attempt < attempts and not unknown:
                    delay = backoff_delay(attempt, retry.retry_after, base=self.base_delay, cap=self.max_delay)
                    if delay < ends - self.clock():
                        self.sleep(delay)
                        continue
                    error.args = (f"{error}; waiting {delay:g} s more would pass the {budget:g} s deadline",)
                elif error.kind != "deadline" and attempt == attempts > 1:
                    error.args = (f"{error} after {attempt} attempts",)
                error.unknown_outcome = error.unknown_outcome or unknown
                if retry.retry_after is not None:
                    error.retry_after = retry.retry_after
                raise self._masked(error) from None
        raise AssertionError("unreachable")

    def secrets(self) -> list[str]:
        """The credentials this client sends: what an error answer must never repeat."""
        found = []
        for name, value in self.headers.items():
            lowered = name.lower()
            if lowered in ("authorization", "proxy-authorization") or any(
                word in lowered for word in ("token", "key", "secret", "auth", "password")
            ):
                found.append(str(value))
                scheme, _, credential = str(value).partition(" ")
                if credential and scheme.isalpha():
                    found.append(credential.strip())
        return [secret for secret in found if secret]

    def _masked(self, error: HttpError) -> HttpError:
        """``error`` with this client's credentials masked: a server echoing its token never brings it into a log."""
        for secret in self.secrets():
            error.text = mask_secret(error.text, secret)
            error.args = tuple(mask_secret(a, secret) if isinstance(a, str) else a for a in error.args)
        return error

    def _paced(self, remaining: float, ends: float, budget: float) -> float:
        """Wait for this attempt's start of the shared rate; the seconds then left (an ``HttpError`` if none is free in time)."""
        wait = self.pace(remaining)
        if wait is None or wait >= remaining:
            raise HttpError(
                f"no free start of the shared rate of calls within the {budget:g} s deadline (nothing sent)",
                kind="throttled",
            )
        if wait > 0:
            self.sleep(wait)
        return ends - self.clock()

    def _attempt(
        self, method: str, url: str, data: bytes | None, headers: dict[str, str], remaining: float, budget: float
    ) -> Any:
        parts = urllib.parse.urlsplit(url)
        target = parts.path or "/"
        if parts.query:
            target += "?" + parts.query
        timeout = max(0.001, min(self.timeout, remaining))
        if parts.scheme == "https":
            conn: http.client.HTTPConnection = http.client.HTTPSConnection(
                parts.hostname, parts.port, timeout=timeout, context=_tls_context()
            )
        else:
            conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout)
        expired = threading.Event()
        sockets: list[socket.socket] = []  # kept here: an HTTP/1.0 answer takes the socket from ``conn``

        def watchdog() -> None:  # the deadline passed: end whatever read or write is blocked
            expired.set()
            for sock in sockets:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

        timer = threading.Timer(remaining, watchdog)
        timer.daemon = True
        timer.start()
        sent = False
        try:
            try:
                conn.connect()
                sockets.append(conn.sock)
                if expired.is_set():  # the deadline passed while connecting
                    raise TimeoutError("connecting took the whole deadline")
                conn.request(method, target, body=data, headers=headers)
                sent = True
                response = conn.getresponse()
                status = response.status
                self.last_headers = {name.lower(): value for name, value in response.getheaders()}
                if 200 <= status < 300:
                    raw = self._read(response, self.max_bytes)
                else:
                    raw = self._read(response, ERROR_BODY_BYTES, truncate=True)
            except HttpError:  # too large: the service misbehaves, asking again would not help
                raise
            except (http.client.HTTPException, OSError, ValueError) as exc:
                if expired.is_set():
                    raise _Retry(
                        HttpError(f"no answer within the {budget:g} s deadline", kind="deadline"), sent=sent
                    ) from None
                reason = str(exc) or type(exc).__name__
                raise _Retry(HttpError(f"no answer ({reason})", kind="lost"), sent=sent) from None
        finally:
            timer.cancel()
            conn.close()
        if 300 <= status < 400:
            where = response.getheader("Location") or "nowhere"
            raise HttpError(
                f"HTTP {status}: a redirect (to {where[:200]}), which is never followed", kind="redirect", status=status
            )
        if status >= 400 or status < 200:
            text = raw.decode("utf-8", "replace")
            retry_after = retry_after_seconds(response.getheader("Retry-After"))
            throttled = status == 429 or (status == 503 and retry_after is not None)
            if throttled:
                raise _Retry(HttpError(f"HTTP {status}", kind="throttled", status=status, text=text), retry_after)
            if status >= 500:
                raise _Retry(HttpError(f"HTTP {status}", kind="server", status=status, text=text))
            raise HttpError(f"HTTP {status}", kind="refused", status=status, upstream=False, text=text)
        if not raw.strip():
            return None
        try:
            return json.loads(raw)
        except (ValueError, RecursionError):  # not JSON (UnicodeDecodeError is a ValueError)
            raise _Retry(
                HttpError(f"an answer that is not JSON (HTTP {status})", kind="not_json", status=status)
            ) from None

    @staticmethod
    def _read(response: http.client.HTTPResponse, limit: int, *, truncate: bool = False) -> bytes:
        """The body, streamed; more than ``limit`` bytes is an error (or, ``truncate``, cut)."""
        length = response.getheader("Content-Length")
        if not truncate and length and length.strip().isdigit() and int(length) > limit:
            raise HttpError(
                f"an answer of {int(length)} bytes, more than the limit of {limit} bytes",
                kind="too_large",
                status=response.status,
            )
        parts: list[bytes] = []
        size = 0
        while True:
            chunk = response.read1(_CHUNK)
            if not chunk:
                break
            parts.append(chunk)
            size += len(chunk)
            if size > limit:
                if truncate:
                    return b"".join(parts)[:limit]
                raise HttpError(
                    f"an answer of more than the limit of {limit} bytes", kind="too_large", status=response.status
                )
        body = b"".join(parts)
        if not truncate and length and length.strip().isdigit() and size < int(length):
            raise http.client.IncompleteRead(body, int(length) - size)  # the connection ended early
        return body


def _origin(parts: urllib.parse.SplitResult) -> str:
    port = parts.port or {"http": 80, "https": 443}.get(parts.scheme)
    return f"{parts.scheme}://{(parts.hostname or '').lower()}:{port}"


def list_pages(
    get: Callable[[str], Any], path: str, page_size: int, not_a_list: Callable[[], Exception]
) -> Iterator[dict]:
    """Every item of a paged list endpoint (Prolific's): ``get(url)`` reads one page (``{"results": [...],
    "_links": {"next": ...}}`` or a bare list), followed by its ``next`` link or the next offset while pages
    come back full; ``not_a_list()`` is raised for a page that is not a list of objects."""
    separator = "&" if "?" in path else "?"
    offset = 0
    url: str | None = f"{path}{separator}limit={page_size}&offset=0"
    while url:
        page = get(url)
        results = page.get("results", []) if isinstance(page, dict) else page
        if not isinstance(results, list) or not all(isinstance(item, dict) for item in results):
            raise not_a_list()
        yield from results
        link = ((page.get("_links") or {}).get("next") or {}).get("href") if isinstance(page, dict) else None
        if link:
            url = link
        elif len(results) >= page_size:
            offset += len(results)
            url = f"{path}{separator}limit={page_size}&offset={offset}"
        else:
            url = None
