"""The hostile round's two labs, set up as docs/deployment.md says: lab A holds the secrets and the state
the other accounts must neither see nor change; lab B holds the accounts that try, and a small world of
its own for its viewer's GETs (issue 82: a viewer's GET starts no job)."""

from __future__ import annotations

import re
import tempfile
from io import StringIO  # the output of the commands the round calls is not the round's
from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client
from django.utils import timezone

from annotation import services
from annotation import services as annotation
from annotation.models import Assignment, AuditItem, AuditSample, Batch, Export, Hit, Judgment
from core.db.scope import acting_in
from core.models import Job, Membership, ResearchGroup
from core.services import groups
from metrics import services as metrics
from platforms.inhouse.services.annotators import create_annotator
from platforms.inhouse.services.handout import next_assignment
from platforms.inhouse.services.hit_page import submit_local_assignment
from pooling.models import QuerySet
from pooling.services import create_query_set, import_collection, import_qrels, import_queries, import_run
from tests.support.url_patterns import site_patterns

SECRETS = {
    "collection": "zq-lab-a-collection",
    "query_set": "zq-lab-a-queries",
    "batch": "zq-lab-a-batch",
    "annotator": "zq-lab-a-annotator",
    "audit labeller": "zq-lab-a-audit-labeller",  # who gave lab A's audit labels (issue 81's audit sample)
}
SECRET_TEXTS = ["zq lab a secret query about queens", "zq lab a secret query about kings"]

#: Lab B's small world: passages, queries, two runs, judgments, a report and a batch of in-house answers
#: (tests/metrics/conftest.py's), so label sensitivity, a report's per-query CSV and its paper bundle are
#: there to be asked for.
_B_PASSAGES = {"d1": "She and her sister", "d2": "He met his father", "d3": "nothing gendered here",
               "d4": "the man and the woman"}  # fmt: skip
_B_QUERIES = {"1": "who is she", "2": "what is a synapse", "3": "who is he"}
_B_RUNS = {"a": {"1": ["d1", "d3"], "2": ["d3", "d4"], "3": ["d2", "d1"]},
           "c": {"1": ["d4", "d3"], "2": ["d4", "d3"], "3": ["d3", "d4"]}}  # fmt: skip
_B_ANSWERS = {"zz-b-ann-a": {"1": "n", "2": "n", "3": "n"}, "zz-b-ann-b": {"1": "n", "2": "n", "3": "f"},
              "zz-b-ann-c": {"1": "f", "2": "n", "3": "m"}}  # fmt: skip
#: The label-sensitivity settings of round six's flood, never computed before a viewer asks.
B_SENSITIVITY = {"runs": "zz-lab-b-a,zz-lab-b-c", "cutoffs": "1,2", "bootstrap": "20"}
#: Parameters whose value does not depend on the segment before them.
ANY_SEGMENT = {"format": "json", "fmt": "tsv", "part": "data", "app_label": "annotation", "url": "x"}


def make_labs() -> dict:
    """Both labs, their members added by their owners on /groups/, and an annotator of no group; the
    accounts and objects the round uses, by name."""
    call_command("research_group", create="Hostile lab A", owner="hr-alice", stdout=StringIO())
    call_command("research_group", create="Hostile lab B", owner="hr-bob", stdout=StringIO())
    labs = {g.slug: g for g in ResearchGroup.objects.filter(name__startswith="Hostile lab")}
    a, b = labs["hostile-lab-a"], labs["hostile-lab-b"]
    world = {"a": a, "b": b}
    for lab, owner in ((a, "hr-alice"), (b, "hr-bob")):
        owner_client = client(user(owner))
        prefix = "a" if lab == a else "b"
        for role in ("researcher", "viewer", "annotator"):
            answer = owner_client.post(
                "/groups/", {"group": lab.slug, "action": "set", "username": f"hr-{prefix}-{role}", "role": role}
            )
            if answer.status_code != 200:
                raise SystemExit(f"/groups/ refused to add hr-{prefix}-{role}: {answer.status_code}")
    world.update({f"b-{role}": user(f"hr-b-{role}") for role in ("researcher", "viewer", "annotator")})
    world["b-owner"] = user("hr-bob")
    with acting_in(a.pk):
        queries = [(f"a{i}", f"zq lab a secret query {i}") for i in range(9)]
        queries += [("q1", SECRET_TEXTS[0]), ("q2", SECRET_TEXTS[1])]
        query_set = create_query_set(SECRETS["query_set"], queries, origin=QuerySet.Origin.IMPORTED)
        batch = services.create_batch(
            SECRETS["batch"],
            services.BatchSettings(assignments_per_query=2, queries_per_hit=4),
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
            services.BatchSettings(assignments_per_query=1, queries_per_hit=1),
            query_set=b_queries,
        )
        world.update(_lab_b_reports())
    with acting_in(a.pk):  # an annotator of lab A, then removed from it: of no group
        loner = create_annotator("hr-loner", password="pw-secret-123")
    groups.remove_member(None, a, "hr-loner")
    world.update({"batch": batch, "annotator": annotator, "loner": loner, "assignment": assignment})
    return world


def lab_a_state(world) -> tuple:
    """What no other account may change: lab A's batch status, assignments, annotator, members, audit labels."""
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


def url_paths(world, lab: str = "a") -> list[tuple[str, str]]:
    """``(name, path)`` of every URL pattern but the admin's, its parameters naming ``lab``'s objects."""
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

    def value(param: str, before: str) -> str:  # a parameter's value, by the segment before it
        return by_segment.get((before, param)) or ANY_SEGMENT.get(param) or values.get(param, "x")

    out = []
    for name, template in site_patterns():
        if name.startswith("admin:"):
            continue
        segments = template.strip("/").split("/")
        filled = [
            re.sub(r"\{(\w+)\}", lambda m, before=before: value(m[1], before), segment)
            for before, segment in zip(["", *segments], segments, strict=False)
        ]
        out.append((name, "/" + "/".join(filled) + ("/" if template.endswith("/") else "")))
    return out


def _audit_sample(batch) -> None:
    """Lab A's audit sample (issue 81): two queries, each labelled by an expert whose name is a secret."""
    queries = list(batch.queries.order_by("pk")[:2])
    sample = AuditSample.objects.create(batch=batch, seed=82, size=len(queries), population=batch.queries.count(),
                                        drawn_at=timezone.now())  # fmt: skip
    for index, query in enumerate(queries):
        AuditItem.objects.create(sample=sample, batch_query=query, draw_index=index, label="f",
                                 labeller_name=SECRETS["audit labeller"], labelled_at=timezone.now())  # fmt: skip


def _lab_b_reports() -> dict:
    """Lab B's report and its batch answered by three annotators (called acting in lab B)."""
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
    batch = annotation.create_batch("zz-lab-b-sens", annotation.BatchSettings(queries_per_hit=3), query_set=query_set)
    annotation.publish_batch(batch)
    for name, answers in _B_ANSWERS.items():
        annotator = create_annotator(name, password="pw-secret-123")
        while (assignment := next_assignment(annotator, batch)) is not None:
            hit_queries = assignment.hit.hit_queries.select_related("batch_query")
            submit_local_assignment(assignment, {hq.field_name: answers[hq.batch_query.qid] for hq in hit_queries})
    batch.refresh_from_db()
    return {"b-report": report, "b-sens": batch}


def user(username: str):
    return get_user_model().objects.get(username=username)


def client(account):
    """A test client logged in as ``account`` that answers a server error rather than raising it."""
    logged_in = Client(raise_request_exception=False, HTTP_HOST="localhost")
    if account is not None:
        logged_in.force_login(account)
    return logged_in
