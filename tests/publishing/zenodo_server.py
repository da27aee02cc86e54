"""A local Zenodo deposit API over real HTTP, as developers.zenodo.org documents it (tests only).

Endpoints (under ``/api/``): ``GET/POST deposit/depositions`` (list, with ``status=draft``;
create: 201 with ``id``, ``links.bucket`` and, asked, ``metadata.prereserve_doi``), ``GET/PUT
deposit/depositions/<id>`` (read; set metadata, 400 with Zenodo's validation error shape for a
missing field), ``PUT files/<bucket>/<name>`` (raw bytes, 201 with ``checksum: md5:...``),
``POST deposit/depositions/<id>/actions/publish`` (202 with the record's ``doi``; 400 without
files). Errors are Zenodo's JSON: ``{"status", "message"}`` plus ``errors: [{"field",
"message"}]`` for validation; a missing or wrong bearer token is 401.

As harsh as the service: ``script`` maps ``"METHOD path-prefix"`` to a list of behaviours taken
one per matching request: ``throttle`` (429 with Zenodo's ``X-RateLimit-*`` headers, nothing
done), ``error`` (500, nothing done), ``echo`` (400 whose message repeats the Authorization header
it was sent, as some servers' errors do), ``lose`` (the request is carried out, then the connection
is closed without an answer). Every request is logged in ``requests``.
"""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from tests.loopback import LoopbackServer, send, serve_in_thread

#: Zenodo's sandbox DOI prefix (DataCite's test prefix).
PREFIX = "10.5072"
REQUIRED = ("upload_type", "title", "creators", "description")


@dataclass
class FakeZenodo:
    token: str = "zenodo-test-token-0000"
    base: str = ""
    depositions: dict[int, dict[str, Any]] = field(default_factory=dict)
    buckets: dict[str, dict[str, bytes]] = field(default_factory=dict)
    script: dict[str, list[str]] = field(default_factory=dict)
    requests: list[tuple[str, str]] = field(default_factory=list)
    next_id: int = 1000

    def view(self, deposition: dict[str, Any]) -> dict[str, Any]:
        """A deposition as the API returns it (its files with their MD5 checksums)."""
        files = self.buckets[deposition["bucket"]]
        return {
            "id": deposition["id"],
            "state": deposition["state"],
            "submitted": deposition["submitted"],
            "metadata": deposition["metadata"],
            **({"doi": deposition["doi"]} if deposition["submitted"] else {}),
            "files": [
                {"filename": name, "filesize": len(data), "checksum": hashlib.md5(data).hexdigest()}
                for name, data in sorted(files.items())
            ],
            "links": {
                "self": f"{self.base}/api/deposit/depositions/{deposition['id']}",
                "bucket": f"{self.base}/api/files/{deposition['bucket']}",
                "html": f"{self.base}/deposit/{deposition['id']}",
                "publish": f"{self.base}/api/deposit/depositions/{deposition['id']}/actions/publish",
                **(
                    {
                        "record_html": f"{self.base}/records/{deposition['id']}",
                        "doi": f"https://doi.org/{deposition['doi']}",
                    }
                    if deposition["submitted"]
                    else {}
                ),
            },
        }


def _error(status: int, message: str, errors: list[dict[str, str]] | None = None) -> tuple[int, dict[str, Any]]:
    return status, {"status": status, "message": message, **({"errors": errors} if errors else {})}


class _Handler(BaseHTTPRequestHandler):
    server: LoopbackServer
    protocol_version = "HTTP/1.1"

    def _handle(self) -> None:
        fake: FakeZenodo = self.server.fake
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        parts = urlsplit(self.path)
        with self.server.lock:
            fake.requests.append((self.command, parts.path))
            behaviour = None
            for key, queue in fake.script.items():
                method, prefix = key.split(" ", 1)
                if method == self.command and parts.path.startswith(prefix) and queue:
                    behaviour = queue.pop(0)
                    break
            if behaviour == "throttle":
                reset = str(int(time.time()) + 1)
                status, answer = _error(429, "Too many requests.")
                return self._send(status, answer, {"X-RateLimit-Limit": "100", "X-RateLimit-Remaining": "0",
                                                   "X-RateLimit-Reset": reset})  # fmt: skip
            if behaviour == "error":
                return self._send(*_error(500, "Internal server error."))
            if behaviour == "echo":
                sent = self.headers.get("Authorization", "")
                return self._send(*_error(400, f"Bad request with the header {sent!r} (token {sent.split()[-1]})"))
            auth = self.headers.get("Authorization", "")
            if auth != f"Bearer {fake.token}":
                return self._send(
                    *_error(401, "The server could not verify that you are authorized to access the URL requested.")
                )
            status, answer = self._route(fake, parts, body)
        if behaviour == "lose":  # carried out, the answer never arrives
            self.close_connection = True
            self.connection.shutdown(2)
            return None
        return self._send(status, answer)

    def _route(self, fake: FakeZenodo, parts, body: bytes) -> tuple[int, Any]:
        path = parts.path
        if path.startswith("/api/files/") and self.command == "PUT":
            bucket, _, quoted = path.removeprefix("/api/files/").partition("/")
            name = unquote(quoted)  # the key, percent-decoded as Zenodo reads it
            if bucket not in fake.buckets:
                return _error(404, "Bucket does not exist.")
            owner = next(d for d in fake.depositions.values() if d["bucket"] == bucket)
            if owner["submitted"]:
                return _error(403, "Bucket is locked (the record is published).")
            fake.buckets[bucket][name] = body
            return 201, {"key": name, "size": len(body), "checksum": "md5:" + hashlib.md5(body).hexdigest()}
        if path == "/api/deposit/depositions":
            if self.command == "GET":
                query = parse_qs(parts.query)
                listed = [
                    d for d in fake.depositions.values() if query.get("status") != ["draft"] or not d["submitted"]
                ]
                return 200, [fake.view(d) for d in sorted(listed, key=lambda d: -d["id"])]
            if self.command == "POST":
                if self.headers.get("Content-Type") != "application/json":
                    return _error(415, "Unsupported media type.")
                try:
                    data = json.loads(body or b"{}")
                except ValueError:
                    return _error(400, "Could not parse the request body as JSON.")
                metadata = dict((data or {}).get("metadata") or {})
                fake.next_id += 1
                ident, bucket = fake.next_id, uuid.uuid4().hex
                if metadata.pop("prereserve_doi", None):
                    metadata["prereserve_doi"] = {"doi": f"{PREFIX}/zenodo.{ident}", "recid": ident}
                fake.depositions[ident] = {"id": ident, "bucket": bucket, "metadata": metadata, "state": "unsubmitted",
                                           "submitted": False, "doi": f"{PREFIX}/zenodo.{ident}"}  # fmt: skip
                fake.buckets[bucket] = {}
                return 201, fake.view(fake.depositions[ident])
            return _error(405, "Method not allowed.")
        if path.startswith("/api/deposit/depositions/"):
            rest = path.removeprefix("/api/deposit/depositions/")
            ident_text, _, action = rest.partition("/")
            deposition = fake.depositions.get(int(ident_text)) if ident_text.isdigit() else None
            if deposition is None:
                return _error(404, "PID does not exist.")
            if not action and self.command == "GET":
                return 200, fake.view(deposition)
            if not action and self.command == "PUT":
                if deposition["submitted"]:
                    return _error(400, "Please edit the deposition first (it is published).")
                metadata = dict((json.loads(body or b"{}") or {}).get("metadata") or {})
                missing = [key for key in REQUIRED if not metadata.get(key)]
                if missing:
                    return _error(400, "Validation error.",
                                  [{"field": f"metadata.{key}", "message": "Field may not be null."} for key in missing])  # fmt: skip
                reserved = deposition["metadata"].get("prereserve_doi")
                if metadata.pop("prereserve_doi", None) or reserved:
                    metadata["prereserve_doi"] = reserved or {"doi": deposition["doi"], "recid": deposition["id"]}
                deposition["metadata"] = metadata
                return 200, fake.view(deposition)
            if action == "actions/publish" and self.command == "POST":
                if deposition["submitted"]:
                    return _error(400, "The deposition is already published.")
                if not fake.buckets[deposition["bucket"]]:
                    return _error(
                        400, "Validation error.", [{"field": "files", "message": "Minimum one file must be provided."}]
                    )
                if any(not deposition["metadata"].get(key) for key in REQUIRED):
                    return _error(400, "Validation error.", [{"field": "metadata", "message": "Metadata is missing."}])
                deposition |= {"submitted": True, "state": "done"}
                return 202, fake.view(deposition)
        return _error(404, "The requested URL was not found on the server.")

    def _send(self, status: int, answer: Any, headers: dict[str, str] | None = None) -> None:
        send(self, status, json.dumps(answer).encode(), headers=headers)

    do_GET = do_POST = do_PUT = _handle

    def log_message(self, *args):
        pass


def serve(fake: FakeZenodo) -> LoopbackServer:
    server = serve_in_thread(_Handler, fake)
    fake.base = server.base
    return server
