"""A hostile round (issue 53): two labs set up as docs/deployment.md says, then every URL pattern of
the site asked with every method, a set of hostile bodies and query strings, as every kind of
account of the second lab and as accounts of no group, with the path's parameters naming the first
lab's objects. Each answer is judged:

- **High**: an answer under 400 that shows one of the first lab's secrets (its batch, query set,
  collection, report names, query texts, its annotator's name), or any change of the first lab's
  state (its batch's status, its HITs' assignments, its annotator's password or activity, its
  members);
- **Medium**: a 5xx;
- **Low**: an API answer (``/api/``) of 4xx that is not JSON.

Then each finding of the fifth round (issue 68) is tried again by :func:`_findings_of_issue_68`, with
the same judge: a 5xx or a database error is Medium, what the finding did (a look-alike account made,
a name past its column stored, a secret in plaintext or echoed, a hard link deposited, a formula in a
download, a bad number or rank taken, a respelled token passing the replay key, a static file
answering POST) is Low.

Run on a database of its own (it writes two labs into it)::

    VAR_DIR=$(mktemp -d) DJANGO_DEBUG=1 MANAGE_RESIDENT=off .venv/bin/python manage.py migrate -v0
    VAR_DIR=... DJANGO_DEBUG=1 MANAGE_RESIDENT=off .venv/bin/python manage.py hostile_round --rounds 2

It prints the counts and each finding (at most 50 of each kind) and exits 1 when any High or
Medium was found. Not a test of the suite: it takes minutes (docs/benchmarks.md).
"""

from __future__ import annotations

import json
import time
from decimal import Decimal

from core.management.cli import ProjectCommand
from tests.support.url_patterns import site_patterns

SECRETS = {
    "collection": "zq-lab-a-collection",
    "query_set": "zq-lab-a-queries",
    "batch": "zq-lab-a-batch",
    "annotator": "zq-lab-a-annotator",
}
SECRET_TEXTS = ["zq lab a secret query about queens", "zq lab a secret query about kings"]
HOSTILE_VALUES = [
    "1_0",
    "٣",
    "²",
    "①",
    "nan",
    "1e309",
    "-1",
    "\x00",
    "x" * 2000,
    "é𝄞",
    "../../etc/passwd",
    "' OR 1=1 --",
]


class Command(ProjectCommand):
    help = "Two labs set up as the docs say, then every URL x method x hostile body x account of the other lab."

    def add_arguments(self, parser):
        parser.add_argument("--rounds", type=int, default=1, help="passes over every URL (each with other bodies)")
        parser.add_argument("--limit", type=int, default=None, help="the first N URL patterns only (a quick look)")
        parser.add_argument(
            "--control",
            action="store_true",
            help="ask as the first lab's own owner too: its answers show its secrets, so the judge must count "
            "them as High (a check that the judge sees a leak; the round then exits 1)",
        )

    def handle(self, rounds: int, limit: int | None, control: bool, **options):
        import logging

        from django.contrib.auth import get_user_model
        from django.test import Client

        for name in ("django.request", "django.security"):  # every refusal is logged: the counts say enough
            logging.getLogger(name).setLevel(logging.CRITICAL)
        started = time.monotonic()
        world = self._labs()
        user_model = get_user_model()
        identities = {
            "lab-b owner": world["b-owner"],
            "lab-b researcher": world["b-researcher"],
            "lab-b viewer": world["b-viewer"],
            "lab-b annotator": world["b-annotator"],
            "staff of no group": user_model.objects.create_user("hr-nogroup", password="pw-secret-123", is_staff=True),
            "annotator of no group": world["loner"],
            "anonymous": None,
        }
        if control:
            identities["lab-a owner (control)"] = _user("hr-alice")
        before = self._state(world)
        counts = {"attempts": 0, "High": 0, "Medium": 0, "Low": 0}
        findings: dict[str, list[str]] = {"High": [], "Medium": [], "Low": []}
        templates = self._paths(world)[:limit]
        bodies = self._bodies()
        for round_number in range(rounds):
            for name, path in templates:
                for who, user in identities.items():
                    client = Client(raise_request_exception=False, HTTP_HOST="localhost")
                    if user is not None:
                        client.force_login(user)
                    for method in ("GET", "POST", "PUT", "PATCH", "DELETE"):
                        for content_type, body in self._pick(bodies, method, round_number):
                            query = "" if method != "GET" else "?" + self._query(round_number)
                            response = client.generic(method, path + query, body, content_type=content_type)
                            counts["attempts"] += 1
                            self._judge(findings, counts, who, method, path, name, response)
                if self._state(world) != before:  # a change of lab A's state: name the URL that made it
                    counts["High"] += 1
                    findings["High"].append(f"{name} {path}: lab A's state changed: {self._state(world)} vs {before}")
                    before = self._state(world)
        for kind, line in _findings_of_issue_68(world):  # the fifth round's findings, each checked again
            counts["attempts"] += 1
            if kind:
                counts[kind] += 1
                findings[kind].append(line)
        self.stdout.write(
            f"attempts {counts['attempts']}, URL patterns {len(templates)}, accounts {len(identities)}, "
            f"rounds {rounds}, {time.monotonic() - started:.0f} s"
        )
        for kind in ("High", "Medium", "Low"):
            self.stdout.write(f"{kind}: {counts[kind]}")
            for line in findings[kind][:50]:
                self.stdout.write(f"  {line}")
        if counts["High"] or counts["Medium"]:
            raise SystemExit(1)

    # --- the two labs, as docs/deployment.md sets them up -------------------------------------------

    def _labs(self) -> dict:
        from django.core.management import call_command
        from django.test import Client

        from annotation import services
        from core.db.scope import acting_in
        from core.models import ResearchGroup
        from platforms.inhouse.services.handout import create_annotator, next_assignment, submit_local_assignment
        from pooling.models import QuerySet
        from pooling.services import create_query_set

        call_command("research_group", create="Hostile lab A", owner="hr-alice", stdout=_Quiet())
        call_command("research_group", create="Hostile lab B", owner="hr-bob", stdout=_Quiet())
        labs = {g.slug: g for g in ResearchGroup.objects.filter(name__startswith="Hostile lab")}
        a, b = labs["hostile-lab-a"], labs["hostile-lab-b"]
        world = {"a": a, "b": b}
        from core.services import groups

        for lab, owner in ((a, "hr-alice"), (b, "hr-bob")):  # the owners add members on /groups/
            user = type(_user(owner)).objects.get(username=owner)
            client = Client(HTTP_HOST="localhost")
            client.force_login(user)
            prefix = "a" if lab == a else "b"
            for role in ("researcher", "viewer", "annotator"):
                answer = client.post(
                    "/groups/", {"group": lab.slug, "action": "set", "username": f"hr-{prefix}-{role}", "role": role}
                )
                if answer.status_code != 200:
                    raise SystemExit(f"/groups/ refused to add hr-{prefix}-{role}: {answer.status_code}")
        world.update(
            {
                "b-owner": _user("hr-bob"),
                "b-researcher": _user("hr-b-researcher"),
                "b-viewer": _user("hr-b-viewer"),
                "b-annotator": _user("hr-b-annotator"),
            }
        )
        with acting_in(a.pk):
            queries = [(f"a{i}", f"zq lab a secret query {i}") for i in range(9)]
            queries += [("q1", SECRET_TEXTS[0]), ("q2", SECRET_TEXTS[1])]
            query_set = create_query_set(SECRETS["query_set"], queries, origin=QuerySet.Origin.IMPORTED)
            batch = services.create_batch(
                SECRETS["batch"],
                services.BatchSettings(
                    provider="local", assignments_per_query=2, queries_per_hit=4, reward=Decimal("0.05")
                ),
                query_set=query_set,
            )
            services.publish_batch(batch)
            annotator = create_annotator(SECRETS["annotator"], password="pw-secret-123")
        with acting_in(a.pk, only=True):
            assignment = next_assignment(annotator, batch)
            answers = {f"q-{hq.position}": "n" for hq in assignment.hit.hit_queries.all()}
            submit_local_assignment(assignment, answers)
        with acting_in(b.pk):
            b_queries = create_query_set("zz-lab-b-queries", [("b1", "who is he")], origin=QuerySet.Origin.IMPORTED)
            world["b-batch"] = services.create_batch(
                "zz-lab-b-batch",
                services.BatchSettings(
                    provider="local", assignments_per_query=1, queries_per_hit=1, reward=Decimal("0.05")
                ),
                query_set=b_queries,
            )
        with acting_in(a.pk):  # an annotator of lab A, then removed from it: of no group
            loner = create_annotator("hr-loner", password="pw-secret-123")
        groups.remove_member(None, a, "hr-loner")
        world.update({"batch": batch, "annotator": annotator, "loner": loner, "assignment": assignment})
        return world

    def _state(self, world) -> tuple:
        from annotation.models import Assignment, Batch
        from core.models import Membership

        batch = Batch._base_manager.get(pk=world["batch"].pk)
        annotator = type(world["annotator"]).objects.get(pk=world["annotator"].pk)
        return (
            batch.status,
            Assignment._base_manager.filter(hit__batch=batch).count(),
            annotator.password,
            annotator.is_active,
            tuple(Membership.objects.filter(group=world["a"]).order_by("pk").values_list("user_id", "role")),
        )

    # --- what is sent -----------------------------------------------------------------------------

    def _paths(self, world) -> list[tuple[str, str]]:
        from annotation.models import Export, Hit, Judgment
        from core.models import Job

        batch = world["batch"]
        hit = Hit._base_manager.filter(batch=batch).first()
        judgment = Judgment._base_manager.filter(assignment=world["assignment"]).first()
        job = Job._base_manager.order_by("pk").first()
        export = Export._base_manager.filter(batch=batch).first()
        values = {
            "pk": str(world["assignment"].pk),
            "name": SECRETS["batch"],
            "username": SECRETS["annotator"],
            "qid": "q1",
            "position": "1",
            "kind": "prolific",
            "model": "gpt-4o-mini",
        }
        by_segment = {
            ("hits", "pk"): str(hit.pk) if hit else "1",
            ("judgments", "pk"): str(judgment.pk) if judgment else "1",
            ("jobs", "pk"): str(job.pk) if job else "1",
            ("exports", "pk"): str(export.pk) if export else "1",
            ("query-sets", "name"): SECRETS["query_set"],
            ("collections", "name"): SECRETS["collection"],
            ("import", "kind"): "queries",
            ("imports", "kind"): "queries",
        }
        out = []
        for name, template in site_patterns():
            if name.startswith("admin:"):
                continue
            segments, filled = template.strip("/").split("/"), []
            for i, segment in enumerate(segments):
                while "{" in segment:
                    start, end = segment.index("{"), segment.index("}")
                    param = segment[start + 1 : end]
                    before = segments[i - 1] if i else ""
                    value = by_segment.get((before, param)) or ANY_SEGMENT.get(param) or values.get(param, "x")
                    segment = segment[:start] + value + segment[end + 1 :]
                filled.append(segment)
            out.append((name, "/" + "/".join(filled) + ("/" if template.endswith("/") else "")))
        return out

    def _bodies(self) -> list[tuple[str, str]]:
        fields = [
            "name",
            "queries",
            "provider",
            "reward",
            "assignments_per_query",
            "max_assignments",
            "username",
            "role",
            "group",
            "action",
            "access",
            "annotators",
            "label",
            "qid",
            "cutoffs",
            "target_accuracy",
            "active",
        ]
        bodies = [("application/json", "{}"), ("application/json", "[1, 2]"), ("application/json", "{")]
        for value in HOSTILE_VALUES:
            bodies.append(("application/json", json.dumps(dict.fromkeys(fields, value))))
        bodies.append(("application/json", json.dumps({"name": "x", "queries": SECRETS["query_set"], "typo_field": 1})))
        bodies.append(
            (
                "application/x-www-form-urlencoded",
                "group=hostile-lab-a&action=set&username=hr-b-researcher&role=owner&access=password&active=0",
            )
        )
        return bodies

    def _pick(self, bodies, method: str, round_number: int) -> list[tuple[str, str]]:
        if method == "GET":
            return [("application/json", "")]
        if method == "DELETE":
            return [bodies[0]]
        start = (round_number * 3) % len(bodies)
        return [bodies[(start + i) % len(bodies)] for i in range(3)]

    def _query(self, round_number: int) -> str:
        from urllib.parse import urlencode

        value = HOSTILE_VALUES[round_number % len(HOSTILE_VALUES)]
        return urlencode({"page": value, "batch": SECRETS["batch"], "max_assignments": value, "group": "hostile-lab-a"})

    def _judge(self, findings, counts, who: str, method: str, path: str, name: str, response) -> None:
        status = response.status_code
        where = f"{who}: {method} {path} ({name}) -> {status}"
        if status >= 500:
            counts["Medium"] += 1
            findings["Medium"].append(where)
            return
        body = b"".join(response.streaming_content) if response.streaming else response.content
        text = body.decode("utf-8", "replace")
        if status < 400:
            leaked = [s for s in [*SECRETS.values(), *SECRET_TEXTS] if s in text]
            # The annotator of lab A's own name shows on their own pages only; nobody here is them.
            if leaked:
                counts["High"] += 1
                findings["High"].append(f"{where}: shows {leaked}")
        elif path.startswith("/api/") and status != 405 and "json" not in response.get("Content-Type", ""):
            counts["Low"] += 1
            findings["Low"].append(f"{where}: not JSON")


#: Parameters whose value does not depend on the segment before them.
ANY_SEGMENT = {"format": "json", "fmt": "tsv", "part": "data", "app_label": "annotation", "url": "x"}


def _user(username: str):
    from django.contrib.auth import get_user_model

    return get_user_model().objects.get(username=username)


class _Quiet:
    def write(self, *args, **kwargs) -> None:
        pass

    def flush(self) -> None:
        pass


# --- the fifth round's findings (issue 68), each tried again ------------------------------------------


def _findings_of_issue_68(world) -> list[tuple[str | None, str]]:
    """``(kind, line)`` per attempt: kind ``None`` when the attempt was refused as it should be."""
    out: list[tuple[str | None, str]] = []
    for check in (_names, _lengths, _secrets, _deposit, _downloads, _numbers, _tokens, _static_methods):
        try:
            out += check(world)
        except Exception as exc:  # a crash of the code under test is a finding, not the end of the round
            out.append(("Medium", f"{check.__name__}: {type(exc).__name__}: {str(exc)[:300]}"))
    return out


def _client(user):
    from django.test import Client

    client = Client(raise_request_exception=False, HTTP_HOST="localhost")
    client.force_login(user)
    return client


def _status(kind_if_taken: str, what: str, status: int, taken: bool) -> tuple[str | None, str]:
    if status >= 500:
        return "Medium", f"{what} -> {status}"
    return (kind_if_taken if taken else None), f"{what} -> {status}{' (taken)' if taken else ''}"


def _names(world) -> list[tuple[str | None, str]]:
    """Usernames as stored: a fullwidth name of an existing account, look-alikes, reserved names."""
    from django.contrib.auth import get_user_model

    users = get_user_model().objects
    owner = _client(world["b-owner"])
    out = []
    tries = ["\uff48\uff52-\uff41\uff4c\uff49\uff43\uff45", "HR-B-VIEWER", "Hr-b-viewer", "hr-b-view\u0435r",
             "\uff48\uff52-b-viewer", "admin", "root", "Admin", "r\u03bf\u03bft"]  # fmt: skip
    for name in tries:
        before = users.count()
        answer = owner.post("/groups/", {"group": world["b"].slug, "action": "set", "username": name, "role": "viewer"})
        out.append(_status("Low", f"/groups/ username={name!r}: a look-alike account", answer.status_code,
                           users.count() != before))  # fmt: skip
    return out


def _lengths(world) -> list[tuple[str | None, str]]:
    """A name one past its column, and of 300 and 5,000 characters; a qid of 5,000 characters."""
    import tempfile
    from pathlib import Path

    from django.db import DatabaseError

    from core.db.scope import acting_in
    from genderbias.errors import InputError, ServiceError
    from pooling.models import QuerySet
    from pooling.services import import_queries

    limit = QuerySet._meta.get_field("name").max_length
    researcher = _client(world["b-researcher"])
    out = []
    for length in (limit + 1, 300, 5000):
        name = "x" * length
        answer = researcher.post(f"/api/annotation/batches/{world['b-batch'].name}/export/",
                                 {"category": "all", "format": "tsv", "as_query_set": name},
                                 content_type="application/json")  # fmt: skip
        stored = QuerySet._base_manager.filter(name=name).exists()
        out.append(_status("Low", f"export as_query_set of {length} characters", answer.status_code, stored))
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
    from django.db import connection

    from platforms.prolific.models import ProlificHookSecret
    from publishing.zenodo.deposit import ZenodoClient, ZenodoError
    from tests.publishing.zenodo_server import FakeZenodo, serve

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
    import json
    import os
    import tempfile
    from pathlib import Path

    from publishing.zenodo.deposit import deposit_folder

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
    from urllib.parse import unquote, urlsplit

    keys = [unquote(urlsplit(p).path.rsplit("/", 1)[-1]) for p in recorder.paths if "/files/" in p]
    for name in names:
        out.append((None if keys.count(name) == 1 and name in keys else "Low", f"deposit: the bucket key of {name!r}"))
    return out


def _downloads(world) -> list[tuple[str | None, str]]:
    """The pool's TSV and CSV downloads of queries that start like formulas."""
    import tempfile
    from pathlib import Path

    from core.db.scope import acting_in
    from pooling.models import Collection, QuerySet, Run
    from pooling.services import PoolSettings, build_pool, import_collection, import_queries, import_run

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
    researcher = _client(world["b-researcher"])
    out = []
    for fmt, separator in (("tsv", "\t"), ("csv", ",")):
        answer = researcher.get(f"/pooling/pools/{pool.name}/download.{fmt}")
        cells = [c for line in answer.content.decode().splitlines() for c in line.split(separator)]
        formulas = [c for c in cells if c.startswith(("=", "+", "-", "@"))]
        out.append(_status("Low", f"{fmt} download: {len(formulas)} formula cells", answer.status_code, bool(formulas)))
    return out


def _numbers(world) -> list[tuple[str | None, str]]:
    """``seed`` on the batch create and estimate API; a run line with rank -1."""
    import tempfile
    from pathlib import Path

    from genderbias.errors import InputError
    from genderbias.files.runs import read_run

    researcher = _client(world["b-researcher"])
    out = []
    for value in ('"1_0"', '"\u0663"', '"abc"', "1e400", '"NaN"'):
        for path in ("/api/annotation/batches/", "/api/annotation/batches/estimate/"):
            body = '{"name": "hr-seed", "queries": "zz-lab-b-queries", "seed": ' + value + "}"
            answer = researcher.post(path, body, content_type="application/json")
            out.append(_status("Low", f"POST {path} seed={value}", answer.status_code, answer.status_code < 400))
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
    from platforms.prolific.study_tokens import token_digest

    token = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl"
    return [(None if token_digest(token + suffix) == token_digest(token) else "Low", f"token respelled with {suffix!r}")
            for suffix in ("==", "=")]  # fmt: skip


def _static_methods(world) -> list[tuple[str | None, str]]:
    """Static and schema views answer 405 to methods they do not serve."""
    researcher = _client(world["b-researcher"])
    out = []
    for path in ("/api/redoc/redoc.standalone.js", "/api/redoc/", "/api/docs/", "/api/schema/", "/favicon.ico"):
        for method in ("POST", "PUT", "PATCH", "DELETE"):
            status = researcher.generic(method, path).status_code
            out.append(_status("Low", f"{method} {path}", status, status != 405))
    return out
