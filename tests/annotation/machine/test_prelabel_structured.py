"""Issue 58: structured answers. A small local model answers in sentences whatever the prompt (48 of 48
answers of SmolLM2-135M named no label); held to a JSON Schema (``response_format``, a standard
OpenAI-compatible feature) it can only write one of the four labels. The format is a declared option of
the connection (``PRELABEL_ANSWER_FORMAT``): ``json_schema`` (OpenAI's structured outputs) or ``json_object``
with a ``schema`` (llama-cpp-python's server, which refuses the other with HTTP 500). Against the project's
test server, which reads and refuses the field as those servers do (its rules are OpenAI's documented ones
and llama-cpp-python 0.3.36's request model); against llama.cpp's own server: test_llama_server.py."""

import json
import math
import urllib.error
import urllib.request

import jsonschema
import pytest

from annotation.machine.prelabellers import PreLabelError
from annotation.machine.prelabellers.chat_answers import LABEL_SCHEMA, PROMPT_VERSION, messages
from annotation.machine.prelabellers.chat_client import ChatClient
from annotation.machine.prelabellers.interface import PreLabelStopped
from annotation.machine.prelabellers.openai_chat import ChatPreLabeller, MemoryCache
from annotation.machine.services.prelabels import prelabel_batch
from annotation.models import PreLabel
from core.connection_kinds import KINDS
from tests.annotation.conftest import QUERIES, make_batch
from tests.annotation.machine.openai_server import KEY, FakeOpenAI, serve

TEXT = {qid: text for qid, text, _ in QUERIES}
#: What SmolLM2-135M wrote to the built-in prompt (benchmark_llama_cpp, text format).
SENTENCE = 'The query "King of England" is a question that asks about the history of the monarchy.'


@pytest.fixture
def fake(settings):
    server = FakeOpenAI()
    url, http = serve(server)
    settings.PRELABEL_API_URL = url
    settings.PRELABEL_API_KEY = KEY
    settings.PRELABEL_MODEL = server.model
    settings.PRELABEL_SAMPLES = 1
    settings.PRELABEL_MAX_SAMPLES = 1
    server.url = url
    yield server
    http.shutdown()


def llama_cpp_python(fake: FakeOpenAI) -> FakeOpenAI:
    """The test server as llama-cpp-python 0.3.36's: ``json_object`` (with a schema) only, else HTTP 500; ``n`` ignored."""
    fake.response_formats = ("json_object",)
    fake.format_refusal_status = 500
    fake.max_n = 1
    return fake


def labeller(fake, answer_format, cache=None, **options):
    client = ChatClient(
        fake.url, KEY, fake.model, max_attempts=2, sleep=lambda s: None, answer_format=answer_format, **options
    )
    return ChatPreLabeller(client, samples=1, cache=cache or MemoryCache(), concurrency=1)


def post(fake, body) -> tuple[int, dict]:
    request = urllib.request.Request(
        fake.url + "chat/completions",
        json.dumps(body).encode(),
        {"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, json.load(answer)
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_json_object_on_llama_cpp_python_gives_a_label_where_free_text_gave_none(fake):
    """Every request carries ``{"type": "json_object", "schema": LABEL_SCHEMA}``; the answers are the schema's
    objects (checked against it here), read as their labels; a model that would have talked is held to a
    label, and what it would have written without the schema is not read as one."""
    llama_cpp_python(fake)
    fake.answers = {"a": ["f"], "b": [SENTENCE]}
    text = labeller(fake, "text").label([("a", "a"), ("b", "b")])
    assert [p.label for p in text] == ["f", None]  # free text: counted, never guessed
    fake.requests.clear()
    structured = labeller(fake, "json_object").label([("a", "a"), ("b", "b")])
    assert fake.requests and all(
        r["response_format"] == {"type": "json_object", "schema": LABEL_SCHEMA} for r in fake.requests
    )
    assert [p.label for p in structured] == ["f", "n"]  # "b": held to the enum, the schema's first value
    assert all(p.detail["unparseable"] == 0 for p in structured)


def test_the_label_log_probability_is_read_inside_the_json(fake):
    """The alternatives listed at the label value's token (``{"label": "m"}``), as llama-cpp-python lists
    them (the model's own, before the constraint: "how" beside "m"), give the distribution restricted to the
    labels: each listed label's mass over the labels' listed mass plus the most the unlisted labels may hold
    (each at most the least listed mass), computed here from the log-probabilities sent."""
    llama_cpp_python(fake)
    top = {"how": -0.9, "m": -1.2, "f": -2.5, "What": -3.1}
    fake.answers = {"q": [{"content": "m", "top": top}]}
    (prediction,) = labeller(fake, "json_object").label([("q", "q")])
    mass = {token: math.exp(value) for token, value in top.items()}
    bound = 2 * min(mass.values())  # n and o are not listed
    denominator = mass["m"] + mass["f"] + bound
    assert prediction.label == "m" and prediction.detail["basis"] == "logprobs"
    assert prediction.confidence == pytest.approx(mass["m"] / denominator, abs=1e-6)
    assert prediction.detail["distribution"]["f"] == pytest.approx(mass["f"] / denominator, abs=1e-6)
    assert prediction.detail["unknown"] == pytest.approx(bound / denominator, abs=1e-6)
    assert len(fake.requests) == 1  # settled by its log-probabilities: the server ignores n, nothing more asked


def test_json_schema_refused_by_llama_cpp_python_stops_the_job_naming_the_setting(fake):
    """llama-cpp-python answers ``type: json_schema`` with HTTP 500 (a pydantic error): retried as any 500,
    then the job stops at once (every query would be refused alike) with a message naming the setting."""
    llama_cpp_python(fake)
    chat = labeller(fake, "json_schema")
    with pytest.raises(PreLabelStopped, match="PRELABEL_ANSWER_FORMAT") as stopped:
        chat.label([(q, q) for q in ("a", "b", "c", "d")])
    assert "Input should be 'text' or 'json_object'" in str(stopped.value)
    assert not fake.requests and len(fake.refused) == 2  # the first query's two attempts, none after
    assert stopped.value.partial == [None] * 4


def test_openai_structured_outputs_are_sent_strict_and_read(fake):
    """OpenAI's form (``json_schema`` with a name and ``strict``), accepted by the test server only when it
    keeps OpenAI's strict rules, is answered and read."""
    fake.answers = {"a": ["o"], "b": [{"content": "f", "top": {"f": -0.1, "n": -2.4}}]}
    predictions = labeller(fake, "json_schema").label([("a", "a"), ("b", "b")])
    assert [p.label for p in predictions] == ["o", "f"] and not fake.refused
    sent = fake.requests[0]["response_format"]
    assert sent["type"] == "json_schema" and sent["json_schema"]["strict"] is True
    assert sent["json_schema"]["schema"] == LABEL_SCHEMA
    jsonschema.Draft202012Validator.check_schema(LABEL_SCHEMA)


@pytest.mark.parametrize(
    "response_format, says",
    [
        ({"type": "json_schema", "json_schema": {"schema": LABEL_SCHEMA}}, "json_schema.name"),
        (
            {"type": "json_schema", "json_schema": {"name": "x", "strict": True, "schema": {"type": "object"}}},
            "additionalProperties",
        ),
        ({"type": "json_object", "schema": {"type": "objekt"}}, "Invalid schema"),
        ({"type": "yaml"}, "Supported values"),
    ],
)
def test_the_test_server_refuses_what_openai_refuses(fake, response_format, says):
    body = {"model": fake.model, "messages": messages("q"), "temperature": 1.0, "response_format": response_format}
    status, answer = post(fake, body)
    assert status == 400 and says in answer["error"]["message"]


def test_the_test_server_wants_the_word_json_for_json_object_as_openai_does(fake):
    """OpenAI refuses ``json_object`` unless a message says "json"; the built-in prompt does ("a JSON string")."""
    plain = [{"role": "system", "content": "Label it."}, {"role": "user", "content": 'Query: "q"'}]
    base = {"model": fake.model, "temperature": 1.0, "response_format": {"type": "json_object"}}
    assert post(fake, {**base, "messages": plain})[0] == 400
    assert post(fake, {**base, "messages": messages("q")})[0] == 200


def test_a_structured_answer_cut_by_the_cap_names_no_label(fake):
    """A cap too small for ``{"label": "f"}`` cuts the JSON: counted as unparseable, never guessed."""
    fake.answers = {"a": ["f"]}
    fake.logprobs = "ignore"
    (prediction,) = labeller(fake, "json_object", max_answer_tokens=4).label([("a", "a")])
    assert prediction.label is None and prediction.detail["unparseable"] == 1
    assert fake.requests[0]["max_tokens"] == 4


def test_structured_and_free_answers_are_kept_apart(fake):
    """The format is part of the answers' version: answers drawn under a schema are never mixed with free ones."""
    cache = MemoryCache()
    fake.answers = {"a": ["f"]}
    labeller(fake, "text", cache).label([("a", "a")])
    structured = labeller(fake, "json_object", cache)
    structured.label([("a", "a")])
    assert len(fake.requests) == 2 and structured.prompt_version == f"{PROMPT_VERSION}+json_object"
    assert {version for _, version, _ in cache.entries} == {PROMPT_VERSION, f"{PROMPT_VERSION}+json_object"}


@pytest.mark.django_db
def test_the_format_is_a_declared_option_of_the_connection(fake, query_set, settings):
    """``PRELABEL_ANSWER_FORMAT`` (the environment, or the Connections page's field) reaches every request;
    a value that is no format is refused with the setting's name."""
    assert KINDS["chat"].field("answer_format").setting == "PRELABEL_ANSWER_FORMAT"
    llama_cpp_python(fake)
    settings.PRELABEL_ANSWER_FORMAT = "json_object"
    fake.answers = {TEXT["106"]: [SENTENCE]}
    summary = prelabel_batch(make_batch(query_set), "openai")
    assert all(r["response_format"]["type"] == "json_object" for r in fake.requests)
    assert summary.unlabelled == 0 and summary.usage.unparseable == 0
    assert set(PreLabel.objects.values_list("prompt_version", flat=True)) == {f"{PROMPT_VERSION}+json_object"}
    with pytest.raises(PreLabelError, match="PRELABEL_ANSWER_FORMAT"):
        ChatClient(fake.url, KEY, fake.model, answer_format="grammar")


@pytest.mark.django_db
def test_the_connections_page_takes_exactly_the_formats_and_caps_the_labeller_sends(fake):
    """What the Connections page offers and saves for the answer format and the cap's field, the labeller
    puts in its requests (the fake holds them to OpenAI's published shapes); a value it would refuse is
    refused at the save, naming the field, and nothing is stored."""
    from core.errors import ServiceError
    from core.models import Connection
    from core.services.connections import save_connection

    sent = {"json_schema": "json_schema", "json_object": "json_object", "text": None}
    assert set(KINDS["chat"].field("answer_format").choices) == set(sent)
    for choice, request_type in sent.items():
        save_connection("chat", {"answer_format": choice})
        fake.requests.clear()
        labeller(fake, choice).label([("q", "q")])
        assert [(r.get("response_format") or {}).get("type") for r in fake.requests] == [request_type]
    for field in KINDS["chat"].field("token_limit").choices:
        save_connection("chat", {"token_limit": field})
        fake.requests.clear()
        labeller(fake, "text", token_limit=field).label([("q", "q")])
        assert [field in r for r in fake.requests] == [True]
    stored = dict(Connection.objects.get(kind="chat").values)
    for name, value in (("answer_format", "grammar"), ("token_limit", "max_length")):
        with pytest.raises(ServiceError, match=f"^{name}: one of "):
            save_connection("chat", {name: value})
        assert dict(Connection.objects.get(kind="chat").values) == stored
