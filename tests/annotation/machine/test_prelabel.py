"""Pre-labellers: the rules on hand-written queries, the chat labeller over real HTTP against
an OpenAI-compatible test server (faults, unparseable answers, the cache), the service and
the command."""

import hashlib
import re
from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import call_command

from annotation.machine.prelabellers import PreLabelError, chat_answers, get_prelabeller
from annotation.machine.prelabellers.chat_answers import parse_answer, vote
from annotation.machine.prelabellers.chat_client import ChatClient
from annotation.machine.prelabellers.openai_chat import ChatPreLabeller
from annotation.machine.prelabellers.rules import RulesPreLabeller
from annotation.machine.services.prelabels import DatabaseAnswerCache, prelabel_batch
from annotation.models import PreLabel, PreLabelAnswer
from core.errors import ServiceError
from genderbias.text.wordlists import GenderWords
from tests.annotation.conftest import QUERIES, make_batch
from tests.annotation.machine.openai_server import KEY, PROMPT_TOKENS, FakeOpenAI, serve

TEXT = {qid: text for qid, text, _ in QUERIES}


# -- rules ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "label", "confidence", "rule"),
    [
        ("How long is a pregnancy for a Woman?", "f", 0.9, "female_words"),
        ("what age do MEN go bald", "m", 0.9, "male_words"),
        ("his mother's maiden name", "o", 0.8, "both_words"),  # "mother's" -> mother, s
        ("do boys or girls learn faster", "o", 0.8, "both_words"),
        ("what is a synapse", "n", 0.6, "none"),
        ("shepherd hermit history", "n", 0.6, "none"),  # "he" and "her" inside words do not count
        ("mary curie nobel prize", "n", 0.6, "none"),  # no name list by default
    ],
)
def test_rules_label_with_the_study_words(text, label, confidence, rule):
    (prediction,) = get_prelabeller("rules").label([("q", text)])
    assert (prediction.label, prediction.confidence, prediction.detail["rule"]) == (label, confidence, rule)
    got_label, got_confidence = prediction
    assert (got_label, got_confidence) == (label, confidence)


def test_rules_with_a_first_name_list():
    names = GenderWords(frozenset({"mary"}), frozenset({"john"}), name="tiny")
    labeller = RulesPreLabeller(first_names=names)
    assert labeller.model == "genderspecific-32+32+names:tiny"
    got = labeller.label([("1", "Mary Curie"), ("2", "john lennon"), ("3", "mary and john"), ("4", "john's mother")])
    assert [(p.label, p.confidence) for p in got] == [("f", 0.7), ("m", 0.7), ("o", 0.7), ("f", 0.9)]


# -- the chat labeller's pure parts ------------------------------------------------------
def test_answers_are_parsed_strictly_and_voted_over_all_samples():
    assert [parse_answer(a) for a in ["f", " M. ", '"o"', "female", "Non-gendered", "I think f", "", None, 3]] == [
        "f",
        "m",
        "o",
        "f",
        "n",
        None,
        None,
        None,
        None,
    ]
    prediction = vote(["f", "f", "m", "maybe", "f"])
    # Without log-probabilities: the posterior mean of the share, (3 + 1) / (5 + 2), unparseable answers counted.
    assert (prediction.label, prediction.confidence) == ("f", 4 / 7)
    assert prediction.detail == {"votes": {"f": 3, "m": 1}, "unparseable": 1, "samples": 5, "basis": "votes"}
    assert vote(["m", "f"]).label == "f"  # a tie goes to the first in the labels' order
    assert vote(["??", "no idea"]).label is None


def test_retry_after_in_seconds_a_date_or_unreadable():
    from core.backoff import backoff_delay, retry_after_seconds

    assert retry_after_seconds("3") == 3.0
    assert retry_after_seconds("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0  # in the past
    assert retry_after_seconds("soon") is None and retry_after_seconds(None) is None
    assert [backoff_delay(n, None, base=0.5, cap=3) for n in (1, 2, 3, 4)] == [0.5, 1.0, 2.0, 3]
    assert backoff_delay(1, 7.0, base=0.5, cap=30) == 7.0


def test_the_prompt_matches_its_version():
    """Changing the prompt without a new PROMPT_VERSION would mix answers to two prompts in the cache."""
    known = {
        "gender-v1": "ad548855750dc875b00a1cb4c917dec35742c36b31c21c3ec955f1ab632102a5",
        "gender-v2": "79dd94a92d132a661c853a5d8fcfd0fdf725b82659efa4a85f6f3a4025cad5f4",  # the query as data
    }
    digest = hashlib.sha256(f"{chat_answers.SYSTEM_PROMPT}\n\n{chat_answers.USER_TEMPLATE}".encode()).hexdigest()
    assert known[chat_answers.PROMPT_VERSION] == digest


# -- over HTTP -------------------------------------------------------------------------------
@pytest.fixture
def fake_openai(settings):
    fake = FakeOpenAI()
    url, http = serve(fake)
    settings.PRELABEL_API_URL = url
    settings.PRELABEL_API_KEY = KEY
    settings.PRELABEL_MODEL = fake.model
    settings.PRELABEL_SAMPLES = 3
    settings.PRELABEL_PROMPT_PRICE = Decimal("1.00")  # USD per million tokens
    settings.PRELABEL_COMPLETION_PRICE = Decimal("4.00")
    fake.url = url
    yield fake
    http.shutdown()


def chat_labeller(fake, *, samples=3, sleeps=None, **options):
    client = ChatClient(fake.url, KEY, fake.model, max_attempts=5, sleep=(sleeps if sleeps is not None else []).append)
    return ChatPreLabeller(client, samples=samples, cache=DatabaseAnswerCache(), **options)


@pytest.fixture
def batch(query_set):
    return make_batch(query_set)


def stored(batch, labeller="openai"):
    return {
        p.batch_query.qid: (p.label, p.confidence)
        for p in PreLabel.objects.filter(batch_query__batch=batch, labeller=labeller).select_related("batch_query")
    }


def test_chat_labels_votes_and_costs_then_a_rerun_makes_no_request(fake_openai, batch, settings):
    fake_openai.answers = {TEXT["102"]: ["f", "f", "m"], TEXT["103"]: ["m"], TEXT["104"]: ["o", "f", "Other."]}
    summary = prelabel_batch(batch, "openai")
    assert stored(batch)["102"] == ("f", pytest.approx(2 / 3))
    assert stored(batch)["103"] == ("m", 1.0)
    assert stored(batch)["104"] == ("o", pytest.approx(2 / 3))
    assert summary.counts == {"n": 3, "f": 1, "m": 1, "o": 1}
    assert len(fake_openai.requests) == 6  # one per query, n=3
    assert {(r["n"], r["temperature"], r["model"]) for r in fake_openai.requests} == {(3, 1.0, "test-model")}
    assert summary.usage.prompt_tokens == 6 * PROMPT_TOKENS and summary.usage.completion_tokens == 18
    assert summary.usage.cost == Decimal(120 * 1 + 18 * 4) / 1_000_000
    detail = PreLabel.objects.get(batch_query__qid="102", labeller="openai").detail
    assert detail == {
        "votes": {"f": 2, "m": 1},
        "unparseable": 0,
        "samples": 3,
        "basis": "logprobs",  # the fake gives each scripted answer's first token with logprob 0
        "logprob_answers": 3,
        "distribution": {"f": 0.666667, "m": 0.333333},
        "unknown": 0.0,
    }
    assert PreLabelAnswer.objects.count() == 6

    again = prelabel_batch(batch, "openai")
    assert len(fake_openai.requests) == 6  # answered from the cache
    assert again.usage.requests == 0 and again.usage.cost == 0 and again.usage.cached_queries == 6
    assert again.counts == summary.counts
    assert PreLabel.objects.filter(labeller="openai").count() == 6  # replaced, not added

    # Answers with log-probabilities settle a query: more samples would repeat the same first-token
    # distribution, so asking for 5 asks for nothing more (issue 58: each answer is a paid call on llama.cpp).
    more = prelabel_batch(batch, "openai", samples=5)
    assert len(fake_openai.requests) == 6 and more.usage.requests == 0 and more.counts == summary.counts
    fake_openai.logprobs = "ignore"
    PreLabelAnswer.objects.all().delete()
    settings.PRELABEL_MAX_SAMPLES = 3  # no second draw
    plain = prelabel_batch(batch, "openai")  # plain answers: each query's 3, one call each (n=3)
    assert [r["n"] for r in fake_openai.requests[6:]] == [3] * 6
    more = prelabel_batch(batch, "openai", samples=5)  # only the two missing samples are asked
    assert {r["n"] for r in fake_openai.requests[12:]} == {2} and len(fake_openai.requests) == 18
    assert more.usage.completion_tokens == 12 and plain.counts == summary.counts


def test_throttling_server_errors_lost_and_garbled_answers_are_retried(fake_openai, batch):
    fake_openai.faults = ["throttle", "error", "lose", "garbage"]
    sleeps = []
    labeller = chat_labeller(fake_openai, sleeps=sleeps, concurrency=1)
    summary = prelabel_batch(batch, labeller)
    assert summary.labelled == 6 and summary.counts["n"] == 6
    assert len(fake_openai.requests) == 6 + 4
    assert sleeps == [0, 1.0, 2.0, 4.0]  # Retry-After: 0 honoured, else exponential back-off


def test_giving_up_keeps_what_was_answered(fake_openai, batch):
    fake_openai.faults = ["error"] * 5  # the first query fails 5 times: max_attempts
    with pytest.raises(PreLabelError) as caught:
        prelabel_batch(batch, chat_labeller(fake_openai, concurrency=1))
    assert caught.value.upstream and caught.value.status == 500
    assert PreLabelAnswer.objects.count() == 5  # the others were paid for and are cached
    prelabel_batch(batch, chat_labeller(fake_openai))
    assert len(fake_openai.requests) == 5 + 5 + 1  # the rerun asks for the missing one only


def test_a_refusal_is_not_retried(fake_openai, batch):
    client = ChatClient(fake_openai.url, "wrong-key", fake_openai.model, sleep=lambda s: None)
    with pytest.raises(PreLabelError, match="HTTP 401") as caught:
        prelabel_batch(batch, ChatPreLabeller(client, samples=1, cache=DatabaseAnswerCache()))
    assert not caught.value.upstream and fake_openai.turns == {}


def test_unparseable_answers_are_counted_never_guessed(fake_openai, batch):
    fake_openai.answers = {
        TEXT["102"]: ["f", "The query is about women", "f"],
        TEXT["101"]: ["maybe", "", "n or o"],
    }
    summary = prelabel_batch(batch, chat_labeller(fake_openai))
    assert stored(batch)["102"] == ("f", pytest.approx(2 / 3))  # share of all 3 samples
    assert "101" not in stored(batch)
    assert summary.unlabelled == 1 and summary.usage.unparseable == 4
    kept = PreLabelAnswer.objects.get(text=TEXT["101"]).answers  # kept with their log-probabilities
    assert [chat_answers.answer_content(a) for a in kept] == ["maybe", "", "n or o"]


def test_a_server_that_ignores_n_is_asked_again_only_when_needed_and_calls_are_limited(fake_openai, batch):
    """llama.cpp's server answers one choice whatever ``n``. Plain answers: the missing ones are asked one
    call each (3 calls a query) and counted; ``n`` is not sent again once it was seen ignored. Answers with
    log-probabilities: the first settles its query (its first-token distribution is what more would repeat),
    so one call a query (issue 58)."""
    fake_openai.max_n = 1
    fake_openai.delay = 0.05
    fake_openai.logprobs = "ignore"
    labeller = chat_labeller(fake_openai, concurrency=2)
    prelabel_batch(batch, labeller)
    assert len(fake_openai.requests) == 6 * 3
    assert fake_openai.most_in_flight == 2
    assert labeller.client.n_ignored and labeller.usage.separate_calls == 6 * 2 == labeller.client.separate_calls
    assert sum("n" in r for r in fake_openai.requests) <= 2  # the calls in flight before it was seen
    assert all(p.detail["samples"] == 3 for p in PreLabel.objects.filter(labeller="openai"))

    PreLabelAnswer.objects.all().delete()
    fake_openai.requests.clear()
    fake_openai.logprobs = "honour"
    labeller = chat_labeller(fake_openai, concurrency=1)
    summary = prelabel_batch(batch, labeller)
    assert len(fake_openai.requests) == 6 and summary.usage.requests == 6 and labeller.usage.separate_calls == 0
    rows = PreLabel.objects.filter(labeller="openai")
    assert rows.count() == 6 and all(p.detail["basis"] == "logprobs" and p.detail["samples"] == 1 for p in rows)


def test_rules_through_the_service_and_the_command(batch):
    out = StringIO()
    call_command("prelabel", batch.name, "--labeller", "rules", stdout=out)
    text = out.getvalue()
    assert "Non-gendered" in text and "Mean confidence: 0.783" in text and "6 label(s) stored" in text
    assert stored(batch, "rules") == {
        "101": ("n", 0.6),
        "102": ("f", 0.9),
        "103": ("m", 0.9),
        "104": ("o", 0.8),
        "105": ("n", 0.6),
        "106": ("f", 0.9),
    }
    call_command("prelabel", batch.name, "--labeller", "rules", stdout=StringIO())
    assert PreLabel.objects.count() == 6
    row = PreLabel.objects.get(batch_query__qid="104")
    assert (row.model, row.prompt_version) == ("genderspecific-32+32", "rules-v1")


def test_the_command_with_the_chat_model(fake_openai, batch):
    out = StringIO()
    call_command("prelabel", batch.name, "--labeller", "openai", "--samples", "2", stdout=out)
    text = out.getvalue()
    assert "Requests: 6 (6 queries asked, 0 from the cache)" in text
    assert f"Tokens: {6 * PROMPT_TOKENS} prompt + 12 completion; cost: $0.000168" in text
    out = StringIO()
    call_command("prelabel", batch.name, "--labeller", "openai", "--samples", "2", stdout=out)
    assert "Requests: 0 (0 queries asked, 6 from the cache)" in out.getvalue()


# -- a prompt of the researcher's own --------------------------------------------------------
def test_a_prompt_file_is_sent_and_versioned_by_its_text(fake_openai, batch, settings, tmp_path):
    prompt_file = tmp_path / "prompt.txt"
    prompt_file.write_text("Label the query: n, f, m or o.\n---\nQuery: {query}\n")
    settings.PRELABEL_PROMPT_FILE = str(prompt_file)
    first = prelabel_batch(batch, "openai")
    assert first.prompt_version.startswith("custom-") and first.prompt_version != chat_answers.PROMPT_VERSION
    assert {r["messages"][0]["content"] for r in fake_openai.requests} == {"Label the query: n, f, m or o."}
    # Editing the prompt makes a new version: its labels sit beside the old ones, the cache is not reused.
    prompt_file.write_text("Label the query with one letter: n, f, m or o.\n---\nQuery: {query}\n")
    second = prelabel_batch(batch, "openai")
    assert second.prompt_version != first.prompt_version and second.usage.cached_queries == 0
    assert set(PreLabel.objects.values_list("prompt_version", flat=True)) == {
        first.prompt_version,
        second.prompt_version,
    }


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("no separator at all", "a line ---"),
        ("system\n---\nno placeholder", "{query}"),
        ("system\n---\nQuery: {query} and {other}", "no placeholder but"),
    ],
)
def test_a_bad_prompt_file_is_refused_with_its_name(fake_openai, batch, settings, tmp_path, text, problem):
    prompt_file = tmp_path / "prompt.txt"
    prompt_file.write_text(text)
    settings.PRELABEL_PROMPT_FILE = str(prompt_file)
    with pytest.raises(ServiceError, match=f"PRELABEL_PROMPT_FILE {prompt_file}.*{re.escape(problem)}"):
        prelabel_batch(batch, "openai")
    assert not fake_openai.requests and not PreLabel.objects.exists()
