"""The Connections page and API (issue 45, item 1): who may use them, JSON 4xx on bad input,
secrets never returned, a test started as a job whose outcome the page shows by itself."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group
from django.test import Client

from core.models import Connection, Job
from core.sealing import new_key
from core.selectors import chat_settings
from core.web.permissions import can_manage_connections
from platforms.prolific.connection.selectors import prolific_settings
from tests.annotation.machine import openai_server as openai_chat

PAGE = "/connections/"
API = "/api/connections/"
SECRET = "sk-page-secret-000000-abcd"


@pytest.fixture
def key(settings):
    settings.CONNECTIONS_KEY = new_key()
    settings.JOB_LOCAL_RUNNER = "inline"


@pytest.fixture
def researcher(django_user_model):
    return django_user_model.objects.create_user("owner", password="pw-secret-123", is_staff=True)


@pytest.fixture
def annotator(django_user_model):
    user = django_user_model.objects.create_user("annotator", password="pw-secret-123")
    group, _ = Group.objects.get_or_create(name="annotators")
    user.groups.add(group)
    return user


@pytest.fixture
def owner(client, researcher):
    client.force_login(researcher)
    return client


# --- who may -----------------------------------------------------------------------------------


@pytest.mark.django_db
def test_only_researchers_manage_connections(researcher, annotator, django_user_model):
    assert can_manage_connections(researcher)
    assert not can_manage_connections(annotator)
    inactive = django_user_model.objects.create_user("gone", is_staff=True, is_active=False)
    assert not can_manage_connections(inactive)


@pytest.mark.django_db
def test_anonymous_visitors_and_annotators_are_refused_everywhere(annotator, key):
    anonymous = Client()
    assert anonymous.get(PAGE).status_code == 302 and "/accounts/login/" in anonymous.get(PAGE)["Location"]
    for method, path in (
        ("get", API),
        ("get", API + "prolific/"),
        ("put", API + "prolific/"),
        ("post", API + "chat/test/"),
    ):
        response = getattr(anonymous, method)(path, {}, content_type="application/json")
        assert response.status_code in (401, 403) and "detail" in response.json()
    worker = Client()
    worker.force_login(annotator)
    assert worker.get(PAGE).status_code == 403
    assert worker.post(PAGE, {"kind": "chat", "chat-model": "x"}).status_code == 403
    assert worker.post("/connections/chat/test/").status_code == 403
    assert worker.get("/connections/chat/test/status/").status_code == 403
    response = worker.put(API + "chat/", {"values": {"model": "x"}}, content_type="application/json")
    assert response.status_code == 403 and response.json()["detail"]
    assert worker.post(API + "chat/test/").status_code == 403
    assert not Connection.objects.exists() and not Job.objects.exists()


# --- the API -------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_api_stores_a_connection_and_never_returns_its_secret(owner, key):
    response = owner.put(
        API + "chat/",
        {"values": {"api_url": "http://127.0.0.1:7/v1/", "model": "m1", "api_key": SECRET}},
        content_type="application/json",
    )
    assert response.status_code == 200, response.content
    assert SECRET not in response.content.decode()
    fields = {f["name"]: f for f in response.json()["fields"]}
    assert fields["api_key"]["shown"] == "…abcd" and fields["api_key"]["source"] == "site"
    assert fields["model"]["shown"] == "m1"
    for path in (API, API + "chat/"):
        body = owner.get(path).content.decode()
        assert SECRET not in body and SECRET[:-4] not in body and "…abcd" in body
    assert chat_settings().api_key == SECRET
    assert owner.patch(API + "chat/", {"clear": ["api_key"]}, content_type="application/json").status_code == 200
    assert chat_settings().api_key == ""
    assert owner.delete(API + "chat/").status_code == 204 and not Connection.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("body", "named"),
    [
        ([1, 2], "detail"),
        ("text", "detail"),
        ({"values": {"nope": "x"}}, "nope"),
        ({"values": {"api_url": "file:///etc/passwd"}}, "api_url"),
        ({"values": ["model"]}, "values"),
        ({"values": {"model": {"a": 1}}}, "values"),
        ({"clear": ["model"]}, "model"),
        ({"clear": "api_key"}, "clear"),
        ({"values": {"answer_format": "yaml"}}, "answer_format: one of text, json_schema, json_object"),
        ({"values": {"token_limit": "max_length"}}, "token_limit: one of max_tokens, max_completion_tokens"),
    ],
)
def test_bad_input_is_a_json_400_naming_the_field_and_changes_nothing(owner, key, body, named):
    response = owner.put(API + "chat/", body, content_type="application/json")
    assert response.status_code == 400, response.content
    assert named in response.content.decode()
    assert not Connection.objects.filter(kind="chat").exclude(values={}).exists()


@pytest.mark.django_db
def test_an_unknown_connection_is_a_json_404(owner, key):
    for method in ("get", "put", "delete"):
        response = getattr(owner, method)(API + "nosuch/", {}, content_type="application/json")
        assert response.status_code == 404 and "known: chat, huggingface, zenodo, prolific" in response.json()["detail"]
    assert owner.post(API + "nosuch/test/").status_code == 404


@pytest.mark.django_db
def test_without_a_key_the_api_stores_a_secret_under_a_key_it_makes(owner, settings, tmp_path):
    settings.CONNECTIONS_KEY, settings.VAR_DIR = "", tmp_path
    response = owner.put(API + "prolific/", {"values": {"token": "t" * 20}}, content_type="application/json")
    assert response.status_code == 200, response.content
    assert (tmp_path / "connections.key").is_file() and prolific_settings().token == "t" * 20


@pytest.mark.django_db
def test_the_api_test_is_a_job_against_the_fake_server(owner, key, django_capture_on_commit_callbacks):
    fake = openai_chat.FakeOpenAI()
    url, server = openai_chat.serve(fake)
    try:
        owner.put(
            API + "chat/",
            {"values": {"api_url": url, "model": fake.model, "api_key": openai_chat.KEY}},
            content_type="application/json",
        )
        with django_capture_on_commit_callbacks(execute=True):
            response = owner.post(API + "chat/test/")
        assert response.status_code == 202 and response["Location"] == f"/api/jobs/{response.json()['id']}/"
        job = Job.objects.get(pk=response.json()["id"])
        assert job.status == Job.Status.DONE and job.kind == "core.test_connection"
        assert owner.get(API + "chat/").json()["last_test"]["status"] == "done"
    finally:
        server.shutdown()


# --- the page ------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_page_says_which_source_is_in_force(owner, key, settings):
    settings.PROLIFIC_API_TOKEN = "env-token-000000000000"
    page = owner.get(PAGE).content.decode()
    assert "environment variable <code>PROLIFIC_API_TOKEN</code>" in page
    assert "env-token-000000000000" not in page and "…0000" in page
    assert 'id="no-key"' not in page
    assert 'href="/connections/"' in page  # in the menu


@pytest.mark.django_db
def test_the_page_stores_a_connection_and_shows_the_secret_by_its_last_four(owner, key):
    response = owner.post(PAGE, {"kind": "prolific", "prolific-token": SECRET, "prolific-project_id": "p-9"})
    assert response.status_code == 302
    assert prolific_settings().token == SECRET and prolific_settings().project_id == "p-9"
    page = owner.get(PAGE).content.decode()
    assert SECRET not in page and "…abcd" in page and "saved on this site" in page
    # An empty secret box keeps the secret; the box never holds it.
    assert 'name="prolific-token"' in page and f'value="{SECRET}"' not in page
    owner.post(PAGE, {"kind": "prolific", "prolific-token": "", "prolific-project_id": "p-10"})
    assert prolific_settings().token == SECRET and prolific_settings().project_id == "p-10"
    owner.post(PAGE, {"kind": "prolific", "prolific-clear_token": "on"})
    assert prolific_settings().token == ""


@pytest.mark.django_db
def test_a_refused_value_is_shown_on_the_form_and_nothing_is_stored(owner, key):
    response = owner.post(PAGE, {"kind": "chat", "chat-api_url": "gopher://x", "chat-api_key": SECRET})
    assert response.status_code == 400
    page = response.content.decode()
    assert "api_url: an http(s) address" in page and SECRET not in page
    assert not Connection.objects.exists()
    assert owner.post(PAGE, {"kind": "nosuch"}).status_code == 400
    response = owner.post(PAGE, {"kind": "chat", "chat-answer_format": "yaml"})
    assert (
        response.status_code == 400
        and "answer_format: one of text, json_schema, json_object" in response.content.decode()
    )
    assert not Connection.objects.exists()


@pytest.mark.django_db
def test_without_a_key_the_page_says_where_one_will_be_made_and_stores_secrets(owner, settings, tmp_path):
    """After bin/demo (no CONNECTIONS_KEY), a secret is saved on the page and used by the next
    call: no variable to set, no restart."""
    settings.CONNECTIONS_KEY, settings.VAR_DIR = "", tmp_path
    page = owner.get(PAGE).content.decode()
    assert 'id="no-key"' in page and str(tmp_path / "connections.key") in page and "CONNECTIONS_KEY" in page
    response = owner.post(PAGE, {"kind": "chat", "chat-api_key": SECRET, "chat-model": "m"})
    assert response.status_code == 302
    assert chat_settings().api_key == SECRET and (tmp_path / "connections.key").is_file()
    assert 'id="no-key"' not in owner.get(PAGE).content.decode()


@pytest.mark.django_db
def test_the_page_test_runs_as_a_job_and_its_outcome_shows_itself(owner, key, django_capture_on_commit_callbacks):
    assert owner.get("/connections/chat/test/").status_code == 405  # a GET starts nothing
    fake = openai_chat.FakeOpenAI()
    url, server = openai_chat.serve(fake)
    try:
        owner.post(
            PAGE, {"kind": "chat", "chat-api_url": url, "chat-model": fake.model, "chat-api_key": "sk-wrong-000000000"}
        )
        with django_capture_on_commit_callbacks(execute=False) as callbacks:  # queued, not yet run
            response = owner.post("/connections/chat/test/")
        assert response.status_code == 302 and response["Location"] == "/connections/#connection-chat"
        fragment = owner.get("/connections/chat/test/status/").content.decode()
        assert "Testing" in fragment and 'hx-trigger="every 2s"' in fragment
        for callback in callbacks:
            callback()
        fragment = owner.get("/connections/chat/test/status/").content.decode()
        assert "failed" in fragment and "401: 127.0.0.1 refused the API key" in fragment
        assert "hx-trigger" not in fragment and "sk-wrong" not in fragment
        page = owner.get(PAGE).content.decode()
        assert "refused the API key" in page
    finally:
        server.shutdown()


@pytest.mark.django_db
def test_once_the_site_has_several_groups_only_superusers_manage_its_connections(key, researcher, django_user_model):
    """Connections are the site's, used by every group's studies: a one-group site's owners (its staff)
    manage them; once a second group exists, no group's owner may change what the others use."""
    from core.services.groups import create_group

    assert can_manage_connections(researcher)
    other = django_user_model.objects.create_user("other-owner", password="pw-secret-123", is_staff=True)
    create_group("Second lab", owner=other)
    boss = django_user_model.objects.create_superuser("boss", password="pw-secret-123")
    assert not can_manage_connections(researcher) and not can_manage_connections(other)
    assert can_manage_connections(boss)
    client = Client()
    client.force_login(researcher)
    assert client.get(PAGE).status_code == 403
    assert client.get(API).status_code == 403
    client.force_login(boss)
    assert client.get(PAGE).status_code == 200


@pytest.mark.django_db
def test_a_connection_tests_job_is_read_only_by_who_manages_connections(key, researcher, django_user_model):
    """Issue 53: the test's job (its message names the Prolific account's e-mail) was readable by every
    member of the starter's group, viewers included, through the job pages, the jobs API and the dashboard."""
    from core.models import Membership, ResearchGroup, default_group
    from core.services.connections import start_test_connection
    from core.services.groups import create_group

    default_group()  # the site's first group, then a second
    boss = django_user_model.objects.create_superuser("boss", password="pw-secret-123")
    viewer = django_user_model.objects.create_user("viewer", password="pw-secret-123", is_staff=True)
    create_group("Second lab", owner=django_user_model.objects.create_user("b", is_staff=True))
    first = ResearchGroup.objects.order_by("pk").first()
    Membership.objects.create(user=viewer, group=first, role="viewer")
    Membership.objects.create(user=researcher, group=first, role="owner")
    job = Job.objects.create(
        kind="core.test_connection", description="Test the Prolific connection", message="lab@example.org", group=first
    )
    other = Job.objects.create(kind="import", description="an import", group=first)
    client = Client()
    for who in (viewer, researcher):
        assert not can_manage_connections(who)
        client.force_login(who)
        for path in (f"/jobs/{job.pk}/", f"/api/jobs/{job.pk}/", f"/jobs/{job.pk}/progress/"):
            assert client.get(path).status_code == 404, (who, path)
        listed = client.get("/api/jobs/").json()["results"]
        assert [j["id"] for j in listed] == [other.pk]
        assert "lab@example.org" not in client.get("/").content.decode()
        assert client.get(f"/api/jobs/{other.pk}/").status_code == 200
    client.force_login(boss)
    assert client.get(f"/api/jobs/{job.pk}/").json()["message"] == "lab@example.org"
    assert start_test_connection  # the page's own test start stays the managers' (connections_manager_required)


@pytest.mark.parametrize(
    "spelling",
    [
        lambda s: s,
        str.upper,
        str.lower,
        lambda s: __import__("urllib.parse").parse.quote(s, safe=""),
        lambda s: __import__("base64").b64encode(s.encode()).decode(),
        lambda s: __import__("base64").urlsafe_b64encode(s.encode()).decode().rstrip("="),
        lambda s: __import__("base64").b64encode(b"x" + s.encode()).decode(),  # inside a longer encoded value
        lambda s: __import__("base64").b64encode(b"Basic:" + s.encode()).decode(),
        lambda s: s.encode().hex(),
        lambda s: s[:16],  # a prefix of it
        lambda s: "\\u" + "\\u".join(f"{ord(c):04x}" for c in s),  # JSON-escaped
    ],
)
def test_a_credential_echoed_back_in_another_spelling_is_masked(spelling):
    """Issue 53: a server echoing the key URL-encoded, in another case or base64 kept it on the page."""
    from core.redaction import mask_secret

    secret = "sk-Live_0123456789abcdefXYZ/+="
    echoed = spelling(secret)
    masked = mask_secret(f"401 Unauthorized: bad token {echoed!s} for this user", secret)
    assert echoed not in masked and "401 Unauthorized: bad token" in masked and "for this user" in masked
    assert mask_secret("nothing of it here", secret) == "nothing of it here"
