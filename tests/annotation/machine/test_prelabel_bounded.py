"""Issue 58: bounded answers from any OpenAI-compatible server. Every chat request for a label caps the
answer (``max_tokens``, or ``max_completion_tokens`` where the server wants it: a declared option of the
connection, switched when the server refuses the other); free-text answers that name no label are counted,
never guessed; log-probabilities in llama-cpp-python's older text-completion shape are read as the chat
shape. Against the project's test server over real HTTP (``tests/annotation/machine/openai_server.py``), as harsh as
the servers it imitates; ``test_prelabel_structured.py`` runs a real llama.cpp server too."""

import math

import pytest

from annotation.machine.prelabellers import PreLabelError
from annotation.machine.prelabellers.chat_client import DEFAULT_MAX_ANSWER_TOKENS, ChatClient
from annotation.machine.prelabellers.openai_chat import ChatPreLabeller, MemoryCache
from annotation.machine.services.prelabels import prelabel_batch
from annotation.models import PreLabel
from tests.annotation.conftest import QUERIES, make_batch
from tests.annotation.machine.openai_server import KEY, FakeOpenAI, serve, tokens_of

TEXT = {qid: text for qid, text, _ in QUERIES}
#: What a small local model wrote with no cap (about 225 tokens on llama.cpp): a label is in it, not first.
RAMBLE = (
    "Sure! Let me think about this query step by step. The query asks about the height of a typical adult "
    "woman, which clearly concerns females only, so the most fitting label among the four would be the one "
    "for female. " * 6
)


@pytest.fixture
def fake(settings):
    server = FakeOpenAI(count_tokens=True)
    url, http = serve(server)
    settings.PRELABEL_API_URL = url
    settings.PRELABEL_API_KEY = KEY
    settings.PRELABEL_MODEL = server.model
    settings.PRELABEL_SAMPLES = 1
    settings.PRELABEL_MAX_SAMPLES = 1
    server.url = url
    yield server
    http.shutdown()


def labeller(fake, **client_options):
    client = ChatClient(fake.url, KEY, fake.model, max_attempts=2, sleep=lambda s: None, **client_options)
    return ChatPreLabeller(client, samples=1, cache=MemoryCache(), concurrency=1)


def test_every_request_caps_the_answer_and_a_rambling_answer_counts_as_no_label(fake, query_set):
    """The server writes what it is let write: capped at 16 tokens the ramble is cut (finish "length"),
    names no label as an answer, and is counted unparseable; the tokens paid are the cap's, not the ramble's."""
    fake.answers = {TEXT["106"]: [RAMBLE], TEXT["102"]: ["f"]}
    fake.logprobs = "ignore"
    summary = prelabel_batch(make_batch(query_set), "openai")
    assert fake.requests and all(r["max_tokens"] == DEFAULT_MAX_ANSWER_TOKENS for r in fake.requests)
    assert not any("max_completion_tokens" in r for r in fake.requests)
    labels = {p.batch_query.qid: p.label for p in PreLabel.objects.select_related("batch_query")}
    assert "106" not in labels and labels["102"] == "f"  # free text is never read as a label
    assert summary.unlabelled == 1 and summary.usage.unparseable == 1
    # 6 queries, one answer each: 5 of one token, the ramble cut at the cap (counted by the server's tokens).
    assert summary.usage.completion_tokens == 5 + DEFAULT_MAX_ANSWER_TOKENS < len(tokens_of(RAMBLE))


def test_a_server_that_wants_max_completion_tokens_gets_it_and_keeps_getting_it(fake, query_set):
    """OpenAI's reasoning models refuse ``max_tokens`` (400 naming ``max_completion_tokens``): the call is
    sent again with the other field, and the calls after it use that one; none goes uncapped."""
    fake.token_limit = "max_completion_tokens"
    chat = labeller(fake)
    predictions = chat.label([(qid, TEXT[qid]) for qid in ("102", "103", "104")])
    assert [p.label for p in predictions] == ["n", "n", "n"]  # the server's default answer, read
    assert len(fake.refused) == 1 and fake.refused[0]["max_tokens"] == DEFAULT_MAX_ANSWER_TOKENS
    assert len(fake.requests) == 3
    assert all(r.get("max_completion_tokens") == DEFAULT_MAX_ANSWER_TOKENS for r in fake.requests)
    assert not any("max_tokens" in r for r in fake.requests)
    assert chat.client.token_limit == "max_completion_tokens" and chat.client.token_limit_switched


def test_the_cap_and_its_field_are_declared_options_of_the_connection_and_the_labeller(fake, query_set, settings):
    fake.token_limit = "max_completion_tokens"
    settings.PRELABEL_TOKEN_LIMIT_FIELD = "max_completion_tokens"  # the connection's field, from the environment
    settings.PRELABEL_MAX_ANSWER_TOKENS = 4
    fake.answers = {TEXT["106"]: ["f and more words than four"]}
    fake.logprobs = "ignore"
    prelabel_batch(make_batch(query_set), "openai")
    assert not fake.refused  # asked in the declared field from the first call
    assert {r["max_completion_tokens"] for r in fake.requests} == {4}
    with pytest.raises(PreLabelError, match="PRELABEL_TOKEN_LIMIT_FIELD"):
        ChatClient(fake.url, KEY, fake.model, token_limit="max_length")
    with pytest.raises(PreLabelError, match="PRELABEL_MAX_ANSWER_TOKENS"):
        ChatClient(fake.url, KEY, fake.model, max_answer_tokens=0)


def test_log_probabilities_in_the_text_completion_shape_are_read_as_the_chat_shape(fake):
    """The same first-token alternatives sent in either shape give the same distribution, the one computed
    here from the log-probabilities sent: exp(logprob) per listed token, renormalised over those listed."""
    top = {"f": -0.2, "m": -1.8, "The": -3.0}
    fake.answers = {"q": [{"content": "f", "top": top}]}
    mass = {token: math.exp(value) for token, value in top.items()}
    expected = mass["f"] / sum(mass.values())
    seen = {}
    for shape in ("chat", "completion"):
        fake.logprobs_shape = shape
        (prediction,) = labeller(fake).label([("q", "q")])
        seen[shape] = prediction
        assert prediction.label == "f" and prediction.confidence == pytest.approx(expected, abs=1e-6)
        assert prediction.detail["basis"] == "logprobs"
        assert prediction.detail["unknown"] == pytest.approx(mass["The"] / sum(mass.values()), abs=1e-6)
    assert seen["chat"].detail == seen["completion"].detail
