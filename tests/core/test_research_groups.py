"""Research groups keep studies apart: a second group's researcher reaches nothing of the first's.

The walk takes every URL pattern from Django's resolver (pages, API, admin), fills its path
parameters with the first group's objects and asks GET and POST as a researcher of the second
group: each answer refuses (403, 404, 405, a redirect to the login) or shows none of the first
group's names and query texts; never a 5xx. Every pattern's name is classified in
:data:`PATTERNS`: a new URL fails this test until someone says what it is, so no address is
skipped silently. Then the roles: a viewer reads but cannot create, cancel or pay; a researcher
cannot manage members; an annotator of the second group is handed none of the first's HITs.
"""

from __future__ import annotations

from decimal import Decimal
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from annotation import services
from annotation.exports.services import export_for_download
from annotation.models import Assignment, Batch, Export, Hit, Judgment
from core.db.scope import acting_in
from core.models import Job, Membership, ResearchGroup
from core.services import groups as group_services
from platforms.inhouse.services.annotators import create_annotator
from platforms.inhouse.services.handout import next_assignment
from platforms.inhouse.services.hit_page import submit_local_assignment
from pooling.models import QuerySet, Run
from pooling.services import PoolSettings, build_pool, create_query_set
from tests.annotation.conftest import answers_for
from tests.support.kept_state import kept
from tests.support.url_patterns import site_patterns

#: What each URL pattern (by name, namespaced) is, for the walk:
#: ``study``: names one of a group's objects in its path: refused (403/404) for another group;
#: ``page``: a page or list of the user's own groups: answers, showing nothing of another group;
#: ``public``: for everyone (login, Prolific's arrival and webhooks, one-time links): nothing of a group;
#: ``admin``: Django's admin, for superusers (a researcher's staff account has no model permission).
PAGE, STUDY, PUBLIC, ADMIN = "page", "study", "public", "admin"
PATTERNS: dict[str, str] = {
    "home": PAGE,
    "home-live": PAGE,
    "api-token": PAGE,
    "research-groups": PAGE,
    "login": PUBLIC,
    "logout": PUBLIC,
    "password_change": PAGE,
    # A researcher acknowledges the CHANGELOG entries they have seen: their own row, nothing of a group.
    "changelog-acknowledge": PAGE,
    "password_change_done": PAGE,
    "core:job-detail": STUDY,
    "core:job-progress-fragment": STUDY,
    "core:job-progress": STUDY,
    "pooling:import": PAGE,
    "pooling:import-create": PAGE,
    "pooling:import-preview": PAGE,
    "pooling:pool-create": PAGE,
    "pooling:pool-detail": STUDY,
    "pooling:pool-download": STUDY,
    "pooling:named-sets": PAGE,
    "annotation:batch-list": PAGE,
    "annotation:batch-list-live": PAGE,
    "annotation:next": PAGE,
    "annotation:assignment": STUDY,
    "annotation:assignment-correct": STUDY,
    "annotation:prolific-correct": PUBLIC,
    "annotation:training": STUDY,
    "annotation:batch-create": PAGE,
    "annotation:batch-estimate": PAGE,
    "annotation:prolific-start": PUBLIC,
    "annotation:prolific-hit": PUBLIC,
    "annotation:prolific-training": PUBLIC,
    "annotation:prolific-webhook": PUBLIC,
    # A rehearsal's HIT page, for Prolific's test participants: opened only from a session that a signed
    # or checked arrival of the rehearsal's test study set (else 403); the button that starts it is the batch's.
    "annotation:prolific-rehearsal": PUBLIC,
    "annotation:prolific-rehearse": STUDY,
    "annotation:batch-detail": STUDY,
    "annotation:batch-live": STUDY,
    "annotation:batch-publish": STUDY,
    "annotation:batch-sync": STUDY,
    "annotation:batch-escalate": STUDY,
    "annotation:batch-cancel": STUDY,
    "annotation:batch-bonus-rule": STUDY,
    "annotation:batch-bonus-pay": STUDY,
    "annotation:batch-export": STUDY,
    "annotation:export-download": STUDY,
    "annotation:batch-publish-dataset": STUDY,
    "annotation:batch-agreement": STUDY,
    "annotation:batch-review": STUDY,
    "annotation:batch-query": STUDY,
    "annotation:hit-preview": STUDY,
    "annotation:batch-machine": STUDY,
    "annotation:batch-prelabel": STUDY,
    "annotation:batch-prelabel-cache": STUDY,
    "annotation:batch-calibration-sample": STUDY,
    "annotation:batch-calibration": STUDY,
    "annotation:batch-calibration-live": STUDY,
    "annotation:batch-calibration-echo": STUDY,
    "annotation:batch-routing": STUDY,
    "annotation:batch-audit": STUDY,
    "annotation:batch-audit-draw": STUDY,
    "annotation:batch-audit-import": STUDY,
    "annotation:batch-audit-trust": STUDY,
    "annotation:batch-audit-label": STUDY,
    "annotation:team": PAGE,
    "annotation:team-member": STUDY,
    "annotation:team-member-access": STUDY,
    "annotation:team-member-active": STUDY,
    "annotation:batch-team": STUDY,
    "annotation:batch-team-progress": STUDY,
    "annotation:team-welcome": PUBLIC,
    "metrics:report-list": PAGE,
    "metrics:report-create": PAGE,
    "metrics:label-sensitivity": PAGE,
    "metrics:crbo": PAGE,
    "metrics:counterfactual-create": PAGE,
    "metrics:crbo-detail": STUDY,
    "metrics:crbo-plot": STUDY,
    "metrics:crbo-csv": STUDY,
    "metrics:preference": PAGE,
    "metrics:preference-detail": STUDY,
    "metrics:preference-plot": STUDY,
    "metrics:plan-panel": PAGE,
    "metrics:sets": PAGE,
    "metrics:sets-detail": STUDY,
    "metrics:report-detail": STUDY,
    "metrics:report-csv": STUDY,
    "metrics:report-contributions": STUDY,
    "metrics:report-per-query": STUDY,
    "metrics:report-rebuild": STUDY,
    "metrics:report-paper": STUDY,
    "metrics:report-svg": STUDY,
    "metrics:report-plot": STUDY,
    "job-list": PAGE,
    "job-detail": STUDY,
    "import": PAGE,
    "collection-list": PAGE,
    "collection-detail": STUDY,
    "queryset-list": PAGE,
    "queryset-detail": STUDY,
    "queryset-queries": STUDY,
    "run-list": PAGE,
    "run-detail": STUDY,
    "pool-list": PAGE,
    "pool-detail": STUDY,
    "pool-entries": STUDY,
    "named-sets": PAGE,
    "compare-sets": PAGE,
    "api-root": PAGE,
    "api-batch-team": STUDY,
    "api-batch-prelabel": STUDY,
    "api-batch-prelabels": STUDY,
    "api-batch-calibration-sample": STUDY,
    "api-batch-calibration": STUDY,
    "api-batch-calibration-echo": STUDY,
    "api-batch-routing": STUDY,
    "api-batch-audit": STUDY,
    "api-batch-audit-labels": STUDY,
    "api-batch-audit-import": STUDY,
    "api-batch-audit-trusted": STUDY,
    # The cache of a chat model's answers is the site's (keyed by model and query text, shared by
    # every group: docs/deployment.md says so); the walk checks it shows no study's names.
    "api-prelabel-cache": PAGE,
    "api-prelabel-cache-model": PAGE,
    "api-batch-bonuses": STUDY,
    "api-batch-bonuses-pay": STUDY,
    "api-batch-prolific-submissions": STUDY,
    "api-batch-dataset": STUDY,
    "batch-list": PAGE,
    "batch-estimate": PAGE,
    "batch-detail": STUDY,
    "batch-adjudicate": STUDY,
    "batch-agreement": STUDY,
    "batch-cancel": STUDY,
    "batch-escalate": STUDY,
    "batch-export": STUDY,
    "batch-hits": STUDY,
    "batch-progress": STUDY,
    "batch-publish": STUDY,
    "batch-queries": STUDY,
    "batch-sync": STUDY,
    "batch-workers": STUDY,
    "hit-list": PAGE,
    "hit-detail": STUDY,
    "assignment-list": PAGE,
    "assignment-detail": STUDY,
    "judgment-list": PAGE,
    "judgment-detail": STUDY,
    "export-list": PAGE,
    "export-detail": STUDY,
    "export-download": STUDY,
    "annotator-list": PAGE,
    "annotator-detail": STUDY,
    "annotator-activate": STUDY,
    "annotator-deactivate": STUDY,
    "annotator-reset-password": STUDY,
    "metrics-api-label-sensitivity": PAGE,
    "crbo": PAGE,
    "preference": PAGE,
    "counterfactual": PAGE,
    "metrics-api-plan": PAGE,
    "report-list": PAGE,
    "report-detail": STUDY,
    "report-contributions": STUDY,
    "report-paper": STUDY,
    "report-per-query": STUDY,
    "report-table": STUDY,
    "schema": PAGE,
    "api-docs": PAGE,
    "api-redoc": PAGE,
    "api-redoc-script": PUBLIC,
    # The site's connections: the site's, not a group's (superusers only once there are several groups).
    "connections": PAGE,
    "connection-test": PAGE,
    "connection-test-status": PAGE,
    "connection-list": PAGE,
    "connection-detail": PAGE,
    "connection-test-api": PAGE,
    "?": PUBLIC,  # the API's catch-all JSON 404 and favicon.ico
}

#: The first group's objects carry these names: none may appear in an answer to the second group.
SECRET = {
    "collection": "zq-collection",
    "query_set": "zq-queries",
    "run": "zq-run-one",
    "pool": "zq-pool",
    "report": "zq-report",
    "batch": "zq-batch",
    "annotator": "zq-annotator",
}
SECRET_TEXTS = ["zq secret query about queens", "zq secret query about kings"]


def patterns() -> list[tuple[str, str]]:
    """Every URL pattern as ``(namespaced name, /path/{param}/ template)``."""
    return site_patterns()


def _first_group(tmp_path):
    """The first group's study, made before the second group exists (so in the site's only group):
    a collection, a query set, runs, a pool, a report, a published local batch answered by an
    annotator, an export, a job."""
    from metrics.services import ReportSettings, build_report
    from tests.metrics.conftest import PASSAGES, QUERIES, RUN_A, write_run

    (tmp_path / "collection.tsv").write_text("".join(f"{pid}\t{text}\n" for pid, text in PASSAGES.items()))
    call_command("import_collection", str(tmp_path / "collection.tsv"), name=SECRET["collection"], verbosity=0)
    queries = [(qid, f"zq secret query {qid}") for qid in QUERIES] + [("q1", SECRET_TEXTS[0]), ("q2", SECRET_TEXTS[1])]
    query_set = create_query_set(SECRET["query_set"], queries, origin=QuerySet.Origin.IMPORTED)
    call_command(
        "import_run",
        str(write_run(tmp_path / "run.trec", RUN_A)),
        name=SECRET["run"],
        collection=SECRET["collection"],
        verbosity=0,
    )
    runs = list(Run.objects.all())
    build_pool(SECRET["pool"], query_set, runs, PoolSettings(2, 2, "tf", "words"), bar=False)
    build_report(SECRET["report"], query_set, runs, ReportSettings(cutoffs=(1, 2), bootstrap_samples=20), bar=False)
    owner = get_user_model().objects.create_user("owner-a", password="pw-secret-123", is_staff=True)
    # Its owner's row, as the docs' set-up writes it (making another group writes no one's row).
    Membership.objects.create(user=owner, group=ResearchGroup.objects.get(), role=Membership.Role.OWNER)
    annotator = create_annotator(SECRET["annotator"], password="pw-secret-123")
    batch = services.create_batch(
        SECRET["batch"],
        services.BatchSettings(provider="local", assignments_per_query=1, queries_per_hit=4, reward=Decimal("0.05")),
        query_set=query_set,
    )
    services.publish_batch(batch)
    assignment = next_assignment(annotator, batch)
    submit_local_assignment(assignment, answers_for(assignment, truth=dict.fromkeys(dict(queries), "n")))
    export_for_download(batch, "all", "tsv")
    Job.objects.create(kind="test", description=f"{SECRET['batch']} job")
    return {"owner": owner, "batch": batch, "annotator": annotator}


def _second_group(folder):
    """A second group, with a researcher, a viewer and an annotator of its own."""
    group = group_services.create_group("Second lab")
    users = {}
    for role in ("researcher", "viewer", "owner"):
        users[role] = get_user_model().objects.create_user(f"b-{role}", password="pw-secret-123", is_staff=True)
        Membership.objects.create(user=users[role], group=group, role=role)
    with acting_in(group.pk):
        users["annotator"] = create_annotator("b-annotator", password="pw-secret-123")
    return {"group": group, **users}


#: Built once for the module, each test in a savepoint of them (tests/support/kept_state.py).
_kept_first_group, first_group = kept("first_group", _first_group)
_kept_second_group, second_group = kept("second_group", _second_group, after=("first_group",))


def _values(first_group) -> dict[tuple[str, str], str]:
    """A first-group value for each (path segment before the parameter, parameter)."""
    batch = first_group["batch"]
    hit = Hit.objects.filter(batch=batch).first()
    assignment = Assignment.objects.filter(hit__batch=batch).first()
    job = Job.objects.order_by("pk").first()
    report_job = str(job.pk)
    return {
        ("jobs", "pk"): str(job.pk),
        ("pools", "name"): SECRET["pool"],
        ("batches", "name"): SECRET["batch"],
        ("prolific", "name"): SECRET["batch"],
        ("assignments", "pk"): str(assignment.pk),
        ("hits", "pk"): str(hit.pk),
        ("exports", "pk"): str(Export.objects.filter(batch=batch).first().pk),
        ("judgments", "pk"): str(Judgment.objects.filter(assignment=assignment).first().pk),
        ("queries", "qid"): "q1",
        ("hits", "position"): "1",
        ("team", "username"): SECRET["annotator"],
        ("annotators", "username"): SECRET["annotator"],
        ("crbo", "pk"): report_job,
        ("preference", "pk"): report_job,
        ("sets", "pk"): report_job,
        ("metrics", "name"): SECRET["report"],
        ("reports", "name"): SECRET["report"],
        ("collections", "name"): SECRET["collection"],
        ("query-sets", "name"): SECRET["query_set"],
        ("runs", "name"): SECRET["run"],
        ("import", "kind"): "queries",
        ("imports", "kind"): "queries",
        ("prelabel-cache", "model"): "gpt-4o-mini",
        ("connections", "kind"): "prolific",
    }


#: Parameters whose value does not depend on the segment before them.
ANY_SEGMENT = {"format": "json", "fmt": "tsv", "part": "data", "kind": "rab", "app_label": "annotation", "url": "x"}


def _fill(template: str, values: dict, first_group) -> str:
    segments = template.strip("/").split("/")
    out = []
    for i, segment in enumerate(segments):
        while "{" in segment:
            start = segment.index("{")
            name = segment[start + 1 : segment.index("}")]
            before = segments[i - 1] if i else ""
            if (before, name) in values:
                value = values[(before, name)]
            elif name in ("object_id", "id", "content_type_id"):  # the admin: the first group's batch
                value = str(first_group["batch"].pk)
            elif name in ("uidb64", "token"):
                value = "x"
            elif name in ANY_SEGMENT:
                value = ANY_SEGMENT[name]
            else:
                raise AssertionError(f"{template}: no first-group value for the parameter {name!r} after {before!r}")
            segment = segment[:start] + value + segment[segment.index("}") + 1 :]
        out.append(segment)
    return "/" + "/".join(out) + ("/" if template.endswith("/") else "")


def test_every_url_pattern_is_classified():
    """A new URL pattern fails here until it is put in PATTERNS (and so walked as what it is)."""
    names = {name for name, _ in patterns() if not name.startswith("admin:")}
    assert names - set(PATTERNS) == set(), "URL patterns nobody classified for the research-group walk"
    assert set(PATTERNS) - names == set(), "PATTERNS names URL patterns that no longer exist"


@pytest.mark.slow
def test_a_second_groups_researcher_reaches_nothing_of_the_first_group(first_group, second_group):
    client = Client(raise_request_exception=False)
    values = _values(first_group)
    walked = refused = 0
    problems: list[str] = []
    for name, template in patterns():
        kind = ADMIN if name.startswith("admin:") else PATTERNS[name]
        path = _fill(template, values, first_group)
        statuses = {}
        for method in ("GET", "POST"):
            client.force_login(second_group["researcher"])  # a POST to /accounts/logout/ logged out
            response = client.generic(method, path)
            statuses[method] = response.status_code
            body = b"".join(response.streaming_content) if response.streaming else response.content
            text = body.decode("utf-8", "replace")
            walked += 1
            if response.status_code >= 500:
                problems.append(f"{method} {path} ({name}): {response.status_code}")
            leaked = [s for s in [*SECRET.values(), *SECRET_TEXTS] if s in text]
            if leaked and response.status_code < 400:
                problems.append(f"{method} {path} ({name}): shows {leaked}")
        if kind == STUDY:
            if not {403, 404} & set(statuses.values()) or any(s < 300 for s in statuses.values()):
                problems.append(f"{path} ({name}) names the first group's object and answered {statuses}")
            refused += 1
    assert problems == [], "\n".join(problems)
    assert refused > 80 and walked > 600  # the walk walked: ~340 patterns, two methods each


def test_a_second_group_sees_its_own_work_only(first_group, second_group):
    """Lists are scoped, not empty by accident: the second group's own batch is listed, not the first's."""
    client = Client()
    client.force_login(second_group["researcher"])
    with acting_in(second_group["group"].pk):
        own = services.create_batch(
            "b-batch",
            services.BatchSettings(provider="local", queries_per_hit=1, reward=Decimal("0.05")),
            query_set=create_query_set("b-queries-2", [("1", "who is he")], origin=QuerySet.Origin.IMPORTED),
        )
    assert own.group == second_group["group"]
    listed = client.get("/api/annotation/batches/").json()
    assert [b["name"] for b in listed["results"]] == ["b-batch"]
    page = client.get(reverse("annotation:batch-list")).content.decode()
    assert "b-batch" in page and SECRET["batch"] not in page


def test_new_objects_go_to_the_creating_users_group(first_group, second_group):
    client = Client()
    client.force_login(second_group["researcher"])
    response = client.post(
        "/api/annotation/batches/",
        {"name": "b-made", "queries": SECRET["query_set"], "provider": "local"},
        content_type="application/json",
    )
    assert response.status_code == 400 and b"queries" in response.content  # not found among theirs
    with acting_in(second_group["group"].pk):
        create_query_set("b-own", [("1", "who is she"), ("2", "who is he")], origin=QuerySet.Origin.IMPORTED)
    response = client.post(
        "/api/annotation/batches/",
        {"name": "b-made", "queries": "b-own", "provider": "local", "reward": "0.05"},
        content_type="application/json",
    )
    assert response.status_code == 201, response.content
    assert Batch.objects.get(name="b-made").group == second_group["group"]
    # Names are the site's: one the first group holds is refused with a 400 naming it, not a 500.
    response = client.post(
        "/api/annotation/batches/",
        {"name": SECRET["batch"], "queries": "b-own", "provider": "local", "reward": "0.05"},
        content_type="application/json",
    )
    assert response.status_code == 400 and b"another research group" in response.content, response.content


def test_a_viewer_reads_but_cannot_create_cancel_or_pay(first_group, second_group, django_capture_on_commit_callbacks):
    group = ResearchGroup.objects.order_by("pk").first()  # the first group
    viewer = second_group["viewer"]
    Membership.objects.create(user=viewer, group=group, role=Membership.Role.VIEWER)
    client = Client(raise_request_exception=False)
    client.force_login(viewer)
    batch = SECRET["batch"]
    assert client.get(f"/api/annotation/batches/{batch}/").status_code == 200
    assert client.get(reverse("annotation:batch-detail", args=[batch])).status_code == 200
    with django_capture_on_commit_callbacks(execute=True):
        for path in (
            f"/api/annotation/batches/{batch}/cancel/",
            f"/api/annotation/batches/{batch}/publish/",
            f"/api/annotation/batches/{batch}/bonuses/pay/",
            f"/api/annotation/annotators/{SECRET['annotator']}/deactivate/",
            reverse("annotation:batch-cancel", args=[batch]),
            reverse("annotation:batch-bonus-pay", args=[batch]),
        ):
            assert client.post(path).status_code in (403, 404), path
        response = client.post(
            "/api/annotation/batches/",
            {"name": "v-made", "queries": SECRET["query_set"], "provider": "local", "reward": "0.05"},
            content_type="application/json",
        )
    # Its query set is not among what a viewer may act on (400 naming the field); nothing is made.
    assert response.status_code in (400, 403, 404), response.content
    assert not Batch.objects.filter(name="v-made").exists()
    assert Batch.objects.get(name=batch).status == Batch.Status.PUBLISHED
    from django.contrib.auth import get_user_model

    assert get_user_model().objects.get(username=SECRET["annotator"]).is_active


def test_a_researcher_cannot_manage_members_an_owner_can(first_group, second_group):
    group = second_group["group"]
    client = Client()
    client.force_login(second_group["researcher"])
    client.post(
        reverse("research-groups"), {"group": group.slug, "action": "set", "username": "b-viewer", "role": "owner"}
    )
    assert Membership.objects.get(user=second_group["viewer"], group=group).role == Membership.Role.VIEWER
    client.force_login(second_group["owner"])
    client.post(
        reverse("research-groups"), {"group": group.slug, "action": "set", "username": "b-viewer", "role": "researcher"}
    )
    assert Membership.objects.get(user=second_group["viewer"], group=group).role == Membership.Role.RESEARCHER
    # Another group's page is not the owner's to change: its slug is not found among theirs.
    first = ResearchGroup.objects.order_by("pk").first()
    response = client.post(
        reverse("research-groups"), {"group": first.slug, "action": "set", "username": "b-owner", "role": "owner"}
    )
    assert response.status_code == 404
    assert not Membership.objects.filter(user=second_group["owner"], group=first).exists()


def test_an_annotator_is_handed_work_of_their_groups_only(first_group, second_group):
    client = Client()
    client.force_login(second_group["annotator"])
    response = client.get(reverse("annotation:next"))
    assert response.status_code in (200, 302)
    assert "/assignments/" not in response.get("Location", "")  # the first group's open HIT is not theirs
    hit = Hit.objects.filter(batch=first_group["batch"]).order_by("pk").last()
    assert client.get(reverse("annotation:training", args=[SECRET["batch"]])).status_code == 404
    assert hit is not None


def test_a_site_with_one_group_works_as_before(first_group, client):
    """Before a second group exists, a staff account without membership is owner of the only group."""
    from django.contrib.auth import get_user_model

    newcomer = get_user_model().objects.create_user("newcomer", password="pw-secret-123", is_staff=True)
    client.force_login(newcomer)
    assert client.get(f"/api/annotation/batches/{SECRET['batch']}/").status_code == 200
    assert ResearchGroup.objects.count() == 1


def test_commands_take_a_group(first_group, second_group, capsys):
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="no research group"):
        call_command("research_group", group="nope")
    call_command("research_group", group=second_group["group"].slug)
    out = capsys.readouterr().out
    assert "b-researcher" in out and "owner-a" not in out
    with pytest.raises(CommandError):  # the first group's batch, seen from the second group
        call_command("cancel_batch", SECRET["batch"], group=second_group["group"].slug, verbosity=0)
    assert Batch.objects.get(name=SECRET["batch"]).status == Batch.Status.PUBLISHED


def test_an_api_token_acts_in_its_users_groups(first_group, second_group):
    from core.services.api_tokens import api_token

    key = api_token(second_group["researcher"])
    client = Client()
    headers = {"HTTP_AUTHORIZATION": f"Token {key}"}
    assert client.get(f"/api/annotation/batches/{SECRET['batch']}/", **headers).status_code == 404
    assert client.post(f"/api/annotation/batches/{SECRET['batch']}/cancel/", **headers).status_code == 404
    assert client.get("/api/annotation/batches/", **headers).json()["results"] == []
    owner_key = api_token(first_group["owner"])
    assert (
        client.get(f"/api/annotation/batches/{SECRET['batch']}/", HTTP_AUTHORIZATION=f"Token {owner_key}").status_code
        == 200
    )


def test_updates_and_deletes_stay_in_the_groups_scope(first_group, second_group, rf):
    """UPDATE and DELETE become queries of their own classes; they are narrowed like reads."""
    from core.db.scope import answering

    request = rf.post("/")
    request.user = second_group["researcher"]
    batch = first_group["batch"]
    with answering(request):
        assert Hit.objects.filter(batch_id=batch.pk).update(status=Hit.Status.EXPIRED) == 0
        assert Export.objects.filter(batch_id=batch.pk).delete()[0] == 0
        assert Batch.objects.filter(pk=batch.pk).count() == 0
    assert not Hit.objects.filter(batch=batch, status=Hit.Status.EXPIRED).exists()
    assert Export.objects.filter(batch=batch).exists()


def test_an_exclude_across_a_relation_reads_within_the_scope(first_group, second_group):
    """``exclude()`` over a multi-valued relation makes a subquery trimmed to the related table (the
    batch form's labelled query sets): it runs, and the outer query keeps the scope."""
    with acting_in(second_group["group"].pk):
        create_query_set("b-labelled", [("1", "who is she")], origin=QuerySet.Origin.IMPORTED)
    with acting_in(second_group["group"].pk, only=True):  # a command's --group: reads within it
        names = set(QuerySet.objects.exclude(queries__text="").values_list("name", flat=True))
    assert names == {"b-labelled"}
    assert SECRET["query_set"] in set(QuerySet.objects.exclude(queries__text="").values_list("name", flat=True))


def test_an_owner_cannot_bring_another_groups_annotator_under_their_team(first_group, second_group, django_user_model):
    """Adding the first group's annotator to the second group would put them on its team pages, where
    their access can be reset: refused for the second group's owner, done by a superuser."""
    from core.errors import ServiceError

    group = second_group["group"]
    owner = second_group["owner"]
    # Making the second group wrote the first's implicit memberships down: the annotator is the first group's.
    assert Membership.objects.filter(user=first_group["annotator"]).exclude(group=group).exists()
    with pytest.raises(ServiceError, match="belongs to another research group"):
        group_services.set_member(owner, group, SECRET["annotator"], "annotator")
    client = Client()
    client.force_login(owner)
    client.post(
        "/groups/", {"group": group.slug, "action": "set", "username": SECRET["annotator"], "role": "annotator"}
    )
    assert not Membership.objects.filter(user=first_group["annotator"], group=group).exists()
    # An account of no group, or of a group the owner owns too, may be added.
    loner = django_user_model.objects.create_user("b-new", password="pw-secret-123")
    group_services.set_member(owner, group, "b-new", "annotator")
    assert Membership.objects.filter(user=loner, group=group).exists()
    boss = django_user_model.objects.create_superuser("boss", password="pw-secret-123")
    group_services.set_member(boss, group, SECRET["annotator"], "annotator")
    assert Membership.objects.filter(user=first_group["annotator"], group=group).exists()


def test_a_live_job_of_another_group_still_keeps_paid_work_to_one_start(first_group, second_group):
    """``live_job`` decides "already under way" over every group's Jobs: one started by a member of
    several groups may sit in a group the next asker does not see."""
    from core.services.once import live_job

    job = Job.objects.create(kind="annotation.sync", description="sync", arguments=[first_group["batch"].pk])
    assert job.status == Job.Status.PENDING  # queued: live
    with acting_in(second_group["group"].pk, only=True):
        assert not Job.objects.filter(pk=job.pk).exists()  # out of this scope's sight…
        assert live_job("annotation.sync", [first_group["batch"].pk]).pk == job.pk  # …and still found


def test_a_job_goes_to_the_group_of_the_study_it_works_on(first_group, second_group):
    """A member of both groups, working in the second, syncs the first group's batch: the Job (its
    description names the batch) is the first group's, as the batch is, not the worker's choice."""
    from annotation.crowd.services.background import start_sync

    batch = first_group["batch"]
    with acting_in(second_group["group"].pk):  # new objects would go to the second group
        job = start_sync(batch)
    assert job.group_id == batch.group_id != second_group["group"].pk
    with acting_in(second_group["group"].pk, only=True):
        assert not Job.objects.filter(pk=job.pk).exists()  # the second group never sees the first's batch name


def test_a_commands_group_holds_inside_the_jobs_it_runs_inline(first_group, second_group):
    """``--group`` limits what a command sees; its jobs run inline acting in the same group and see
    no more (before, the job's own scope replaced the command's and saw every group)."""
    from core.models import scope_of

    first = first_group["batch"].group_id
    second = second_group["group"].pk
    with acting_in(second, only=True), acting_in(second):  # core.tasks runs a job acting in its group
        assert scope_of() == frozenset({second})
        assert not Batch.objects.filter(pk=first_group["batch"].pk).exists()
    with acting_in(second), acting_in(second):  # a job on a worker or a page's background thread
        assert scope_of() is None  # unscoped, as before
    with acting_in(second, only=True), acting_in(first):  # another group's job is not narrowed to this one
        assert scope_of() is None


def test_crbo_compares_runs_of_one_group_only(first_group, second_group):
    """A member of two groups cannot put one group's run into a CRBO Job (which names both runs and
    holds their per-query measurements) that the other group's members read."""
    from core.errors import ServiceError
    from metrics.services.crbo import start_crbo

    run = Run.objects.get(name=SECRET["run"])
    with acting_in(second_group["group"].pk):
        theirs = Run.objects.create(
            name="b-run", collection=run.collection, path=run.path, sha256=run.sha256, queries=1, rows=1, data=run.data
        )
    assert theirs.group_id != run.group_id
    with pytest.raises(ServiceError, match="different research groups"):
        start_crbo(run, theirs)
    assert not Job.objects.filter(kind="metrics.crbo").exists()


def test_an_annotator_of_no_group_is_handed_no_hit(first_group, second_group):
    """Issue 53 (High): an in-house annotator removed from their only group saw every group's open
    HITs (``scope_of`` read "no membership, no staff" as a Prolific participant's "every group")."""
    group_services.remove_member(None, second_group["group"], "b-annotator")
    annotator = second_group["annotator"]
    assert not Membership.objects.filter(user=annotator).exists()
    assert Hit.objects.filter(batch=first_group["batch"], assignments=None).exists()  # an open HIT to take
    client = Client()
    client.force_login(annotator)
    response = client.get(reverse("annotation:next"))
    assert response.status_code in (200, 302)
    assert "/assignments/" not in response.get("Location", "")
    assert not Assignment.objects.filter(worker__identity__user=annotator).exists()
    listed = client.get("/api/annotation/hits/")
    assert listed.status_code in (200, 403) and SECRET_TEXTS[0] not in listed.content.decode()


def _shared_annotator(first_group, second_group):
    """The first group's annotator, made a member of the second group too (by a superuser)."""
    boss = type(first_group["owner"]).objects.create_superuser("boss", password="pw-secret-123")
    group_services.set_member(boss, second_group["group"], SECRET["annotator"], "annotator")
    return first_group["annotator"]


def test_an_annotator_of_two_groups_is_not_managed_through_one_groups_team_api(first_group, second_group):
    """Issue 53 (High): either group's researcher could reset the shared annotator's password (and
    log in as them, reading the other group's queries) or deactivate them."""
    shared = _shared_annotator(first_group, second_group)
    password = shared.password
    client = Client()
    for who in (second_group["researcher"], second_group["owner"], first_group["owner"]):
        client.force_login(who)
        base = f"/api/annotation/annotators/{SECRET['annotator']}"
        answer = client.post(f"{base}/reset-password/", {"access": "password"}, content_type="application/json")
        assert answer.status_code == 403, (who, answer.content)
        assert client.post(f"{base}/deactivate/").status_code == 403, who
        page = reverse("annotation:team-member-access", args=[SECRET["annotator"]])
        assert client.post(page, {"access": "password"}).status_code == 403, who
        page = reverse("annotation:team-member-active", args=[SECRET["annotator"]])
        assert client.post(page, {"active": "0"}).status_code == 403, who
    shared.refresh_from_db()
    assert shared.is_active and shared.password == password
    # The owner of both groups manages them; so does a superuser.
    Membership.objects.create(user=second_group["owner"], group=first_group["batch"].group, role="owner")
    client.force_login(second_group["owner"])
    answer = client.post(f"/api/annotation/annotators/{SECRET['annotator']}/deactivate/")
    assert answer.status_code == 200, answer.content
    shared.refresh_from_db()
    assert not shared.is_active
    client.force_login(type(shared).objects.get(username="boss"))
    assert client.post(f"/api/annotation/annotators/{SECRET['annotator']}/activate/").status_code == 200


def test_an_annotator_of_one_group_is_managed_by_its_researchers(first_group, second_group):
    client = Client()
    client.force_login(second_group["researcher"])
    answer = client.post(
        "/api/annotation/annotators/b-annotator/reset-password/",
        {"access": "password"},
        content_type="application/json",
    )
    assert answer.status_code == 200 and answer.json()["password"]


def test_creating_a_group_changes_no_other_groups_members(first_group, django_user_model):
    """Issue 53: ``research_group --create second-lab --owner bob`` (docs/deployment.md) wrote every
    staff account, bob included, as an owner of the first group; bob then read and cancelled its batch."""
    bob = django_user_model.objects.create_user("bob", password="pw-secret-123", is_staff=True)
    before = set(Membership.objects.values_list("user_id", "group_id", "role"))
    call_command("research_group", create="second-lab", owner="bob", stdout=StringIO())
    second = ResearchGroup.objects.get(slug="second-lab")
    after = set(Membership.objects.values_list("user_id", "group_id", "role"))
    assert after - before == {(bob.pk, second.pk, "owner")} and before <= after
    client = Client(raise_request_exception=False)
    client.force_login(bob)
    assert client.get(f"/api/annotation/batches/{SECRET['batch']}/").status_code == 404
    assert client.post(f"/api/annotation/batches/{SECRET['batch']}/cancel/").status_code == 404
    assert Batch.objects.get(name=SECRET["batch"]).status == Batch.Status.PUBLISHED


@pytest.mark.slow
@pytest.mark.parametrize("who", ["staff of no group", "viewer"])
def test_an_empty_scope_is_refused_never_a_500(first_group, second_group, django_user_model, who):
    """Issue 53 (Low): an empty scope (a staff account of no group on a site of several, or a viewer's
    POST, which sees no group it may change) answered 500 on some URLs. Every URL, GET and POST."""
    user = (
        django_user_model.objects.create_user("nobody", password="pw-secret-123", is_staff=True)
        if who == "staff of no group"
        else second_group["viewer"]
    )
    client = Client(raise_request_exception=False)
    values = _values(first_group)
    problems = []
    for name, template in patterns():
        path = _fill(template, values, first_group)
        for method in ("GET", "POST"):
            client.force_login(user)
            response = client.generic(method, path)
            if response.status_code >= 500:
                problems.append(f"{method} {path} ({name}): {response.status_code}")
    assert problems == [], "\n".join(problems)
