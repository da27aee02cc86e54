"""The team's REST endpoints: every action for researchers, JSON 4xx for everyone else and bad input."""

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from platforms.inhouse.services.handout import next_assignment
from platforms.inhouse.services.hit_page import submit_local_assignment
from tests.annotation.conftest import answers_for, make_batch

API = "/api/annotation"


def _logs_in(username: str, password: str) -> bool:
    return Client().post("/accounts/login/", {"username": username, "password": password}).status_code == 302


@pytest.fixture
def staff(researcher, client):
    client.force_login(researcher)
    return client


def test_list_and_show_annotators(staff, annotators, local_batch):
    local_batch.team.set([annotators[0]])
    rows = staff.get(f"{API}/annotators/").json()["results"]
    assert [r["username"] for r in rows] == ["ann-a", "ann-b", "ann-c"]  # never the researcher
    one = staff.get(f"{API}/annotators/ann-a/").json()
    assert one["batches"] == ["b1"] and one["is_active"] and one["has_password"]
    assert staff.get(f"{API}/annotators/researcher/").status_code == 404


def test_create_with_a_link_usable_once(staff):
    response = staff.post(f"{API}/annotators/", {"username": "via.api", "email": "v@example.org"}, "application/json")
    assert response.status_code == 201 and "no-store" in response["Cache-Control"]
    body = response.json()
    assert body["password"] is None and body["link_expires"]
    assert body["annotator"] | {"date_joined": None} == {
        "username": "via.api",
        "email": "v@example.org",
        "is_active": True,
        "has_password": False,
        "date_joined": None,
        "last_login": None,
        "batches": [],
    }
    path = body["link"].removeprefix("http://testserver")
    annotator = Client()
    form_url = annotator.get(path)["Location"]
    annotator.post(form_url, {"new_password1": "chosen-secret-99", "new_password2": "chosen-secret-99"})
    assert _logs_in("via.api", "chosen-secret-99")
    assert Client().get(path, follow=True).status_code == 410
    assert staff.get(f"{API}/annotators/via.api/").json()["has_password"] is True


def test_create_with_a_generated_password(staff):
    response = staff.post(f"{API}/annotators/", {"username": "gen", "access": "password"}, "application/json")
    assert response.status_code == 201 and "no-store" in response["Cache-Control"]
    body = response.json()
    assert body["link"] is None and _logs_in("gen", body["password"])


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"access": "link"}, "username"),
        ({"username": "x", "access": "carrier-pigeon"}, "access"),
        ({"username": "x", "email": "not-an-address"}, "email"),
        ({"username": "bad name!"}, "detail"),
        ({"username": "ann-a"}, "detail"),  # taken
        ({"username": "researcher"}, "detail"),  # a staff account
    ],
)
def test_create_refuses_bad_input_with_json_400(staff, annotators, body, field):
    response = staff.post(f"{API}/annotators/", body, "application/json")
    assert response.status_code == 400 and field in response.json()


@pytest.fixture
def added_meanwhile():
    """Another request adds the same username between the add's check and its insert (the moment
    two adds at once meet): a ``pre_save`` receiver inserts it first, once, on the same database."""
    from django.db.models.signals import pre_save

    user_model = get_user_model()
    armed = {}

    def insert_first(sender, instance, **kwargs):
        if instance.pk is None and instance.username == armed.get("username"):
            del armed["username"]
            user_model.objects.create_user(instance.username)

    pre_save.connect(insert_first, sender=user_model, dispatch_uid="test.added_meanwhile")
    yield armed
    pre_save.disconnect(sender=user_model, dispatch_uid="test.added_meanwhile")


@pytest.mark.parametrize("access", ["link", "password"])
def test_an_add_meeting_the_same_add_is_a_400_not_a_500(staff, added_meanwhile, access):
    """Issue 27.16: on PostgreSQL two adds of one username at once answered 500 (unique violation)."""
    added_meanwhile["username"] = "racer"
    response = staff.post(f"{API}/annotators/", {"username": "racer", "access": access}, "application/json")
    assert response.status_code == 400
    assert response.json()["detail"] == "user 'racer' already exists (added a moment ago)"


def test_the_team_page_meeting_the_same_add_says_so(researcher, added_meanwhile):
    page = Client(raise_request_exception=False)
    page.force_login(researcher)
    added_meanwhile["username"] = "racer"
    response = page.post("/annotation/team/", {"username": "racer", "access": "link"})
    assert response.status_code == 400 and "already exists (added a moment ago)" in response.content.decode()


@pytest.mark.django_db(transaction=True)
@pytest.mark.postgresql
def test_four_adds_of_one_username_at_once_give_one_201_and_400s(researcher):
    """The race itself, where the database runs the four adds at the same time."""
    import threading

    from django.db import connection

    clients = []
    for _ in range(4):
        client = Client(raise_request_exception=False)
        client.force_login(researcher)
        clients.append(client)
    start, codes = threading.Barrier(4), []

    def add(client):
        try:
            start.wait(10)
            codes.append(client.post(f"{API}/annotators/", {"username": "same"}, "application/json").status_code)
        finally:
            connection.close()

    threads = [threading.Thread(target=add, args=(client,)) for client in clients]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert sorted(codes) == [201, 400, 400, 400]
    assert get_user_model().objects.filter(username="same").count() == 1


def test_a_json_list_body_is_refused_with_400(staff):
    response = staff.post(f"{API}/annotators/", ["x"], "application/json")
    assert response.status_code == 400 and "detail" in response.json()


def test_reset_password_by_password_and_by_link(staff, annotators):
    response = staff.post(f"{API}/annotators/ann-a/reset-password/", {"access": "password"}, "application/json")
    assert response.status_code == 200 and "no-store" in response["Cache-Control"]
    new = response.json()["password"]
    assert _logs_in("ann-a", new) and not _logs_in("ann-a", "pw-secret-123")

    response = staff.post(f"{API}/annotators/ann-a/reset-password/", {}, "application/json")
    assert response.status_code == 200 and response.json()["link"] and response.json()["password"] is None
    assert not _logs_in("ann-a", new)
    assert staff.post(f"{API}/annotators/nobody/reset-password/", {}, "application/json").status_code == 404


def test_deactivate_and_activate(staff, annotators, local_batch):
    held = next_assignment(annotators[1])
    response = staff.post(f"{API}/annotators/ann-b/deactivate/")
    assert response.status_code == 200 and response.json()["is_active"] is False
    held.refresh_from_db()
    assert held.status == "abandoned"
    assert not _logs_in("ann-b", "pw-secret-123")
    assert staff.post(f"{API}/annotators/ann-b/deactivate/").status_code == 200  # harmless again
    response = staff.post(f"{API}/annotators/ann-b/activate/")
    assert response.status_code == 200 and response.json()["is_active"] is True
    assert _logs_in("ann-b", "pw-secret-123")


def test_a_batch_team_is_set_and_read_with_progress(staff, annotators, local_batch):
    assignment = next_assignment(annotators[0])
    submit_local_assignment(assignment, answers_for(assignment))

    body = staff.get(f"{API}/batches/b1/team/").json()
    assert body["restricted"] is False and body["annotators"] == []
    assert [(r["username"], r["answered"], r["hits"]) for r in body["progress"]] == [("ann-a", 1, 2)]

    response = staff.put(f"{API}/batches/b1/team/", {"annotators": ["ann-c", "ann-a"]}, "application/json")
    assert response.status_code == 200
    body = response.json()
    assert body["restricted"] is True and body["annotators"] == ["ann-a", "ann-c"]
    assert [(r["username"], r["answered"], r["in_progress"]) for r in body["progress"]] == [
        ("ann-a", 1, 0),
        ("ann-c", 0, 0),
    ]
    assert next_assignment(annotators[1]) is None  # ann-b is not on the team

    response = staff.put(f"{API}/batches/b1/team/", {"annotators": []}, "application/json")
    assert response.json()["restricted"] is False
    assert next_assignment(annotators[1]) is not None


def test_a_batch_team_refuses_bad_input_with_json(staff, annotators, local_batch, query_set, toy_platform):
    make_batch(query_set, name="crowd", provider="toy")  # some other platform
    cases = [
        ("b1", {"annotators": ["ann-a", "ghost"]}, 400),
        ("b1", {"annotators": "ann-a"}, 400),
        ("b1", {}, 400),
        ("crowd", {"annotators": []}, 404),  # not an in-house batch
        ("missing", {"annotators": []}, 404),
    ]
    for name, body, code in cases:
        response = staff.put(f"{API}/batches/{name}/team/", body, "application/json")
        assert response.status_code == code and response.json(), (name, body)
    assert staff.delete(f"{API}/batches/b1/team/").status_code == 405
    assert not local_batch.team.exists()


def test_annotators_and_visitors_get_403_json_on_every_team_endpoint(annotators, local_batch, client):
    calls = [
        ("get", f"{API}/annotators/"),
        ("post", f"{API}/annotators/"),
        ("get", f"{API}/annotators/ann-b/"),
        ("post", f"{API}/annotators/ann-b/reset-password/"),
        ("post", f"{API}/annotators/ann-b/deactivate/"),
        ("post", f"{API}/annotators/ann-b/activate/"),
        ("get", f"{API}/batches/b1/team/"),
        ("put", f"{API}/batches/b1/team/"),
    ]
    client.force_login(annotators[0])
    for anonymous in (Client(), client):
        for method, url in calls:
            response = getattr(anonymous, method)(url, {"username": "x", "annotators": []}, "application/json")
            assert response.status_code == 403 and "detail" in response.json(), (method, url)
    assert get_user_model().objects.filter(is_active=True).count() == 3
    assert not get_user_model().objects.filter(username="x").exists()


def test_the_schema_documents_the_team_endpoints(staff):
    paths = staff.get("/api/schema/?format=json").json()["paths"]
    assert {
        "/api/annotation/annotators/",
        "/api/annotation/annotators/{username}/reset-password/",
        "/api/annotation/annotators/{username}/deactivate/",
        "/api/annotation/batches/{name}/team/",
    } <= set(paths)
