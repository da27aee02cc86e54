"""In-house annotators through the site: handing out HITs, answering, privacy, concurrency rules."""

import datetime as dt
import re

import pytest
from django.urls import reverse
from django.utils import timezone

from annotation import services
from annotation.crowd.services.batches import cancel_batch
from annotation.crowd.services.sync import sync_batch
from annotation.models import Assignment, Judgment
from annotation.quality.services.escalation import escalate_batch
from core.errors import ServiceError
from platforms.inhouse.services import handout
from platforms.inhouse.services.annotators import create_annotator, local_worker
from platforms.inhouse.services.handout import next_assignment
from platforms.inhouse.services.hit_page import submit_local_assignment
from tests.annotation.conftest import TRUTH, answers_for


def _follow_next(client):
    """GET /annotation/next/ and return the assignment it redirects to (None for the done page)."""
    response = client.get(reverse("annotation:next"))
    if response.status_code == 200:
        assert b"No more HITs" in response.content
        return None
    assert response.status_code == 302
    pk = int(response.url.rstrip("/").rsplit("/", 1)[1])
    return Assignment.objects.get(pk=pk)


def _answer(client, assignment, **override):
    data = answers_for(assignment, override=override)
    return client.post(reverse("annotation:assignment", args=[assignment.pk]), data)


def test_two_annotators_share_a_batch_without_seeing_a_hit_twice(local_batch, annotators, client):
    seen: dict[str, list[int]] = {}
    for user in annotators[:2]:
        client.force_login(user)
        while (assignment := _follow_next(client)) is not None:
            page = client.get(reverse("annotation:assignment", args=[assignment.pk]))
            assert page.status_code == 200
            for hq in assignment.hit.hit_queries.select_related("batch_query"):
                assert hq.batch_query.text.encode() in page.content
            response = _answer(client, assignment)
            assert response.status_code == 302 and response.url == reverse("annotation:next")
            seen.setdefault(user.username, []).append(assignment.hit_id)
    # Each annotator did each of the 2 HITs exactly once; each HIT got its 2 assignments.
    assert {name: sorted(hits) for name, hits in seen.items()} == {
        "ann-a": sorted(local_batch.hits.values_list("pk", flat=True)),
        "ann-b": sorted(local_batch.hits.values_list("pk", flat=True)),
    }
    # The third annotator finds nothing left: every HIT has its assignments.
    client.force_login(annotators[2])
    assert _follow_next(client) is None
    assert Judgment.objects.filter(assignment__hit__batch=local_batch).count() == 2 * 6
    assert set(Judgment.objects.values_list("batch_query__qid", "label")) == set(TRUTH.items())


def test_next_returns_the_unfinished_hit_first(local_batch, annotators, client):
    client.force_login(annotators[0])
    first = _follow_next(client)
    assert _follow_next(client) == first  # asking again does not hand out a second HIT
    assert Assignment.objects.filter(worker__identity__user=annotators[0]).count() == 1


def test_an_annotator_never_sees_another_annotators_assignment(local_batch, annotators, client):
    client.force_login(annotators[0])
    theirs = _follow_next(client)
    _answer(client, theirs)
    client.force_login(annotators[1])
    assert client.get(reverse("annotation:assignment", args=[theirs.pk])).status_code == 404
    assert client.post(reverse("annotation:assignment", args=[theirs.pk]), answers_for(theirs)).status_code == 404
    # Their own HIT page shows no one else's answers: nothing is pre-selected.
    mine = _follow_next(client)
    page = client.get(reverse("annotation:assignment", args=[mine.pk])).content.decode()
    assert " checked" not in page
    # The API shows annotators their own assignments only.
    data = client.get("/api/annotation/assignments/").json()
    assert [row["id"] for row in data["results"]] == [mine.pk]
    assert client.get(f"/api/annotation/assignments/{theirs.pk}/").status_code == 404
    assert client.get("/api/annotation/judgments/").json()["count"] == 0


def test_missing_answers_are_refused_and_the_page_shown_again(local_batch, annotators, client):
    client.force_login(annotators[0])
    assignment = _follow_next(client)
    data = answers_for(assignment)
    data.pop("q-2")
    data["q-3"] = "x"
    response = client.post(reverse("annotation:assignment", args=[assignment.pk]), data)
    assert response.status_code == 400
    content = response.content.decode()
    assert 'role="alert"' in content
    assert "Please choose a category for this query." in content
    assert "Please choose one of the four categories." in content
    # The valid answer is kept on the page shown again; the wrong ones are not.
    assert re.search(rf'name="q-1" value="{data["q-1"]}"[^>]*checked', content)
    assert not re.search(r'name="q-[23]"[^>]*checked', content)
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.ASSIGNED
    assert not Judgment.objects.exists()


def test_a_hit_cannot_be_submitted_twice(local_batch, annotators, client):
    client.force_login(annotators[0])
    assignment = _follow_next(client)
    _answer(client, assignment)
    response = client.post(reverse("annotation:assignment", args=[assignment.pk]), answers_for(assignment))
    assert response.status_code == 302
    assert Judgment.objects.filter(assignment=assignment).count() == 3
    with pytest.raises(ServiceError, match="already submitted"):
        submit_local_assignment(assignment, answers_for(assignment))


def test_a_submit_of_an_assignment_read_before_another_submit_records_nothing(local_batch, annotators):
    """The HIT page reads the assignment, then submits it (``current=True``): if another tab
    submitted it in between, the conditional write finds it changed and nothing is stored."""
    assignment = next_assignment(annotators[0])
    read_by_the_page = Assignment.objects.select_related("hit__batch").get(pk=assignment.pk)
    submit_local_assignment(assignment, answers_for(assignment))  # the other tab
    first = Assignment.objects.get(pk=assignment.pk)
    other_answers = {field: "o" for field in answers_for(assignment)}
    with pytest.raises(ServiceError, match="already submitted"):
        submit_local_assignment(read_by_the_page, other_answers, current=True)
    assert Judgment.objects.filter(assignment=assignment).count() == len(other_answers)
    assert Assignment.objects.get(pk=assignment.pk).raw_answer == first.raw_answer


def test_a_submit_after_the_batch_closed_is_refused_as_such(local_batch, annotators):
    assignment = next_assignment(annotators[0])
    cancel_batch(local_batch)
    read_by_the_page = Assignment.objects.select_related("hit__batch").get(pk=assignment.pk)
    with pytest.raises(ServiceError, match="no longer open"):
        submit_local_assignment(read_by_the_page, answers_for(assignment), current=True)
    assert not Judgment.objects.filter(assignment=assignment).exists()


def test_only_annotators_get_hits(local_batch, researcher, client, django_user_model):
    client.force_login(django_user_model.objects.create_user("visitor", password="pw-secret-123"))
    assert client.get(reverse("annotation:next")).status_code == 403
    assert b"not an annotator account" in client.get(reverse("annotation:batch-list")).content
    client.logout()
    assert client.get(reverse("annotation:next")).status_code == 302  # to the login page


def test_abandoned_hits_are_handed_to_someone_else(local_batch, annotators):
    a, b, c = annotators
    first = next_assignment(a)
    next_assignment(b)  # HIT 1 is now full (2 places)
    c_current = next_assignment(c)
    assert c_current.hit != first.hit
    Assignment.objects.filter(pk=first.pk).update(accepted_at=timezone.now() - dt.timedelta(hours=1))
    # The stale hand-out is marked abandoned and its place goes back to the queue, but never
    # to the annotator who held it: a HIT is not shown to the same person twice.
    again = next_assignment(a)
    assert again.hit == c_current.hit  # HIT 1 is closed to a; HIT 2 still has a place
    first.refresh_from_db()
    assert first.status == Assignment.Status.ABANDONED
    submit_local_assignment(c_current, answers_for(c_current))
    taker = next_assignment(c)
    assert taker.hit == first.hit


def test_late_answers_count_while_a_place_is_free(local_batch, annotators):
    a, b, _ = annotators
    first = next_assignment(a)
    Assignment.objects.filter(pk=first.pk).update(accepted_at=timezone.now() - dt.timedelta(hours=1))
    next_assignment(b)  # releases a's place; b takes the other place of HIT 1 or another HIT
    submit_local_assignment(first, answers_for(first))
    first.refresh_from_db()
    assert first.status == Assignment.Status.SUBMITTED


def test_late_answers_are_refused_once_the_places_are_taken(local_batch, annotators):
    a, b, c = annotators
    first = next_assignment(a)
    Assignment.objects.filter(pk=first.pk).update(accepted_at=timezone.now() - dt.timedelta(hours=1))
    next_assignment(b)
    next_assignment(c)  # the freed place and the second place of HIT 1 are now held
    assert Assignment.objects.filter(hit=first.hit).exclude(pk=first.pk).count() == 2
    with pytest.raises(ServiceError, match="your answers were not recorded"):
        submit_local_assignment(first, answers_for(first))


def test_blocked_annotators_get_nothing(local_batch, annotators):
    worker = local_worker(annotators[0])
    worker.blocked = True
    worker.save()
    assert next_assignment(annotators[0]) is None


def test_local_sync_reviews_submitted_work(local_batch, annotators):
    for user in annotators[:2]:
        while (assignment := next_assignment(user)) is not None:
            submit_local_assignment(assignment, answers_for(assignment))
    result = sync_batch(local_batch)
    assert (result.approved, result.rejected, result.kept) == (4, 0, 0)
    assert result.completed
    local_batch.refresh_from_db()
    assert local_batch.status == "completed"
    assert next_assignment(annotators[2]) is None


@pytest.mark.django_db(transaction=True)
@pytest.mark.postgresql
def test_concurrent_requests_never_overfill_a_hit(query_set):
    """Six annotators ask at the same moment for the one HIT with two places."""
    from concurrent.futures import ThreadPoolExecutor

    from django.db import connection

    from tests.annotation.conftest import make_batch

    batch = make_batch(query_set, queries_per_hit=6, assignments_per_query=2)
    services.publish_batch(batch)
    users = [create_annotator(f"racer-{i}") for i in range(6)]

    def claim(user):
        try:
            return next_assignment(user)
        finally:
            connection.close()

    with ThreadPoolExecutor(max_workers=6) as pool:
        claimed = [a for a in pool.map(claim, users) if a is not None]
    assert len(claimed) == 2
    assert Assignment.objects.filter(hit__batch=batch).count() == 2


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("ask", ["next_assignment", "next_hit_for"])
@pytest.mark.postgresql
def test_one_annotator_in_many_tabs_holds_one_assignment(query_set, ask):
    """Four tabs of one annotator ask at once, with two HITs free: all get the same assignment.

    Through the service and through the next-HIT page's (``next_hit_for``), whose read of the
    worker takes the row lock itself."""
    from concurrent.futures import ThreadPoolExecutor

    from django.db import connection

    from tests.annotation.conftest import make_batch

    batch = make_batch(query_set, queries_per_hit=2, assignments_per_query=2)
    services.publish_batch(batch)
    assert batch.hits.count() >= 2
    user = create_annotator("many-tabs")

    def claim(_):
        try:
            if ask == "next_hit_for":
                return handout.next_hit_for(user).assignment.pk
            return next_assignment(user).pk
        finally:
            connection.close()

    with ThreadPoolExecutor(max_workers=4) as pool:
        claimed = set(pool.map(claim, range(4)))
    assert len(claimed) == 1
    assert Assignment.objects.filter(hit__batch=batch, worker__identity__user=user).count() == 1


@pytest.mark.django_db(transaction=True)
@pytest.mark.postgresql
def test_two_submits_of_one_assignment_at_once_store_its_judgments_once(query_set):
    """Four tabs post the same HIT at the same moment: one is recorded, the others refused."""
    import threading

    from django.db import connection

    from tests.annotation.conftest import make_batch

    batch = make_batch(query_set, queries_per_hit=3, assignments_per_query=2)
    services.publish_batch(batch)
    assignment = next_assignment(create_annotator("double-submit"))
    start, outcomes = threading.Barrier(4), []

    def submit(label):
        try:
            page = Assignment.objects.select_related("hit__batch").get(pk=assignment.pk)  # as the HIT page reads it
            hit_queries = list(page.hit.hit_queries.select_related("batch_query").order_by("position"))
            start.wait(10)
            answers = {hq.field_name: label for hq in hit_queries}
            submit_local_assignment(page, answers, hit_queries=hit_queries, current=True)
            outcomes.append("recorded")
        except Exception as exc:  # any other error fails the comparison below, with its text
            outcomes.append(str(exc))
        finally:
            connection.close()

    threads = [threading.Thread(target=submit, args=(label,)) for label in "nfmo"]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert sorted(outcomes) == ["recorded"] + ["this HIT was already submitted"] * 3
    judgments = Judgment.objects.filter(assignment=assignment)
    assert judgments.count() == 3 and len({j.label for j in judgments}) == 1


@pytest.mark.django_db(transaction=True)
@pytest.mark.postgresql
def test_a_claim_in_progress_does_not_hide_the_other_open_hits(query_set):
    """While one annotator's claim is still open (not committed), another annotator asking
    at that moment is given one of the other open HITs, never "No more HITs".

    Regression: a claim locked its first 20 candidate HITs at once, so a concurrent claim
    that skips locked rows found none and showed "No more HITs" with HITs left (seen when a
    database restart slowed the first claim's commit)."""
    import threading

    from django.db import connection, transaction

    from annotation.models import Batch
    from platforms.inhouse.services.handout import claim_hit
    from tests.annotation.conftest import make_batch

    batch = make_batch(query_set, queries_per_hit=2, assignments_per_query=1)
    services.publish_batch(batch)
    assert batch.hits.count() >= 2
    first, second = (create_annotator(name) for name in ("first", "second"))
    holding, release = threading.Event(), threading.Event()
    claimed = {}

    def slow_claim():
        try:
            with transaction.atomic():  # claims, then holds its transaction open
                claimed["first"] = claim_hit(local_worker(first), Batch.objects.all(), "slow")
                holding.set()
                release.wait(30)
        finally:
            connection.close()

    thread = threading.Thread(target=slow_claim)
    thread.start()
    try:
        assert holding.wait(30)
        claimed["second"] = next_assignment(second)
    finally:
        release.set()
        thread.join(30)
    assert claimed["first"] is not None and claimed["second"] is not None
    assert claimed["first"].hit_id != claimed["second"].hit_id


@pytest.mark.django_db
def test_one_publish_sync_or_escalation_per_batch_at_a_time(local_batch, annotators):
    """While one process syncs a batch, a second sync, publish or escalation is refused, not run twice."""
    from annotation.crowd.services.locking import batch_key
    from core.services.leases import LeaseHeld, acquire, release

    other_process = acquire(batch_key(local_batch), "A sync of batch 'b1'")  # as another process would
    for action in (sync_batch, services.publish_batch, escalate_batch):
        with pytest.raises(LeaseHeld, match="A sync of batch 'b1' is already under way"):
            action(local_batch)
    release(batch_key(local_batch), other_process)
    assignment = next_assignment(annotators[0])
    submit_local_assignment(assignment, answers_for(assignment))
    assert sync_batch(local_batch).approved == 1  # free again once the first has finished


def test_a_hit_cycle_reads_nothing_twice(local_batch, annotators, client, monkeypatch, django_assert_max_num_queries):
    """Statements per request of next, the HIT page and submit (sessions and the user included).

    A ceiling, so the path does not silently grow back: the worker read once and locked in
    the same statement, the hand-out query skipped when none is held, the HIT page's three
    counts in one query, the submit's check and write in one UPDATE. Inside the
    test's transaction each request's transaction is a SAVEPOINT and its RELEASE (two
    statements where a deployment counts one ``BEGIN IMMEDIATE`` on SQLite and none on
    PostgreSQL); PostgreSQL's hand-out also counts the HIT's places again under its row lock.
    The session's user is read with its research-group roles (``core.models.scope_of`` asks no
    more: issue 46), and with the session itself once the process has seen it; the submit's
    conditional UPDATE is prepared once, not compiled per request."""
    import time

    from django.db import connection

    from platforms.inhouse.services import handout as local

    monkeypatch.setattr(local, "_released_at", time.monotonic())  # the once-a-minute release is not due
    client.force_login(annotators[0])
    for cycle in range(2):
        # The session read alone at its first request in this process, then with its user (core.web.sessions).
        first = 1 if cycle == 0 else 0
        with django_assert_max_num_queries((8 if connection.vendor == "postgresql" else 7) + first):
            response = client.get(reverse("annotation:next"))
        assert response.status_code == 302
        with django_assert_max_num_queries(4):
            page = client.get(response.url)
        assert page.status_code == 200
        assignment = Assignment.objects.get(pk=int(response.url.rstrip("/").rsplit("/", 1)[1]))
        answers = answers_for(assignment)
        with django_assert_max_num_queries(8):
            submitted = client.post(response.url, answers)
        assert submitted.status_code == 302
        assert Judgment.objects.filter(assignment=assignment).count() == assignment.hit.hit_queries.count()


def test_a_hit_cycle_compiles_its_reads_once(local_batch, annotators, client, monkeypatch):
    """After the first HIT cycle the next-HIT page and the HIT page compile no SELECT through the ORM
    (their reads are prepared once per process: ``core.db.prepared``), nor the submit (its
    conditional UPDATE is prepared too), but for its HIT's status when the HIT fills; the statements and their answers stay the ORM's (the other
    tests of this file). Counted as calls of Django's ``SQLCompiler.as_sql``, outermost only."""
    import time

    from django.db.models.sql.compiler import SQLCompiler

    from platforms.inhouse.services import handout as local

    monkeypatch.setattr(local, "_released_at", time.monotonic())  # the once-a-minute release is not due
    compiled: list[str] = []
    original = SQLCompiler.as_sql

    depth = [0]

    def counted(self, *args, **kwargs):
        if not depth[0]:  # a statement, not its subqueries
            compiled.append(type(self).__name__)
        depth[0] += 1
        try:
            return original(self, *args, **kwargs)
        finally:
            depth[0] -= 1

    client.force_login(annotators[0])
    for cycle in range(2):
        monkeypatch.setattr(SQLCompiler, "as_sql", counted)
        compiled.clear()
        response = client.get(reverse("annotation:next"))
        after_next = len(compiled)
        page = client.get(response.url)
        after_page = len(compiled)
        assignment = Assignment.objects.get(pk=int(response.url.rstrip("/").rsplit("/", 1)[1]))
        monkeypatch.setattr(SQLCompiler, "as_sql", original)  # the test's own reads are not counted
        answers = answers_for(assignment)
        monkeypatch.setattr(SQLCompiler, "as_sql", counted)
        before_submit = len(compiled)
        submitted = client.post(response.url, answers)
        monkeypatch.setattr(SQLCompiler, "as_sql", original)
        assert (response.status_code, page.status_code, submitted.status_code) == (302, 200, 302)
        if cycle:
            # Where a row lock is real (PostgreSQL), handing out counts the HIT's places again under it.
            assert after_next == (0 if local.writes_serialised() else 1), compiled
            assert after_page - after_next == 0, compiled
            assert len(compiled) - before_submit <= 1, compiled[before_submit:]
    assert Judgment.objects.filter(assignment__worker__identity__user=annotators[0]).count() == 6
