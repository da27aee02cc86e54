"""Issue 69: the chat labeller against what llama.cpp's own server (``llama-server``) does, as measured on it
(docs/prelabelling.md) and played by the project's test server in its llama-server mode
(:func:`~tests.annotation.machine.openai_server.llama_server`): ``n`` above its slots refused, log-probability
tokens that open with a code fence the answer's ``content`` lacks, a cap that cuts the JSON, a queue of calls
beyond its slots; and a model that never names a label. The real server: test_llama_server.py."""

import math

import pytest

from annotation.machine.prelabellers.chat_client import ChatClient
from annotation.machine.prelabellers.interface import PreLabelStopped
from annotation.machine.prelabellers.openai_chat import NAMELESS_AFTER, ChatPreLabeller, MemoryCache
from tests.annotation.machine.openai_server import KEY, FakeOpenAI, llama_server, serve

#: What SmolLM2-135M wrote to the built-in prompt in free text (measured on llama-server).
SENTENCE = "This query is about how long it takes to conceive.\nThe user is asking"


@pytest.fixture
def fake():
    server = FakeOpenAI()
    url, http = serve(server)
    server.url = url
    yield server
    http.shutdown()


def labeller(fake, *, samples=1, concurrency=1, answer_format="text", **options):
    client = ChatClient(
        fake.url, KEY, fake.model, max_attempts=2, sleep=lambda s: None, answer_format=answer_format, **options
    )
    return ChatPreLabeller(client, samples=samples, cache=MemoryCache(), concurrency=concurrency)


def queries(count):
    return [(str(i), f"query {i}") for i in range(count)]


@pytest.mark.parametrize("slots", [1, 2])
def test_a_server_that_refuses_n_is_asked_within_it_once_and_remembers(fake, slots):
    """No ``/props``: the first call asks ``n=3`` and is refused with llama-server's 400; the client then asks at
    most the bound the message states (one call per answer at 1 slot), for every query after it and in the
    next job on the same connection, and each query still gets its three answers."""
    llama_server(fake, slots)
    fake.props = False
    fake.logprobs = "ignore"  # plain answers: each query needs its three
    chat = labeller(fake, samples=3)
    predictions = chat.label(queries(4))
    assert [p.detail["samples"] for p in predictions] == [3] * 4
    assert len(fake.refused) == 1 and fake.refused[0]["n"] == 3
    assert all(r.get("n", 1) <= slots for r in fake.requests)
    assert chat.client.n_max == slots
    assert len(fake.requests) == 4 * math.ceil(3 / slots)
    again = ChatPreLabeller(chat.client, samples=3, cache=MemoryCache(), concurrency=1)
    again.label(queries(2))
    assert len(fake.refused) == 1  # remembered: not refused again


def test_a_server_that_reports_its_slots_is_never_asked_more_n_than_them(fake):
    llama_server(fake, 2)
    fake.logprobs = "ignore"
    chat = labeller(fake, samples=3)
    chat.label(queries(3))
    assert fake.refused == [] and [r.get("n", 1) for r in fake.requests] == [2, 1] * 3


#: An answer whose label token lists these alternatives (the model's own, before the constraint).
TOP = {"f": -0.3, "m": -1.6, "The": -2.5}


def expected_confidence() -> float:
    """The labels' listed masses, with the labels not listed (n, o) each at most the least listed mass."""
    listed = [math.exp(v) for v in TOP.values()]
    f, m = math.exp(TOP["f"]), math.exp(TOP["m"])
    return f / (f + m + 2 * min(listed))


@pytest.mark.parametrize("answer_format", ["json_schema", "json_object"])
@pytest.mark.parametrize("cap", [16, 11])
def test_log_probabilities_are_read_at_the_label_past_the_fence_and_a_cut(fake, answer_format, cap):
    """llama-server's tokens open with ```` ```json\\n```` that ``content`` lacks; a cap of 11 tokens cuts the
    answer after the label's closing quote (``{"label": "f"``). Every answer's confidence is then the
    label's log-probability, renormalised over the labels (computed here from the scripted alternatives)."""
    llama_server(fake, 1)
    fake.answers = {text: [{"content": "f", "top": TOP}] for _, text in queries(3)}
    chat = labeller(fake, answer_format=answer_format, max_answer_tokens=cap)
    predictions = chat.label(queries(3))
    assert all(p.label == "f" and p.detail["basis"] == "logprobs" for p in predictions)
    assert all(p.confidence == pytest.approx(expected_confidence()) for p in predictions)


def test_the_fake_writes_the_fence_and_the_cut_as_llama_server_does(fake):
    """The test server's structured answer: content without the fence, tokens with it, cut by the cap."""
    import json
    import urllib.request

    from annotation.machine.prelabellers.chat_answers import messages, response_format

    llama_server(fake, 1)
    body = {"model": fake.model, "messages": messages("q"), "temperature": 1.0, "max_tokens": 11}
    body |= {"response_format": response_format("json_schema"), "logprobs": True, "top_logprobs": 2}
    request = urllib.request.Request(
        fake.url + "chat/completions",
        json.dumps(body).encode(),
        {"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as answer:
        choice = json.load(answer)["choices"][0]
    tokens = [entry["token"] for entry in choice["logprobs"]["content"]]
    assert tokens[:3] == ["```", "json", "\n"] and len(tokens) == 11
    assert choice["message"]["content"] == "".join(tokens[3:]) == '{"label": "n"'
    assert choice["finish_reason"] == "length"


def test_a_model_that_never_names_a_label_stops_the_job_saying_what_to_try(fake):
    llama_server(fake, 1)
    fake.answers = {text: [SENTENCE] for _, text in queries(15)}
    chat = labeller(fake)
    with pytest.raises(PreLabelStopped) as stopped:
        chat.label(queries(15))
    message = str(stopped.value)
    assert f"none of the {NAMELESS_AFTER} answers" in message and "named a label" in message
    assert "json_schema or json_object" in message and "another model" in message
    assert len(fake.requests) == NAMELESS_AFTER  # the rest not asked
    partial = stopped.value.partial
    assert [p is None for p in partial] == [False] * NAMELESS_AFTER + [True] * (15 - NAMELESS_AFTER)
    assert all(p.label is None for p in partial[:NAMELESS_AFTER])


def test_a_model_that_names_a_label_now_and_then_is_not_stopped(fake):
    llama_server(fake, 1)
    fake.answers = {text: [SENTENCE] for _, text in queries(15)}
    fake.answers["query 3"] = ["m"]
    predictions = labeller(fake).label(queries(15))
    assert [p.label for p in predictions].count("m") == 1 and len(fake.requests) == 15


def test_calls_in_flight_fit_the_servers_slots(fake):
    """A labeller allowed 8 calls at once sends at most the 2 the server reports (none waits in its queue)."""
    llama_server(fake, 2)
    fake.delay = 0.05
    predictions = labeller(fake, concurrency=8).label(queries(12))
    assert all(p.label == "n" for p in predictions)
    assert fake.most_received <= 2


def test_a_calls_deadline_counts_from_when_it_holds_the_servers_slots(fake):
    """Calls of ``n=2`` each hold both of the server's 2 slots (1 s each), two in flight: the second would wait
    1 s in the server's queue and pass its 1.6 s deadline there; held back until it has the slots, its
    deadline counts from then and every query is answered."""
    llama_server(fake, 2)
    fake.delay = 1.0
    fake.logprobs = "ignore"
    chat = labeller(fake, samples=2, concurrency=2, deadline=1.6, timeout=1.6)
    predictions = chat.label(queries(4))
    assert [p.detail["samples"] for p in predictions] == [2] * 4
    assert fake.most_received == 1 and fake.refused == []
