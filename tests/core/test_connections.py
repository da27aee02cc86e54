"""Connections set on the site (issue 45, item 1): stored sealed, never shown again in full,
environment variables first, used without a restart, tested by a job over real HTTP."""

from __future__ import annotations

import pytest
from django.db import connection as db

from core.errors import ServiceError
from core.models import Connection, Job
from core.sealing import SealError, new_key, reseal, seal, unseal
from core.selectors import (
    DEFAULT,
    ENVIRONMENT,
    SITE,
    UNSET,
    chat_settings,
    connection_state,
    huggingface_settings,
)
from core.services.connections import delete_connection, reseal_connections, save_connection, start_test_connection
from platforms.prolific.connection.selectors import prolific_settings
from tests.annotation.machine import openai_server as openai_chat
from tests.platforms.prolific import fake_server as prolific
from tests.publishing import huggingface_server as huggingface

SECRET = "prolific-token-0123456789-wxyz"


@pytest.fixture
def key(settings):
    settings.CONNECTIONS_KEY = new_key()
    settings.JOB_LOCAL_RUNNER = "inline"
    return settings.CONNECTIONS_KEY


def _field(state, name):
    return next(f for f in state.fields if f.spec.name == name)


def _raw_row(kind: str) -> str:
    """The row as the database holds it (what a backup would hold)."""
    with db.cursor() as cursor:
        cursor.execute('SELECT kind, "values", sealed FROM core_connection WHERE kind = %s', [kind])
        return repr(cursor.fetchone())


# --- sealing ----------------------------------------------------------------------------------


def test_a_sealed_value_opens_with_its_key_only():
    first, second = new_key(), new_key()
    token = seal({"token": SECRET}, first)
    assert SECRET not in token
    assert unseal(token, first) == {"token": SECRET}
    with pytest.raises(SealError, match="not the key they were sealed with") as refused:
        unseal(token, second)
    assert SECRET not in str(refused.value)


def test_rotation_opens_with_the_old_key_listed_second_and_reseals_with_the_first():
    old, new = new_key(), new_key()
    token = seal({"token": SECRET}, old)
    assert unseal(token, f"{new},{old}") == {"token": SECRET}
    moved = reseal(token, f"{new},{old}")
    assert unseal(moved, new) == {"token": SECRET}
    with pytest.raises(SealError):
        unseal(moved, old)


def test_no_key_or_a_malformed_key_is_a_clear_error():
    with pytest.raises(SealError, match="CONNECTIONS_KEY is not set and the site's key file") as refused:
        seal({"token": "x"}, "")
    # README.md's words: without CONNECTIONS_KEY the first saved secret makes a key in var/connections.key;
    # the message must not say secrets cannot be stored without the variable.
    assert "cannot be stored" not in str(refused.value) and "connections.key" in str(refused.value)
    with pytest.raises(SealError, match="key 2 of 2 is not a Fernet key"):
        seal({"token": "x"}, f"{new_key()},not-a-key")


# --- stored, read, env precedence -------------------------------------------------------------


@pytest.mark.django_db
def test_a_stored_secret_is_sealed_at_rest_and_shown_by_its_last_four_characters(key):
    save_connection("prolific", {"token": SECRET, "project_id": "proj-1", "api_url": "http://127.0.0.1:9/api/v1/"})
    assert SECRET not in _raw_row("prolific")
    assert "proj-1" in _raw_row("prolific")  # plain fields are plain
    state = connection_state("prolific")
    assert _field(state, "token").source == SITE and _field(state, "token").shown == "…wxyz"
    assert prolific_settings().token == SECRET and prolific_settings().project_id == "proj-1"
    assert SECRET not in repr(prolific_settings())


@pytest.mark.django_db
def test_an_empty_secret_keeps_the_stored_one_and_clear_removes_it(key):
    save_connection("prolific", {"token": SECRET})
    save_connection("prolific", {"token": "", "project_id": "p2"})
    assert prolific_settings().token == SECRET and prolific_settings().project_id == "p2"
    save_connection("prolific", {"project_id": ""}, clear=["token"])
    state = connection_state("prolific")
    assert prolific_settings().token == "" and _field(state, "token").source == UNSET
    assert _field(state, "project_id").source == UNSET and Connection.objects.get(kind="prolific").sealed == ""


@pytest.mark.django_db
def test_without_a_key_the_first_secret_makes_one_in_the_data_folder_once(settings, tmp_path):
    """bin/demo sets no CONNECTIONS_KEY: the first secret stored makes a key in VAR_DIR, private
    to its owner, which opens what it sealed (read here with cryptography's Fernet itself) and is
    never replaced; plain fields need no key and make none."""
    from cryptography.fernet import Fernet

    settings.CONNECTIONS_KEY, settings.VAR_DIR = "", tmp_path
    key_file = tmp_path / "connections.key"
    save_connection("chat", {"model": "m"})
    assert not key_file.exists() and chat_settings().model == "m"
    save_connection("chat", {"api_key": "sk-abcdefghijklmnop", "model": "m"})
    assert key_file.stat().st_mode & 0o777 == 0o600
    made = key_file.read_text()
    sealed = Connection.objects.get(kind="chat").sealed
    assert "sk-abcdefghijklmnop" not in sealed
    assert Fernet(made.strip().encode()).decrypt(sealed.encode()) == b'{"api_key": "sk-abcdefghijklmnop"}'
    assert chat_settings().api_key == "sk-abcdefghijklmnop"  # read back at use time, no restart
    save_connection("prolific", {"token": SECRET})
    assert key_file.read_text() == made and prolific_settings().token == SECRET
    assert not [p for p in tmp_path.iterdir() if p.name != "connections.key"]  # no draft left behind


def test_processes_making_the_key_at_once_end_with_one_key(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    path = tmp_path / "var" / "connections.key"
    make = f"from pathlib import Path; from core.sealing import key_in_file; print(key_in_file(Path({str(path)!r}), create=True))"
    root = Path(__file__).resolve().parents[2]
    processes = [
        subprocess.Popen([sys.executable, "-c", make], cwd=root, stdout=subprocess.PIPE, text=True) for _ in range(6)
    ]
    keys = {process.communicate(timeout=60)[0].strip() for process in processes}
    assert all(process.returncode == 0 for process in processes)
    assert keys == {path.read_text().strip()}


def test_an_empty_or_unreadable_key_file_is_an_error_naming_it(tmp_path):
    from core.sealing import key_in_file

    path = tmp_path / "connections.key"
    assert key_in_file(path, create=False) == "" and not path.exists()
    path.write_text("")
    with pytest.raises(SealError, match=f"the key file {path} is empty"):
        key_in_file(path, create=True)
    path.unlink()
    path.mkdir()
    with pytest.raises(SealError, match=f"the key file {path} cannot be read"):
        key_in_file(path, create=True)


@pytest.mark.django_db
def test_a_key_that_cannot_open_the_stored_secrets_fails_the_call_that_needs_them_only(key, settings):
    save_connection("prolific", {"token": SECRET, "workspace_id": "ws-1"})
    settings.CONNECTIONS_KEY = new_key()  # the key was replaced without keeping the old one
    connection = prolific_settings()
    assert connection.workspace_id == "ws-1"  # the rest is read
    with pytest.raises(ServiceError, match="not the key they were sealed with") as refused:
        connection.token  # noqa: B018
    assert SECRET not in str(refused.value)
    state = connection_state("prolific")
    assert "CONNECTIONS_KEY" in state.problem and _field(state, "token").shown == "cannot be read with the current key"
    with pytest.raises(SealError):  # keeping the token needs the old key ...
        save_connection("prolific", {"project_id": "p"})
    save_connection("prolific", {"token": "a-new-token-entered-again"})  # ... replacing it does not
    assert prolific_settings().token == "a-new-token-entered-again"


@pytest.mark.django_db
def test_reseal_moves_every_stored_secret_to_the_new_key(key, settings):
    old = key
    save_connection("prolific", {"token": SECRET})
    save_connection("chat", {"api_key": "sk-0000000000000chat"})
    new = new_key()
    settings.CONNECTIONS_KEY = f"{new},{old}"
    assert reseal_connections() == 2
    settings.CONNECTIONS_KEY = new
    assert prolific_settings().token == SECRET and chat_settings().api_key == "sk-0000000000000chat"


@pytest.mark.django_db
def test_an_environment_variable_takes_precedence_field_by_field(key, settings, monkeypatch):
    save_connection("prolific", {"token": SECRET, "project_id": "site-project"})
    settings.PROLIFIC_API_TOKEN = "env-token"
    state = connection_state("prolific")
    token, project, url = _field(state, "token"), _field(state, "project_id"), _field(state, "api_url")
    assert (token.source, token.stored) == (ENVIRONMENT, True)
    assert project.source == SITE and url.source == DEFAULT
    assert prolific_settings().token == "env-token" and prolific_settings().project_id == "site-project"
    # An environment variable set to the default value is still the environment's.
    monkeypatch.setenv("PROLIFIC_API_URL", settings.PROLIFIC_API_URL)
    assert _field(connection_state("prolific"), "api_url").source == ENVIRONMENT
    # HF_TOKEN is read from the environment at call time, as publish_dataset did.
    save_connection("huggingface", {"token": "hf_site_token_0000000"})
    assert huggingface_settings().token == "hf_site_token_0000000"
    monkeypatch.setenv("HF_TOKEN", "hf_env")
    assert huggingface_settings().token == "hf_env"


@pytest.mark.django_db
def test_with_only_environment_variables_the_clients_read_what_they_read_before(settings):
    settings.PROLIFIC_API_URL = "http://127.0.0.1:1/api/v1/"
    settings.PROLIFIC_API_TOKEN = "tok"
    settings.PROLIFIC_PROJECT_ID = "proj"
    settings.PROLIFIC_WORKSPACE_ID = "ws"
    settings.PRELABEL_API_URL, settings.PRELABEL_MODEL, settings.PRELABEL_API_KEY = "http://127.0.0.1:2/v1/", "m", "k"
    got = prolific_settings()
    assert (got.api_url, got.token, got.project_id, got.workspace_id) == (
        "http://127.0.0.1:1/api/v1/",
        "tok",
        "proj",
        "ws",
    )
    chat = chat_settings()
    assert (chat.api_url, chat.model, chat.api_key) == ("http://127.0.0.1:2/v1/", "m", "k")
    from platforms.prolific.provider import api_client

    client = api_client()
    assert (client.base_url, client.token) == ("http://127.0.0.1:1/api/v1/", "tok")


@pytest.mark.django_db
def test_a_connection_saved_on_the_site_is_used_by_the_next_call_without_a_restart(key):
    from annotation.machine.services.prelabels import make_prelabeller
    from platforms.prolific.provider import api_client

    save_connection("prolific", {"token": SECRET, "api_url": "http://127.0.0.1:5/api/v1/"})
    assert (api_client().base_url, api_client().token) == ("http://127.0.0.1:5/api/v1/", SECRET)
    save_connection("prolific", {"token": "second-token-000000000"})
    assert api_client().token == "second-token-000000000"
    save_connection(
        "chat", {"api_url": "http://127.0.0.1:6/v1/", "model": "site-model", "api_key": "sk-site-key-0000000"}
    )
    labeller = make_prelabeller("openai")
    client = labeller.client
    assert (client.url, client.model, client.api_key) == (
        "http://127.0.0.1:6/v1/chat/completions",
        "site-model",
        "sk-site-key-0000000",
    )


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("values", "field"),
    [
        ({"tokn": "x"}, "tokn"),
        ({"api_url": "ftp://x/"}, "api_url"),
        ({"api_url": "not an address"}, "api_url"),
        ({"api_url": "http://[::1"}, "api_url"),
        ({"api_url": "http://host:port/"}, "api_url"),
        ({"project_id": "a\nb"}, "project_id"),
        ({"project_id": "x" * 2001}, "project_id"),
        ({"project_id": 7}, "project_id"),
    ],
)
def test_bad_values_are_refused_naming_the_field_and_nothing_is_written(key, values, field):
    with pytest.raises(ServiceError, match=f"^{field}: "):
        save_connection("prolific", values)
    assert not Connection.objects.exists()


# --- the test job, over real HTTP against the fake servers -------------------------------------


@pytest.fixture
def fake_prolific():
    fake = prolific.FakeProlific()
    url, server = prolific.serve(fake)
    yield fake, f"{url}/api/v1/"
    server.shutdown()


@pytest.fixture
def fake_chat():
    fake = openai_chat.FakeOpenAI()
    url, server = openai_chat.serve(fake)
    yield fake, url
    server.shutdown()


@pytest.fixture
def fake_hub():
    fake = huggingface.FakeHub()
    url, server = huggingface.serve(fake)
    yield fake, url
    server.shutdown()


def _test(kind, django_capture_on_commit_callbacks) -> Job:
    with django_capture_on_commit_callbacks(execute=True):
        job = start_test_connection(kind)
    job.refresh_from_db()
    assert Connection.objects.get(kind=kind).last_test == job
    return job


@pytest.mark.django_db
def test_prolific_test_succeeds_against_the_fake(key, fake_prolific, django_capture_on_commit_callbacks):
    fake, url = fake_prolific
    save_connection("prolific", {"api_url": url, "token": prolific.TOKEN, "project_id": "p1", "workspace_id": "w1"})
    job = _test("prolific", django_capture_on_commit_callbacks)
    assert job.status == Job.Status.DONE, job.message
    assert "token accepted (researcher@example.org)" in job.message and "workspace w1 readable" in job.message
    assert fake.calls == ["me", "list_studies", "list_groups"]


@pytest.mark.django_db
def test_prolific_test_reports_a_refused_token_without_showing_it(
    key, fake_prolific, django_capture_on_commit_callbacks
):
    _fake, url = fake_prolific
    save_connection("prolific", {"api_url": url, "token": SECRET})
    job = _test("prolific", django_capture_on_commit_callbacks)
    assert job.status == Job.Status.FAILED
    assert job.message.startswith("401: 127.0.0.1 refused the API token")
    assert SECRET not in job.message and SECRET[-4:] not in job.message


@pytest.mark.django_db
def test_prolific_test_reports_a_timeout(key, settings, fake_prolific, django_capture_on_commit_callbacks):
    fake, url = fake_prolific
    settings.CONNECTION_TEST_TIMEOUT = 0.3
    fake.faults["me"] = ["slow:2", "slow:2"]
    save_connection("prolific", {"api_url": url, "token": prolific.TOKEN})
    job = _test("prolific", django_capture_on_commit_callbacks)
    assert job.status == Job.Status.FAILED
    assert job.message == "no answer from 127.0.0.1 within 0.3 s (timeout)"


@pytest.mark.django_db
def test_a_host_that_does_not_exist_is_reported_as_such(key, settings, django_capture_on_commit_callbacks):
    settings.CONNECTION_TEST_TIMEOUT = 2
    save_connection("prolific", {"api_url": "http://no-such-host.invalid/api/v1/", "token": prolific.TOKEN})
    job = _test("prolific", django_capture_on_commit_callbacks)
    assert job.status == Job.Status.FAILED
    assert "no-such-host.invalid" in job.message
    assert "cannot be found (DNS)" in job.message or "timeout" in job.message


@pytest.mark.django_db
def test_chat_test_succeeds_and_reports_a_wrong_key_and_a_timeout(
    key, settings, fake_chat, django_capture_on_commit_callbacks
):
    fake, url = fake_chat
    save_connection("chat", {"api_url": url, "model": fake.model, "api_key": openai_chat.KEY})
    job = _test("chat", django_capture_on_commit_callbacks)
    assert job.status == Job.Status.DONE, job.message
    assert job.message.startswith(f"Language model: {fake.model} answered at {url}. The labeller's request (text, ")
    assert fake.requests[-1]["model"] == fake.model

    save_connection("chat", {"api_key": "sk-wrong-key-0000000"})
    job = _test("chat", django_capture_on_commit_callbacks)
    assert job.status == Job.Status.FAILED and job.message.startswith("401: 127.0.0.1 refused the API key")
    assert "sk-wrong" not in job.message

    save_connection("chat", {"api_key": openai_chat.KEY})
    settings.CONNECTION_TEST_TIMEOUT = 0.3
    fake.delay = 1.5
    job = _test("chat", django_capture_on_commit_callbacks)
    assert job.status == Job.Status.FAILED and job.message == "no answer from 127.0.0.1 within 0.3 s (timeout)"


@pytest.mark.django_db
def test_chat_test_sends_the_labellers_request_and_reports_what_llama_server_refused(
    key, settings, fake_chat, django_capture_on_commit_callbacks
):
    """The test is the labeller's own request (its answer format, cap and ``n``); against llama-server's refusals
    (a server with 1 slot that does not report it, so ``n`` = 3 is sent) it says what was refused and what the
    answers gave."""
    fake, url = fake_chat
    openai_chat.llama_server(fake, 1)
    fake.props = False
    settings.PRELABEL_SAMPLES = 3
    settings.PRELABEL_MAX_ANSWER_TOKENS = 11
    save_connection(
        "chat", {"api_url": url, "model": fake.model, "api_key": openai_chat.KEY, "answer_format": "json_schema"}
    )
    job = _test("chat", django_capture_on_commit_callbacks)
    assert job.status == Job.Status.DONE, job.message
    first = fake.refused[0]
    assert (first["n"], first["max_tokens"], first["response_format"]["type"]) == (3, 11, "json_schema")
    assert first["logprobs"] is True and "<query>" in first["messages"][-1]["content"]
    assert "(json_schema, max_tokens 11, n 3, log-probabilities)" in job.message
    assert "the server refused n = 3 (asked again with at most 1" in job.message
    assert "Field 'n': Value must be between 1 <= value <= 1" in job.message
    assert "1 answers in 1 calls, 1 naming a label, 1 with log-probabilities" in job.message

    fake.props = True  # a server that says its slots: n never above them, nothing refused
    fake.refused.clear()
    job = _test("chat", django_capture_on_commit_callbacks)
    assert job.status == Job.Status.DONE and fake.refused == [] and "refused" not in job.message

    fake.answers = {"how long is a pregnancy": ["This query is about how long it takes to conceive."]}
    save_connection("chat", {"answer_format": "text"})
    job = _test("chat", django_capture_on_commit_callbacks)
    assert job.status == Job.Status.DONE and "no answer named a label: try another answer format" in job.message


@pytest.mark.django_db
def test_chat_test_names_a_model_the_endpoint_refuses(key, fake_chat, django_capture_on_commit_callbacks):
    _fake, url = fake_chat
    save_connection("chat", {"api_url": url, "model": "no-such-model", "api_key": openai_chat.KEY})
    job = _test("chat", django_capture_on_commit_callbacks)
    assert job.status == Job.Status.FAILED and job.message.startswith("127.0.0.1 answered 400")


@pytest.mark.django_db
def test_hub_test_accepts_a_write_token_warns_of_a_read_one_and_reports_a_wrong_one(
    key, fake_hub, django_capture_on_commit_callbacks
):
    fake, url = fake_hub
    save_connection("huggingface", {"endpoint": url, "token": huggingface.TOKEN})
    job = _test("huggingface", django_capture_on_commit_callbacks)
    assert (job.status, job.message) == (Job.Status.DONE, "Hugging Face: token accepted (test-lab).")
    fake.tokens[huggingface.TOKEN] = "read"
    job = _test("huggingface", django_capture_on_commit_callbacks)
    assert (
        job.status == Job.Status.DONE and "its role is read: publish_dataset --push needs a write token" in job.message
    )
    save_connection("huggingface", {"token": "hf_wrong_token_000000"})
    job = _test("huggingface", django_capture_on_commit_callbacks)
    assert job.status == Job.Status.FAILED and job.message.startswith("401: 127.0.0.1 refused the access token")


@pytest.mark.django_db
def test_a_connection_without_its_secret_fails_its_test_saying_so(key, django_capture_on_commit_callbacks):
    job = _test("prolific", django_capture_on_commit_callbacks)
    assert (job.status, job.message) == (Job.Status.FAILED, "no API token is set")


@pytest.mark.django_db
def test_forgetting_a_connection_leaves_the_environment_in_force(key, settings):
    settings.PROLIFIC_PROJECT_ID = "env-project"
    save_connection("prolific", {"token": SECRET})
    assert delete_connection("prolific") and not delete_connection("prolific")
    assert prolific_settings().token == "" and prolific_settings().project_id == "env-project"


def test_nothing_secret_reaches_the_log(caplog, key, db):
    with caplog.at_level("DEBUG"):
        save_connection("chat", {"api_key": "sk-logged-never-0000", "model": "m"})
    assert "connection chat changed" in caplog.text  # it is logged: which fields, never their values
    assert "sk-logged-never" not in caplog.text and "0000" not in caplog.text


@pytest.mark.django_db
def test_the_command_lists_sources_without_secrets_and_rotates(key, settings):
    from io import StringIO

    from django.core.management import call_command

    save_connection("prolific", {"token": SECRET, "project_id": "p1"})
    out = StringIO()
    call_command("connections", stdout=out)
    text = out.getvalue()
    assert SECRET not in text and "…wxyz" in text and "p1" in text and "environment (" not in text
    new = StringIO()
    call_command("connections", "--new-key", stdout=new)
    settings.CONNECTIONS_KEY = f"{new.getvalue().strip()},{key}"
    call_command("connections", "--rotate", stdout=StringIO())
    settings.CONNECTIONS_KEY = new.getvalue().strip()
    assert prolific_settings().token == SECRET


@pytest.mark.django_db
def test_a_new_address_needs_its_secret_again_so_no_stored_secret_goes_to_another_host(key, settings):
    save_connection("prolific", {"token": SECRET, "api_url": "http://127.0.0.1:9/api/v1/"})
    with pytest.raises(ServiceError, match="api_url: a new address needs its token entered again"):
        save_connection("prolific", {"api_url": "http://attacker.example/api/v1/"})
    assert prolific_settings().api_url == "http://127.0.0.1:9/api/v1/"  # nothing written
    save_connection("prolific", {"project_id": "p2"})  # other fields change as before
    save_connection("prolific", {"api_url": "http://127.0.0.1:8/api/v1/", "token": "a-token-entered-again"})
    assert prolific_settings().api_url == "http://127.0.0.1:8/api/v1/"
    # A token set in the environment (which no page shows) never goes with an address set on the site.
    settings.PROLIFIC_API_TOKEN = "env-token-0000000000"
    with pytest.raises(ServiceError, match="set in the environment"):
        save_connection("prolific", {"api_url": "http://127.0.0.1:7/api/v1/", "token": "another-token-0000"})
