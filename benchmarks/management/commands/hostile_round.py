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
            create_query_set("zz-lab-b-queries", [("b1", "who is he")], origin=QuerySet.Origin.IMPORTED)
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
