r"""A hostile round (issue 53): two labs set up as docs/deployment.md says, then every URL pattern of
the site asked with every method, a set of hostile bodies and query strings, as every kind of
account of the second lab and as accounts of no group, with the path's parameters naming the first
lab's objects. Each answer is judged:

- **High**: an answer under 400 that shows one of the first lab's secrets (its batch, query set,
  collection, report names, query texts, its annotator's name), or any change of the first lab's
  state (its batch's status, its HITs' assignments, its annotator's password or activity, its
  members);
- **Medium**: a 5xx;
- **Low**: an API answer (``/api/``) of 4xx that is not JSON.

Each finding of the fifth round (issue 68) is tried again first, by :func:`_findings_of_issue_68`, with
the same judge: a 5xx or a database error is Medium, what the finding did (a look-alike account made,
a name past its column stored, a secret in plaintext or echoed, a hard link deposited, a formula in a
download, a bad number or rank taken, a respelled token passing the replay key, a static file
answering POST) is Low.

Then each finding of the sixth round (issue 82), by :func:`_findings_of_issue_82`, through the entry a user or an
attacker reaches: a newline-free sparse bundle of 400 MB registered by reference through the API and read by a
pool job (Medium if the traced peak or the process's peak RSS grows by more than 64 MiB, Low if the job is not
refused); a symbolic link in an import root to a file outside it (in a folder of bundles, alone, the link itself)
and ``/etc/passwd`` registered by reference through the API (High if an answer or the collections' list shows the
file's text, Medium its size or a hash of it, Low if registered), a bundle moved outside the roots and linked
back after a registration (Low if a job's reader reads it);
``P@99999999999999999999``, ``RaB@١٠`` and ``nDCG@١٠`` in a report request and ``nosuch/dataset`` to the dataset
import (Low unless a JSON 400 on the field, no job, the id not rewritten); signed webhook bodies of unknown event
types (Low unless a 4xx and no row); lab B's viewer GETting every URL pattern with its parameters naming lab B's
own objects (a report, a batch with answers, round six's label-sensitivity flood as the query string: Low for
each GET that makes a Job); ``paper --dataset`` with ``"}\input{/etc/passwd}`` after a DOI; a Job RUNNING under
a dead process at its last attempt (``JOB_MAX_ATTEMPTS``), swept: Low unless failed with the reason and not run
or sent again. Lab A also has an audit sample (issue 81) whose labeller's name is a secret and whose labels are
part of its state. ``-v 2`` prints every attempt of the two rounds' findings, refused or not.

Run on a database of its own (it writes two labs into it)::

    VAR_DIR=$(mktemp -d) DJANGO_DEBUG=1 MANAGE_RESIDENT=off .venv/bin/python manage.py migrate -v0
    VAR_DIR=... DJANGO_DEBUG=1 MANAGE_RESIDENT=off .venv/bin/python manage.py hostile_round --rounds 2

It prints the counts after the findings and after each round (flushed: a round stopped early on a loaded
machine has said what it found), then each finding (at most 50 of each kind), and exits 1 when any High or
Medium was found. Not a test of the suite: it takes minutes, on a loaded machine hours (docs/benchmarks.md).
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
    "audit labeller": "zq-lab-a-audit-labeller",  # who gave lab A's audit labels (issue 81's audit sample)
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
        # The fifth and sixth rounds' findings first, each tried again (printed as they end, so a round
        # stopped early still says them); the fifth's make lab B's pool, which the sixth's viewer asks for.
        fifth = _findings_of_issue_68(world)
        sixth = _findings_of_issue_82(world, self._paths(world, lab="b"))
        for kind, line in [*fifth, *sixth]:
            counts["attempts"] += 1
            if options["verbosity"] > 1:  # -v 2: every attempt of the rounds' findings, refused or not
                self.stdout.write(f"  [{kind or 'refused'}] {line}")
            if kind:
                counts[kind] += 1
                findings[kind].append(line)
        if self._state(world) != before:
            counts["High"] += 1
            findings["High"].append(f"the rounds' findings changed lab A's state: {self._state(world)} vs {before}")
            before = self._state(world)
        self._progress("the rounds' findings", counts, started)
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
            self._progress(f"round {round_number + 1} of {rounds}", counts, started)
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

    def _progress(self, what: str, counts: dict, started: float) -> None:
        """The counts so far, flushed: a long round on a loaded machine says what it found as it goes."""
        self.stdout.write(
            f"after {what}: attempts {counts['attempts']}, High {counts['High']}, Medium {counts['Medium']}, "
            f"Low {counts['Low']}, {time.monotonic() - started:.0f} s"
        )
        self.stdout.flush()

    # --- the two labs, as docs/deployment.md sets them up -------------------------------------------

    def _labs(self) -> dict:
        from django.core.management import call_command
        from django.test import Client

        from annotation import services
        from core.db.scope import acting_in
        from core.models import ResearchGroup
        from platforms.inhouse.services.annotators import create_annotator
        from platforms.inhouse.services.handout import next_assignment
        from platforms.inhouse.services.hit_page import submit_local_assignment
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
            _audit_sample(batch)
        with acting_in(b.pk):
            b_queries = create_query_set("zz-lab-b-queries", [("b1", "who is he")], origin=QuerySet.Origin.IMPORTED)
            world["b-batch"] = services.create_batch(
                "zz-lab-b-batch",
                services.BatchSettings(
                    provider="local", assignments_per_query=1, queries_per_hit=1, reward=Decimal("0.05")
                ),
                query_set=b_queries,
            )
        with acting_in(b.pk):  # what lab B's viewer may read, so that its GETs reach the job-starting code
            world.update(_lab_b_reports(b))
        with acting_in(a.pk):  # an annotator of lab A, then removed from it: of no group
            loner = create_annotator("hr-loner", password="pw-secret-123")
        groups.remove_member(None, a, "hr-loner")
        world.update({"batch": batch, "annotator": annotator, "loner": loner, "assignment": assignment})
        return world

    def _state(self, world) -> tuple:
        from annotation.models import Assignment, AuditItem, Batch
        from core.models import Membership

        batch = Batch._base_manager.get(pk=world["batch"].pk)
        audit = AuditItem._base_manager.filter(sample__batch=batch).order_by("pk")
        annotator = type(world["annotator"]).objects.get(pk=world["annotator"].pk)
        return (
            batch.status,
            Assignment._base_manager.filter(hit__batch=batch).count(),
            annotator.password,
            annotator.is_active,
            tuple(Membership.objects.filter(group=world["a"]).order_by("pk").values_list("user_id", "role")),
            tuple(audit.values_list("label", "labeller_name", "labelled_at")),
        )

    # --- what is sent -----------------------------------------------------------------------------

    def _paths(self, world, lab: str = "a") -> list[tuple[str, str]]:
        """Every URL pattern (but the admin's) with its parameters naming ``lab``'s objects: lab A's for the
        other lab's accounts to try; lab B's for its viewer's GETs (issue 82: a viewer's GET starts no job)."""
        from annotation.models import Assignment, Export, Hit, Judgment
        from core.models import Job

        if lab == "a":
            batch, assignment = world["batch"], world["assignment"]
            names = {"": SECRETS["batch"], "query-sets": SECRETS["query_set"], "collections": SECRETS["collection"]}
            username = SECRETS["annotator"]
        else:
            batch = world["b-sens"]
            assignment = Assignment._base_manager.filter(hit__batch=batch).first()
            names = {"": batch.name, "query-sets": "zz-lab-b-q", "collections": "zz-lab-b-collection",
                     "runs": "zz-lab-b-a", "pools": "hr-b-pool", "reports": world["b-report"].name,
                     "metrics": world["b-report"].name}  # fmt: skip
            username = "zz-b-ann-a"
        hit = Hit._base_manager.filter(batch=batch).first()
        judgment = Judgment._base_manager.filter(assignment=assignment).first()
        job = Job._base_manager.filter(group=world[lab]).order_by("pk").first() or Job._base_manager.first()
        export = Export._base_manager.filter(batch=batch).first()
        values = {
            "pk": str(assignment.pk) if assignment else "1",
            "name": names[""],
            "username": username,
            "qid": "q1" if lab == "a" else "1",
            "position": "1",
            "kind": "prolific",
            "model": "gpt-4o-mini",
        }
        by_segment = {
            ("hits", "pk"): str(hit.pk) if hit else "1",
            ("judgments", "pk"): str(judgment.pk) if judgment else "1",
            ("jobs", "pk"): str(job.pk) if job else "1",
            ("exports", "pk"): str(export.pk) if export else "1",
            ("import", "kind"): "queries",
            ("imports", "kind"): "queries",
            **{(segment, "name"): name for segment, name in names.items() if segment},
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
            if getattr(response, "exc_info", None):  # what the 500 was, for the report
                where += f": {response.exc_info[0].__name__}: {str(response.exc_info[1])[:200]}"
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


def _audit_sample(batch) -> None:
    """Lab A's audit sample of its batch (issue 81): two queries drawn, each with an expert label whose labeller's
    name is a secret; its URLs are walked with the others, and its labels are part of lab A's state."""
    from django.utils import timezone

    from annotation.models import AuditItem, AuditSample

    queries = list(batch.queries.order_by("pk")[:2])
    sample = AuditSample.objects.create(batch=batch, seed=82, size=len(queries), population=batch.queries.count(),
                                        drawn_at=timezone.now())  # fmt: skip
    for index, query in enumerate(queries):
        AuditItem.objects.create(sample=sample, batch_query=query, draw_index=index, label="f",
                                 labeller_name=SECRETS["audit labeller"], labelled_at=timezone.now())  # fmt: skip


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
    from core.errors import ServiceError
    from genderbias.errors import InputError
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


# --- the sixth round's findings (issue 82), each tried again ----------------------------------------------

#: Lab B's small world for its viewer's GETs: passages, queries, two runs, judgments, a report and a batch of
#: in-house answers (tests/metrics/conftest.py's), so label sensitivity, a report's per-query CSV and its paper
#: bundle are there to be asked for.
_B_PASSAGES = {"d1": "She and her sister", "d2": "He met his father", "d3": "nothing gendered here",
               "d4": "the man and the woman"}  # fmt: skip
_B_QUERIES = {"1": "who is she", "2": "what is a synapse", "3": "who is he"}
_B_RUNS = {"a": {"1": ["d1", "d3"], "2": ["d3", "d4"], "3": ["d2", "d1"]},
           "c": {"1": ["d4", "d3"], "2": ["d4", "d3"], "3": ["d3", "d4"]}}  # fmt: skip
_B_ANSWERS = {"zz-b-ann-a": {"1": "n", "2": "n", "3": "n"}, "zz-b-ann-b": {"1": "n", "2": "n", "3": "f"},
              "zz-b-ann-c": {"1": "f", "2": "n", "3": "m"}}  # fmt: skip
#: The label-sensitivity settings of round six's flood, never computed before a viewer asks.
_B_SENSITIVITY = {"runs": "zz-lab-b-a,zz-lab-b-c", "cutoffs": "1,2", "bootstrap": "20"}


def _lab_b_reports(b) -> dict:
    """Lab B's report and label-sensitivity-able batch (called acting in lab B)."""
    import tempfile
    from pathlib import Path

    from annotation import services as annotation
    from metrics import services as metrics
    from platforms.inhouse.services.annotators import create_annotator
    from platforms.inhouse.services.handout import next_assignment
    from platforms.inhouse.services.hit_page import submit_local_assignment
    from pooling.services import import_collection, import_qrels, import_queries, import_run

    folder = Path(tempfile.mkdtemp(prefix="hostile-82-lab-b-"))
    (folder / "c.tsv").write_text("".join(f"{pid}\t{text}\n" for pid, text in _B_PASSAGES.items()))
    (folder / "q.tsv").write_text("".join(f"{qid}\t{text}\n" for qid, text in _B_QUERIES.items()))
    (folder / "qrels.txt").write_text("1 0 d1 1\n2 0 d3 1\n3 0 d2 1\n")
    collection = import_collection(folder / "c.tsv", "zz-lab-b-collection").obj
    query_set = import_queries(folder / "q.tsv", "zz-lab-b-q").obj
    import_qrels(folder / "qrels.txt", "zz-lab-b-qrels", collection, query_set)
    runs = []
    for name, rankings in _B_RUNS.items():
        lines = [f"{q} Q0 {d} {r} {10 - r} t\n" for q, docs in rankings.items() for r, d in enumerate(docs, 1)]
        (folder / f"{name}.trec").write_text("".join(lines))
        runs.append(import_run(folder / f"{name}.trec", f"zz-lab-b-{name}", collection).obj)
    report = metrics.build_report(
        "zz-lab-b-report", query_set, runs, metrics.ReportSettings(cutoffs=(1, 2), bootstrap_samples=20), bar=False
    )
    options = {"provider": "local", "assignments_per_query": 3, "queries_per_hit": 3, "reward": Decimal("0.05")}
    batch = annotation.create_batch("zz-lab-b-sens", annotation.BatchSettings(**options), query_set=query_set)
    annotation.publish_batch(batch)
    for name, answers in _B_ANSWERS.items():
        user = create_annotator(name, password="pw-secret-123")
        while (assignment := next_assignment(user, batch)) is not None:
            hit_queries = assignment.hit.hit_queries.select_related("batch_query")
            submit_local_assignment(assignment, {hq.field_name: answers[hq.batch_query.qid] for hq in hit_queries})
    batch.refresh_from_db()
    return {"b-report": report, "b-sens": batch}


def _findings_of_issue_82(world, lab_b_paths: list[tuple[str, str]]) -> list[tuple[str | None, str]]:
    """``(kind, line)`` per attempt, as :func:`_findings_of_issue_68`: each finding of the sixth round tried
    again through the entry a user or an attacker reaches (the API, a page, a command, the sweeper)."""
    import tempfile
    from pathlib import Path

    from django.test import override_settings

    folder = Path(tempfile.mkdtemp(prefix="hostile-82-"))
    out: list[tuple[str | None, str]] = []
    checks = (_sparse_bundle, _linked_bundles, _measure_numbers, _dataset_ids, _webhook_event_types,
              _viewer_gets, _paper_doi, _exhausted_job)  # fmt: skip
    with override_settings(IMPORT_ROOTS=[str(folder / "root")], CACHE_DIR=str(folder / "cache")):
        (folder / "root").mkdir()
        for check in checks:
            try:
                out += check(world, folder) if check is not _viewer_gets else check(world, lab_b_paths)
            except Exception as exc:  # a crash of the code under test is a finding, not the end of the round
                out.append(("Medium", f"{check.__name__}: {type(exc).__name__}: {str(exc)[:300]}"))
    return out


#: Peak memory growth past which reading one bundle line is the unbounded read of round six (21.8 GB).
_BUNDLE_GROWTH = 64 * 2**20


def _sparse_bundle(world, folder) -> list[tuple[str | None, str]]:
    """A newline-free sparse bundle of 400 MB in a folder registered by reference through the API, then read
    by a pool job started through the API: refused (the job failed naming the line), memory bounded."""
    import resource
    import tracemalloc

    from core.jobs.in_process import inline_jobs
    from core.models import Job
    from pooling.models import Collection
    from pooling.synthetic import write_v2_bundles

    bundles = write_v2_bundles(folder / "root" / "sparse", 20, bundles=2, texts=10)
    with open(bundles / "msmarco_passage_02", "wb") as f:  # the issue's input: a start, then 400 MB of nothing
        f.write(b'{"pid": "msmarco_passage_02_0", "passage": "')
        f.truncate(400 * 2**20)
    researcher = _client(world["b-researcher"])
    body = {"name": "hr-82-sparse", "path": str(bundles), "by_reference": True}
    with inline_jobs():
        answer = researcher.post("/api/pooling/imports/collection/", body, content_type="application/json")
    out = [_status("Low", "by reference: a folder with a newline-free sparse bundle", answer.status_code, False)]
    collection = Collection._base_manager.filter(name="hr-82-sparse").first()
    if collection is None:
        return [*out, (None, f"the sparse bundle's folder refused at registration -> {answer.status_code}")]
    queries, run = _lab_b_run(world, folder, collection, "msmarco_passage_02_0")
    pool = {"name": "hr-82-sparse-pool", "queries": queries, "runs": [run], "depth": 1, "rank_cutoff": 1}
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    tracemalloc.start()
    try:
        with inline_jobs():
            try:
                answer = researcher.post("/api/pooling/pools/", pool, content_type="application/json")
                status = answer.status_code
            except Exception as exc:  # an inline job raises what it raised; its Job row says the rest
                status = type(exc).__name__
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - rss
    job = Job._base_manager.filter(kind="pool", group=world["b"]).order_by("-pk").first()
    refused = job is not None and job.status == Job.Status.FAILED and "longer than" in job.message
    what = f"pool over the sparse bundle -> {status}; traced peak {peak / 2**20:.1f} MiB, RSS +{grown / 2**20:.1f} MiB"
    if max(peak, grown) > _BUNDLE_GROWTH:
        return [*out, ("Medium", f"{what}: memory unbounded")]
    return [*out, (None if refused else "Low", f"{what}; job {job.status if job else None}: "
                   f"{(job.message if job else '')[:160]}")]  # fmt: skip


def _lab_b_run(world, folder, collection, pid: str) -> tuple[str, str]:
    """A query set and a run of lab B ranking ``pid`` of ``collection`` (by reference: ids not checked)."""
    from core.db.scope import acting_in
    from pooling.services import import_queries, import_run

    name = f"hr-82-{collection.name}"
    (folder / f"{name}.tsv").write_text("1\twho is she\n")
    (folder / f"{name}.trec").write_text(f"1 Q0 {pid} 1 9 r\n")
    with acting_in(world["b"].pk):
        import_queries(folder / f"{name}.tsv", f"{name}-q")
        import_run(folder / f"{name}.trec", f"{name}-run", collection)
    return f"{name}-q", f"{name}-run"


def _linked_bundles(world, folder) -> list[tuple[str | None, str]]:
    """A symbolic link in an import root to a file outside it (standing for /etc/passwd: a size of its own,
    54,321 bytes) registered by reference through the API, in a folder of bundles, alone in a folder, itself, and
    /etc/passwd: High if an answer or the collections' list shows its text, Medium its size or hash (round six:
    /etc/passwd's through the API), Low if registered. Then a bundle moved outside the roots and linked back
    after a registration (the same bytes: the fingerprint alone cannot tell): Low if read through the link."""
    import hashlib
    import json
    import os
    import re
    from pathlib import Path

    from core.db.scope import acting_in
    from pooling.models import Collection
    from pooling.services import texts_by_reference, texts_checksum
    from pooling.synthetic import write_v2_bundles

    secret = "root:x:0:0:root:/root:/bin/bash hostile-82"
    outside = folder / "passwd"
    line = json.dumps({"pid": "msmarco_passage_00_0", "passage": secret})
    outside.write_text(line[:-2] + " " * (54_321 - len(line) - 1) + line[-2:] + "\n")  # a size of its own
    digest = hashlib.sha256(outside.read_bytes()).hexdigest()[:12]
    researcher = _client(world["b-researcher"])
    out = []
    linked = write_v2_bundles(folder / "root" / "linked", 20, bundles=1, texts=10)
    (linked / "msmarco_passage_01").symlink_to(outside)
    alone = folder / "root" / "alone"
    alone.mkdir()
    (alone / "msmarco_passage_00").symlink_to(outside)
    cases = (("a folder of bundles and a link to an outside file", linked), ("a folder of only that link", alone),
             ("the link itself", linked / "msmarco_passage_01"), ("/etc/passwd", Path("/etc/passwd")))  # fmt: skip
    for label, path in cases:
        body = {"name": "hr-82-linked", "path": str(path), "by_reference": True}
        answer = researcher.post("/api/pooling/imports/collection/", body, content_type="application/json")
        made = Collection._base_manager.filter(name="hr-82-linked").first()
        shown = answer.content.decode() + researcher.get("/api/pooling/collections/").content.decode()
        if made is not None:
            shown += researcher.get(f"/api/pooling/collections/{made.name}/").content.decode()
        what = f"by reference, {label}"
        if secret in shown:
            out.append(("High", f"{what} -> {answer.status_code}: shows the outside file's text"))
        elif re.search(r"\b54,?321\b", shown) or digest in shown or (made is not None and label.endswith("link")):
            out.append(("Medium", f"{what} -> {answer.status_code}: shows the outside file's size or a hash of it"))
        else:
            out.append(_status("Low", f"{what}{': registered' * bool(made)}", answer.status_code, made is not None))
        Collection._base_manager.filter(name="hr-82-linked").delete()
    swapped = write_v2_bundles(folder / "root" / "swapped", 20, bundles=2, texts=10)
    body = {"name": "hr-82-swapped", "path": str(swapped), "by_reference": True}
    answer = researcher.post("/api/pooling/imports/collection/", body, content_type="application/json")
    collection = Collection._base_manager.filter(name="hr-82-swapped").first()
    if collection is None:
        return [*out, ("Low", f"a folder of plain bundles refused by reference -> {answer.status_code}")]
    bundle = swapped / "msmarco_passage_01"
    os.replace(bundle, folder / "moved")  # outside the import root, the same bytes
    bundle.symlink_to(folder / "moved")
    for name, read in (("texts", texts_by_reference), ("checksum", texts_checksum)):
        with acting_in(world["b"].pk):
            try:
                read(collection, ["msmarco_passage_01_0"])
                out.append(("Low", f"a link swapped in after registration: {name} read the file outside the roots"))
            except Exception as exc:  # the refusal: the reader's InputError as a ServiceError
                refused = "symbolic link" in str(exc) or "not a regular file" in str(exc)
                out.append((None if refused else "Low", f"a link swapped in, {name}: {str(exc)[:140]}"))
    return out


def _measure_numbers(world, folder) -> list[tuple[str | None, str]]:
    """``P@99999999999999999999`` and ``RaB@١٠`` in a report request: a JSON 400 on measures, no job."""
    from core.models import Job

    researcher = _client(world["b-researcher"])
    out = []
    for measures in ("P@99999999999999999999", "RaB@١٠", "nDCG@١٠"):
        jobs = Job._base_manager.count()
        body = {"name": "hr-82-big", "queries": "zz-lab-b-q", "runs": ["zz-lab-b-a"], "cutoffs": "2",
                "qrels": "zz-lab-b-qrels", "measures": measures}  # fmt: skip
        answer = researcher.post("/api/metrics/reports/", body, content_type="application/json")
        refused = answer.status_code == 400 and "measures" in answer.content.decode()
        taken = not refused or Job._base_manager.count() != jobs
        out.append(_status("Low", f"report measures={measures}", answer.status_code, taken))
    return out


def _dataset_ids(world, folder) -> list[tuple[str | None, str]]:
    """``nosuch/dataset`` to the dataset import (API and page): refused on its field, no job, the id unrewritten."""
    from importlib.util import find_spec

    from core.models import Job

    if find_spec("ir_datasets") is None:
        return [(None, "nosuch/dataset: ir_datasets not installed (the import is off)")]
    researcher = _client(world["b-researcher"])
    out = []
    for path, body in (("/api/pooling/imports/dataset/", {"name": "hr-82-ds", "dataset": "nosuch/dataset"}),
                       ("/pooling/import/dataset/", {"name": "hr-82-ds", "dataset": "nosuch/dataset"})):  # fmt: skip
        jobs = Job._base_manager.count()
        if path.startswith("/api/"):
            answer = researcher.post(path, body, content_type="application/json")
        else:
            answer = researcher.post(path, body)
        text = answer.content.decode()
        ok = (
            answer.status_code == 400 and "has no dataset &#x27;nosuch/dataset&#x27;" in text
        ) or "has no dataset 'nosuch/dataset'" in text
        taken = not ok or Job._base_manager.count() != jobs or "ir_nosuch" in text
        out.append(_status("Low", f"{path} dataset=nosuch/dataset", answer.status_code, taken))
    return out


def _webhook_event_types(world, folder) -> list[tuple[str | None, str]]:
    """A signed Prolific webhook body of an event type the site does not subscribe to: 4xx, no row."""
    import base64
    import hashlib
    import hmac
    import json
    import time
    from unittest import mock

    from django.test import Client, override_settings

    from platforms.prolific.models import ProlificEvent

    secret = "hostile-82-webhook-secret-0123456789"
    out = []
    for event_type in ("study.unknown_thing", "Study.Status.Change", "submission.status.change "):
        body = json.dumps({"resource_id": "0" * 24, "event_type": event_type, "status": "RETURNED"}).encode()
        stamp = str(int(time.time()))
        signature = base64.b64encode(hmac.new(secret.encode(), stamp.encode() + body, hashlib.sha256).digest())
        headers = {"HTTP_X_PROLIFIC_REQUEST_SIGNATURE": signature.decode(), "HTTP_X_PROLIFIC_REQUEST_TIMESTAMP": stamp,
                   "HTTP_X_EVENT_ID": f"hostile-82-{event_type.strip()}"}  # fmt: skip
        rows = ProlificEvent._base_manager.count()
        with (
            override_settings(PROLIFIC_WEBHOOKS=True),
            mock.patch("platforms.prolific.webhooks.services.deliveries._secret", return_value=secret),
        ):
            answer = Client(raise_request_exception=False, HTTP_HOST="localhost").post(
                "/annotation/prolific/webhooks/events/", body, content_type="application/json", **headers
            )
        stored = ProlificEvent._base_manager.count() != rows
        taken = stored or not 400 <= answer.status_code < 500
        out.append(_status("Low", f"signed webhook of event type {event_type!r}", answer.status_code, taken))
    return out


def _viewer_gets(world, lab_b_paths: list[tuple[str, str]]) -> list[tuple[str | None, str]]:
    """Lab B's viewer GETs every URL pattern with its parameters naming lab B's own objects, and the query
    string of round six's label-sensitivity flood: no Job is made by a viewer (round six: 8 jobs)."""
    from urllib.parse import urlencode

    from core.jobs.in_process import inline_jobs
    from core.models import Job

    viewer = _client(world["b-viewer"])
    query = urlencode({"batch": world["b-sens"].name, **_B_SENSITIVITY})
    out = []
    for name, path in lab_b_paths:
        before = Job._base_manager.count()
        with inline_jobs():
            try:
                answer = viewer.get(f"{path}?{query}")
                status = answer.status_code
                if status >= 500 and getattr(answer, "exc_info", None):  # what the 500 was, for the report
                    name = f"{name}: {answer.exc_info[0].__name__}: {str(answer.exc_info[1])[:200]}"
            except Exception as exc:  # an inline job raises what it raised
                status = 500
                name = f"{name} ({type(exc).__name__})"
        made = list(Job._base_manager.filter(pk__gt=0).order_by("-pk")[: Job._base_manager.count() - before])
        kinds = sorted(job.kind for job in made)
        out.append(_status("Low", f"lab B viewer GET {path} ({name}){f' made jobs {kinds}' if made else ''}",
                           status, bool(made)))  # fmt: skip
    by_viewer = Job._base_manager.filter(started_by=world["b-viewer"]).count()
    out.append(("Low" if by_viewer else None, f"jobs started by lab B's viewer: {by_viewer}"))
    return out


def _paper_doi(world, folder) -> list[tuple[str | None, str]]:
    """``paper --dataset`` with ``"}\\input{/etc/passwd}`` after a DOI: refused before anything is written."""
    from django.core.management import CommandError, call_command

    from core.db.scope import acting_in

    out_folder = folder / "paper"
    with acting_in(world["b"].pk):
        try:
            call_command("paper", world["b-report"].name, out=str(out_folder), dataset='10.5281/zenodo.1234"}\\input{/etc/passwd}', stdout=_Quiet(), stderr=_Quiet())  # fmt: skip
            return [("Low", "paper --dataset took a DOI with LaTeX after it")]
        except CommandError as exc:
            written = out_folder.exists()
            return [(("Low" if written else None), f"paper --dataset: {str(exc)[:120]}{' (written)' * written}")]


def _exhausted_job(world, folder) -> list[tuple[str | None, str]]:
    """A job RUNNING under a dead process at its last attempt (``JOB_MAX_ATTEMPTS``): the sweeper fails it
    with the reason, sends it no more and runs nothing inline."""
    import subprocess
    import sys

    from django.conf import settings
    from django.utils import timezone

    from core.jobs.sweeper import sweep_jobs
    from core.models import Job
    from core.tasks import task_for, worker_identity

    publish_batch_task = task_for("annotation.publish")
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    batch = world["b-batch"]
    unpublished = batch.hits.filter(provider_id=None).count() if hasattr(batch, "hits") else None
    job = Job._base_manager.create(
        kind="annotation.publish", task=publish_batch_task.name, arguments=[batch.pk], group=world["b"],
        status=Job.Status.RUNNING, attempts=getattr(settings, "JOB_MAX_ATTEMPTS", 3), message_id="hostile-82-last",
        worker=f"{worker_identity().rpartition(':')[0]}:{process.pid}", heartbeat=timezone.now(),
    )  # fmt: skip
    sweep = sweep_jobs()
    job.refresh_from_db()
    failed = job.status == Job.Status.FAILED and "died" in job.message and job.message_id == "hostile-82-last"
    ran = unpublished is not None and batch.hits.filter(provider_id=None).count() != unpublished
    again = sweep_jobs()
    taken = not failed or ran or job.pk in again.failed + again.resent
    return [(("Low" if taken else None), f"a job at its last attempt under a dead pid: {job.status}, swept "
             f"failed={sweep.failed[:3]} resent={sweep.resent[:3]}: {job.message[:120]}")]  # fmt: skip
