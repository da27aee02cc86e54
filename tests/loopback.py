"""The one way a test server is served: a threading HTTP server on a free loopback port.

Each fake (MTurk, Prolific, chat completions, the hostile server of the tests) is a plain
object with its state; its handler reaches it as ``self.server.fake`` and holds
``self.server.lock`` while it changes it. :func:`serve_in_thread` starts the server on a
daemon thread and gives it back; ``server.base`` is ``http://127.0.0.1:<port>``.
:func:`drip` is the one slow-drip answer (a deadline's test): headers promising a body, then a
byte at a time; it says whether the client hung up before its end (:func:`drips_ended` waits for that).
"""

from __future__ import annotations

import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class LoopbackServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, handler: type[BaseHTTPRequestHandler], fake: Any) -> None:
        super().__init__(("127.0.0.1", 0), handler)
        self.fake = fake
        self.lock = threading.Lock()

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


def free_port() -> int:
    """A free TCP port on loopback, for a server started in its own process (gunicorn, llama.cpp)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def serve_in_thread(handler: type[BaseHTTPRequestHandler], fake: Any) -> LoopbackServer:
    """Serve ``fake`` through ``handler`` on a free loopback port, on a daemon thread."""
    server = LoopbackServer(handler, fake)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    return server


def send(
    handler: BaseHTTPRequestHandler,
    status: int,
    data: bytes,
    content_type: str = "application/json",
    headers: dict[str, str] | None = None,
) -> None:
    """Answer ``status`` with ``data`` (its type and length) and any other ``headers``: every fake's one reply."""
    handler.send_response(status)
    handler.send_header("Content-Type", content_type)
    handler.send_header("Content-Length", str(len(data)))
    for key, value in (headers or {}).items():
        handler.send_header(key, value)
    handler.end_headers()
    handler.wfile.write(data)


def drip(handler: BaseHTTPRequestHandler, seconds: float, every: float, content_type: str | None = None) -> bool:
    """Answer 200 promising 1000 bytes, then send one space every ``every`` s for ``seconds``; close.

    Returns whether the client hung up before the end (a write failed): what a deadline's test
    asserts, instead of timing the call."""
    handler.send_response(200)
    if content_type:
        handler.send_header("Content-Type", content_type)
    handler.send_header("Content-Length", "1000")
    handler.end_headers()
    ends = time.monotonic() + seconds
    hung_up = False
    try:
        while time.monotonic() < ends:
            handler.wfile.write(b" ")
            handler.wfile.flush()
            time.sleep(every)
    except OSError:
        hung_up = True
    handler.close_connection = True
    return hung_up


def drips_ended(drips: list[bool], count: int = 1, within: float = 10.0) -> list[bool]:
    """``drips`` (a fake's record of :func:`drip` answers) once ``count`` of them have ended, waiting at
    most ``within`` seconds (longer than a drip lasts): a drip ends a moment after its client hangs up."""
    ends = time.monotonic() + within
    while len(drips) < count and time.monotonic() < ends:
        time.sleep(0.02)
    return list(drips)
