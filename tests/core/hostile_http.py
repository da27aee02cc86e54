"""A small hostile HTTP server on loopback: each request takes the next scripted behaviour.

Behaviours (``script``, one per request, then ``ok`` forever): ``ok`` (200 ``{"ok": true}``),
``throttle`` (429, no Retry-After), ``throttle:S`` (429 with ``Retry-After: S``), ``error``
(500), ``drip`` (a 200 whose 1,000-byte body comes one byte every ``drip_every`` seconds,
for at most ``drip_for`` seconds), ``huge`` (a 200 of ``huge_bytes`` with its length),
``huge_chunked`` (the same without a length, chunked), ``redirect`` (302 to ``redirect_to``),
``status:N`` (N with a JSON error), ``garbage`` (200, not JSON), ``truncated`` (a Content-Length of 100, 10 bytes, then closed:
an ``IncompleteRead``), ``lose`` (closed without an answer), ``json:TEXT`` (200 with TEXT).
Every request is logged in ``requests`` as ``(method, path, Authorization header)``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler

from tests.loopback import LoopbackServer, drip, send, serve_in_thread


@dataclass
class Hostile:
    script: list[str] = field(default_factory=list)
    requests: list[tuple[str, str, str | None]] = field(default_factory=list)
    drip_every: float = 0.2
    drip_for: float = 6.0
    #: Per ``drip`` answered, whether the client hung up before its end (tests.loopback.drip).
    drips: list[bool] = field(default_factory=list)
    huge_bytes: int = 5_000_000
    redirect_to: str = ""
    version: str = "HTTP/1.1"  #: ``HTTP/1.0``: the answer ends with the connection (http.client hands the socket over)


class _Handler(BaseHTTPRequestHandler):
    server: LoopbackServer
    protocol_version = "HTTP/1.1"

    def _reply(self, status: int, data: bytes, headers: dict[str, str] | None = None) -> None:
        send(self, status, data, headers=headers)

    def _handle(self) -> None:
        hostile = self.server.fake
        self.protocol_version = hostile.version
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        self.close_connection = True
        with self.server.lock:
            hostile.requests.append((self.command, self.path, self.headers.get("Authorization")))
            behaviour = hostile.script.pop(0) if hostile.script else "ok"
        if behaviour == "ok":
            return self._reply(200, b'{"ok": true}')
        if behaviour == "throttle":
            return self._reply(429, b'{"error": "slow down"}')
        if behaviour.startswith("throttle:"):
            return self._reply(429, b'{"error": "slow down"}', {"Retry-After": behaviour.split(":", 1)[1]})
        if behaviour.startswith("status:"):
            return self._reply(int(behaviour.split(":", 1)[1]), b'{"error": "refused here"}')
        if behaviour == "error":
            return self._reply(500, b'{"error": "boom"}')
        if behaviour.startswith("json:"):
            return self._reply(200, behaviour.split(":", 1)[1].encode())
        if behaviour == "garbage":
            return self._reply(200, b"<html>upstream timeout</html>")
        if behaviour == "redirect":
            return self._reply(302, b"", {"Location": hostile.redirect_to})
        if behaviour == "lose":
            self.connection.shutdown(2)
            return None
        if behaviour == "truncated":
            self.send_response(200)
            self.send_header("Content-Length", "100")
            self.end_headers()
            self.wfile.write(b'{"ok": tru')
            self.wfile.flush()
            self.connection.shutdown(2)
            return None
        if behaviour == "huge":
            self.send_response(200)
            self.send_header("Content-Length", str(hostile.huge_bytes))
            self.end_headers()
            return self._stream(hostile.huge_bytes)
        if behaviour == "huge_chunked":
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            block = b"x" * 65536
            try:
                for _ in range(hostile.huge_bytes // len(block)):
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(block), block))
                self.wfile.write(b"0\r\n\r\n")
            except OSError:
                pass
            return None
        if behaviour == "drip":
            hung_up = drip(self, hostile.drip_for, hostile.drip_every)
            with self.server.lock:
                hostile.drips.append(hung_up)
            return None
        raise AssertionError(f"unknown behaviour {behaviour!r}")

    def _stream(self, size: int) -> None:
        block = b" " * 65536
        try:
            while size > 0:
                self.wfile.write(block[:size])
                size -= len(block)
        except OSError:
            pass

    do_GET = do_POST = do_PATCH = _handle

    def log_message(self, *args):
        pass


def serve(hostile: Hostile) -> tuple[str, LoopbackServer]:
    """Serve ``hostile`` on a free loopback port; returns its base URL (``http://127.0.0.1:P/``) and the server."""
    server = serve_in_thread(_Handler, hostile)
    return f"{server.base}/", server
