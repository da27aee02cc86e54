"""The hostile round's first part (issue 68): each finding of the fifth round tried again. A 5xx or a database
error is Medium; what the finding did (an account made, a name stored, a secret readable...) is Low."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from urllib.parse import unquote, urlsplit

from django.contrib.auth import get_user_model
from django.db import DatabaseError, connection

from benchmarks.hostile_labs import client
from benchmarks.hostile_sweep import tried, verdict
from core.db.scope import acting_in
from core.errors import ServiceError
from genderbias.errors import InputError
from genderbias.files.runs import read_run
from pooling.models import Collection, QuerySet, Run
from pooling.services import PoolSettings, build_pool, import_collection, import_queries, import_run
from publishing.zenodo.deposit import ZenodoClient, ZenodoError, deposit_folder
from tests.publishing.zenodo_server import FakeZenodo, serve


def findings_of_issue_68(world) -> list[tuple[str | None, str]]:
    """``(kind, line)`` per attempt: kind ``None`` when the attempt was refused as it should be."""
    checks = (_names, _lengths, _secrets, _deposit, _downloads, _numbers, _tokens, _static_methods)
    return [finding for check in checks for finding in tried(check, world)]


def _names(world) -> list[tuple[str | None, str]]:
    """Usernames as stored: a fullwidth name of an existing account, look-alikes, reserved names."""
    users = get_user_model().objects
    owner = client(world["b-owner"])
    out = []
    tries = ["\uff48\uff52-\uff41\uff4c\uff49\uff43\uff45", "HR-B-VIEWER", "Hr-b-viewer", "hr-b-view\u0435r",
             "\uff48\uff52-b-viewer", "admin", "root", "Admin", "r\u03bf\u03bft"]  # fmt: skip
    for name in tries:
        before = users.count()
        answer = owner.post("/groups/", {"group": world["b"].slug, "action": "set", "username": name, "role": "viewer"})
        out.append(verdict("Low", f"/groups/ username={name!r}: a look-alike account", answer.status_code,
                           users.count() != before))  # fmt: skip
    return out


def _lengths(world) -> list[tuple[str | None, str]]:
    """A name one past its column, and of 300 and 5,000 characters; a qid of 5,000 characters."""
    limit = QuerySet._meta.get_field("name").max_length
    researcher = client(world["b-researcher"])
    out = []
    for length in (limit + 1, 300, 5000):
        name = "x" * length
        answer = researcher.post(f"/api/annotation/batches/{world['b-batch'].name}/export/",
                                 {"category": "all", "format": "tsv", "as_query_set": name},
                                 content_type="application/json")  # fmt: skip
        stored = QuerySet._base_manager.filter(name=name).exists()
        out.append(verdict("Low", f"export as_query_set of {length} characters", answer.status_code, stored))
    folder = Path(tempfile.mkdtemp(prefix="hostile-68-"))
    for label, name, text in (
        ("name of 300", "y" * 300, "q1\tok\n"),
        ("qid of 5000", "long-qid", "7" * 5000 + "\tq\n"),
    ):
        path = folder / "queries.tsv"
        path.write_text(text)
        with acting_in(world["b"].pk):
            try:
                import_queries(path, name)
                out.append(("Low", f"import_queries {label}: stored"))
            except (ServiceError, InputError) as exc:
                plain = str(exc)
                ok = label.startswith("name") or (str(path) in plain and "query id of 5000 characters" in plain)
                out.append((None if ok else "Low", f"import_queries {label}: {plain[:120]}"))
            except DatabaseError as exc:
                out.append(("Medium", f"import_queries {label}: the database's error {str(exc)[:120]}"))
    return out


def _secrets(world) -> list[tuple[str | None, str]]:
    """The webhook secret at rest, and a server's error text echoing the Zenodo token."""
    from platforms.prolific.models import ProlificHookSecret  # the platform may be removed (test_platform_removal)

    plain = "hostile-round-webhook-secret-0123456789"
    ProlificHookSecret.objects.update_or_create(workspace_id="hostile-ws", defaults={"value": plain})
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM annotation_prolifichooksecret")
        rows = cursor.fetchall()
    out = [("Low" if any(plain in str(cell) for row in rows for cell in row) else None, "webhook secret in plaintext")]
    fake = FakeZenodo(script={"GET /api/deposit/depositions": ["echo"]})
    server = serve(fake)
    try:
        ZenodoClient(f"{server.base}/api/", fake.token).call("GET", "deposit/depositions")
        out.append(("Low", "the Zenodo server's echo was not an error"))
    except ZenodoError as exc:
        out.append(("Low" if fake.token[:8] in str(exc) else None, f"Zenodo's echo of the token: {str(exc)[:100]}"))
    finally:
        server.shutdown()
    return out


def _deposit(world) -> list[tuple[str | None, str]]:
    """A hard link and a symlink in the folder; names with #, ? and a space in the bucket URL."""

    class Recorder:  # the deposit's calls, answered as Zenodo answers them
        def __init__(self):
            self.paths: list[str] = []

        def call(self, method, path, body=None, **options):
            self.paths.append(path)
            if method == "POST" and path == "deposit/depositions":
                return {"id": 1, "links": {"bucket": "https://zenodo.example/api/files/b1", "html": ""}}
            if method == "GET":
                return []
            return {}

    metadata = {"upload_type": "dataset", "title": "t", "description": "d", "publication_date": "2026-01-01",
                "creators": [{"name": "Doe, Jane"}]}  # fmt: skip
    out = []
    outside = Path(tempfile.mkdtemp(prefix="hostile-68-db-")) / "db.sqlite3"
    outside.write_bytes(b"every group's data")
    for label, make in (("hard link", lambda f: os.link(outside, f / "innocent.bin")),
                        ("symlink", lambda f: (f / "pointer.bin").symlink_to(outside))):  # fmt: skip
        folder = Path(tempfile.mkdtemp(prefix="hostile-68-deposit-"))
        (folder / ".zenodo.json").write_text(json.dumps(metadata))
        (folder / "README.md").write_text("data")
        make(folder)
        recorder = Recorder()
        try:
            deposit_folder(folder, recorder)
            out.append(("Low", f"deposit: a {label} to {outside.name} was uploaded"))
        except ValueError:
            out.append((None, f"deposit: a {label} refused"))
        if any("innocent" in p or "pointer" in p for p in recorder.paths):
            out.append(("Low", f"deposit: a {label} sent"))
    folder = Path(tempfile.mkdtemp(prefix="hostile-68-names-"))
    (folder / ".zenodo.json").write_text(json.dumps(metadata))
    names = ["README.txt", "README.txt#x", "b?x=1.txt", "with space.txt"]
    for name in names:
        (folder / name).write_text(name)
    recorder = Recorder()
    deposit_folder(folder, recorder)

    keys = [unquote(urlsplit(p).path.rsplit("/", 1)[-1]) for p in recorder.paths if "/files/" in p]
    for name in names:
        out.append((None if keys.count(name) == 1 and name in keys else "Low", f"deposit: the bucket key of {name!r}"))
    return out


def _downloads(world) -> list[tuple[str | None, str]]:
    """The pool's TSV and CSV downloads of queries that start like formulas."""
    folder = Path(tempfile.mkdtemp(prefix="hostile-68-pool-"))
    queries = {"f1": "=1+1 she", "f2": "+31 she", "f3": "-ve she", "f4": "@SUM she"}
    (folder / "c.tsv").write_text("d1\tshe and her sister\nd2\the met his father\n")
    (folder / "q.tsv").write_text("".join(f"{q}\t{t}\n" for q, t in queries.items()))
    (folder / "r.trec").write_text("".join(f"{q} Q0 d{i} {i} {3 - i} t\n" for q in queries for i in (1, 2)))
    with acting_in(world["b"].pk):
        import_collection(folder / "c.tsv", "hr-b-collection")
        import_queries(folder / "q.tsv", "hr-b-formulas")
        import_run(folder / "r.trec", "hr-b-run", Collection.objects.get(name="hr-b-collection"))
        pool = build_pool("hr-b-pool", QuerySet.objects.get(name="hr-b-formulas"),
                          [Run.objects.get(name="hr-b-run")], PoolSettings(rank_cutoff=2, depth=10), bar=False)  # fmt: skip
    researcher = client(world["b-researcher"])
    out = []
    for fmt, separator in (("tsv", "\t"), ("csv", ",")):
        answer = researcher.get(f"/pooling/pools/{pool.name}/download.{fmt}")
        cells = [c for line in answer.content.decode().splitlines() for c in line.split(separator)]
        formulas = [c for c in cells if c.startswith(("=", "+", "-", "@"))]
        out.append(verdict("Low", f"{fmt} download: {len(formulas)} formula cells", answer.status_code, bool(formulas)))
    return out


def _numbers(world) -> list[tuple[str | None, str]]:
    """``seed`` on the batch create and estimate API; a run line with rank -1."""
    researcher = client(world["b-researcher"])
    out = []
    for value in ('"1_0"', '"\u0663"', '"abc"', "1e400", '"NaN"'):
        for path in ("/api/annotation/batches/", "/api/annotation/batches/estimate/"):
            body = '{"name": "hr-seed", "queries": "zz-lab-b-queries", "seed": ' + value + "}"
            answer = researcher.post(path, body, content_type="application/json")
            out.append(verdict("Low", f"POST {path} seed={value}", answer.status_code, answer.status_code < 400))
    run = Path(tempfile.mkdtemp(prefix="hostile-68-run-")) / "r.trec"
    run.write_text("q1 Q0 d1 1 0.9 t\nq1 Q0 d2 -1 0.5 t\n")
    try:
        read_run(run)
        out.append(("Low", "a run line with rank -1 was read"))
    except InputError as exc:
        out.append((None, f"rank -1: {exc}"))
    return out


def _tokens(world) -> list[tuple[str | None, str]]:
    """A used signed-URL token with ``==`` appended keys the replay guard as the token itself."""
    from platforms.prolific.study_tokens import token_digest  # the platform may be removed

    token = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl"
    return [(None if token_digest(token + suffix) == token_digest(token) else "Low", f"token respelled with {suffix!r}")
            for suffix in ("==", "=")]  # fmt: skip


def _static_methods(world) -> list[tuple[str | None, str]]:
    """Static and schema views answer 405 to methods they do not serve."""
    researcher = client(world["b-researcher"])
    out = []
    for path in ("/api/redoc/redoc.standalone.js", "/api/redoc/", "/api/docs/", "/api/schema/", "/favicon.ico"):
        for method in ("POST", "PUT", "PATCH", "DELETE"):
            status = researcher.generic(method, path).status_code
            out.append(verdict("Low", f"{method} {path}", status, status != 405))
    return out
