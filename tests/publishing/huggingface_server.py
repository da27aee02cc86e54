"""A small Hugging Face Hub on loopback: ``GET /api/whoami-v2``, what a connection's test asks.

As the Hub answers it: with ``Authorization: Bearer <token>`` of a known token, 200 and
``{type, name, auth: {accessToken: {displayName, role}}}`` (``role`` ``read``, ``write`` or
``fineGrained``); without one or with an unknown one, 401 ``{"error": "Invalid credentials in
Authorization header"}``. ``tokens`` maps each known token to its role; ``delay`` answers late
(a timeout's test); ``requests`` logs the paths asked.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler

from tests.loopback import LoopbackServer, send, serve_in_thread

TOKEN = "hf_testtoken0000write"


@dataclass
class FakeHub:
    tokens: dict[str, str] = field(default_factory=lambda: {TOKEN: "write"})
    user: str = "test-lab"
    delay: float = 0.0
    requests: list[str] = field(default_factory=list)


class _Handler(BaseHTTPRequestHandler):
    server: LoopbackServer

    def _reply(self, status: int, answer: dict) -> None:
        send(self, status, json.dumps(answer).encode())

    def do_GET(self):
        fake: FakeHub = self.server.fake
        with self.server.lock:
            fake.requests.append(self.path)
        time.sleep(fake.delay)
        if self.path.split("?")[0].rstrip("/") != "/api/whoami-v2":
            return self._reply(404, {"error": "Not Found"})
        token = self.headers.get("Authorization", "").removeprefix("Bearer ")
        role = fake.tokens.get(token)
        if role is None:
            return self._reply(401, {"error": "Invalid credentials in Authorization header"})
        access = {"displayName": "test", "role": role}
        try:
            return self._reply(
                200, {"type": "user", "name": fake.user, "auth": {"type": "access_token", "accessToken": access}}
            )
        except (BrokenPipeError, ConnectionResetError):  # the client gave up on a late answer
            return None

    def log_message(self, *args):
        pass


def serve(fake: FakeHub) -> tuple[str, LoopbackServer]:
    """Serve ``fake`` on a free loopback port; returns the Hub's address and the server."""
    server = serve_in_thread(_Handler, fake)
    return server.base, server
