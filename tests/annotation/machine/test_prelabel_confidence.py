"""The chat labeller's confidence, fine enough to rank (issue 39.2): log-probabilities read into a
distribution over the labels (hand-checked), votes smoothed, and the second draw of queries
answered without log-probabilities, counted at the fake over real HTTP (throttling, 5xx, lost
answers, a budget, a rerun that asks for nothing, an endpoint that ignores or refuses logprobs)."""

from __future__ import annotations

import math

import pytest

from annotation.machine.prelabellers.chat_answers import (
    answer_content,
    distribution,
    read_top_logprobs,
    token_label,
    vote,
)
from annotation.machine.prelabellers.chat_client import ChatClient
from annotation.machine.prelabellers.interface import PreLabelStopped
from annotation.machine.prelabellers.openai_chat import ChatPreLabeller, MemoryCache
from annotation.machine.services.prelabels import DatabaseAnswerCache, _sha, prelabel_batch
from annotation.models import PreLabelAnswer
from tests.annotation.machine.openai_server import KEY, FakeOpenAI, serve
from tests.annotation.machine.test_prelabel import TEXT, batch, fake_openai, stored  # noqa: F401  (fixtures)

ln = math.log


# -- reading log-probabilities -----------------------------------------------------------------
@pytest.mark.parametrize(
    ("token", "label"),
    [
        ("f", "f"),
        (" F", "f"),
        ("Female", "f"),
        (' "m', "m"),
        ("n.", "n"),
        ("Non", "n"),  # the first token of "Non-gendered"
        (" Fem", "f"),
        ("mal", "m"),  # a prefix of "male" only ("female" does not start with it)
        ("Oth", "o"),
        ("Other", "o"),
        ("no", None),  # too short to be read as a prefix: "no" is a word
        ("fe", None),
        ("The", None),
        (" ", None),
        ("**", None),
        (None, None),
    ],
)
def test_a_token_is_read_as_a_label_robustly(token, label):
    assert token_label(token) == label


def _position(token, logprob, top):
    return {
        "token": token,
        "logprob": logprob,
        "bytes": [],
        "top_logprobs": [{"token": t, "logprob": lp} for t, lp in top],
    }


def test_the_labels_token_is_the_first_that_is_more_than_formatting():
    logprobs = {
        "content": [
            _position(" ", 0.0, [(" ", 0.0)]),
            _position("**", -0.1, [("**", -0.1), ("f", -2.4)]),
            _position("f", -0.2, [("f", -0.2), ("m", -1.9), ("m", -5.0)]),  # a repeated token: its first listing
            _position("**", 0.0, []),
        ],
        "refusal": None,
    }
    assert read_top_logprobs(logprobs) == [["f", -0.2], ["m", -1.9]]
    # The token chosen is added when the alternatives do not list it; unusable entries are dropped.
    chosen_missing = {"content": [_position("m", -3.0, [("f", -0.1), ("n", float("nan")), ("o", 2.0), ("x", "1")])]}
    assert read_top_logprobs(chosen_missing) == [["f", -0.1], ["m", -3.0]]
    assert read_top_logprobs({"content": [_position("f", 1e-7, [("f", 1e-7), ("m", -9.0)])]}) == [
        ["f", 0.0],
        ["m", -9.0],
    ]  # rounding above 0


@pytest.mark.parametrize(
    "logprobs",
    [
        None,  # not asked, or a server that ignores logprobs
        {"content": None},
        {"content": "f"},
        {"content": [{"logprob": -0.1}]},  # no token
        {"content": [_position("f", 0.0, [])]},  # no alternative listed: no distribution
        {"content": []},
        [1, 2],
    ],
)
def test_logprobs_of_another_shape_leave_the_answer_plain(logprobs):
    assert read_top_logprobs(logprobs) is None


def test_a_distribution_by_hand():
    # Listed mass 0.6 + 0.1 + 0.2 + 0.05 = 0.95: renormalised over it; "The" names no label.
    answer = {"content": "f", "top": [["f", ln(0.6)], [" f", ln(0.1)], ["M", ln(0.2)], ["The", ln(0.05)]]}
    dist = distribution(answer)
    assert dist.p == pytest.approx({"n": 0.0, "f": 0.7 / 0.95, "m": 0.2 / 0.95, "o": 0.0})
    assert dist.unknown == pytest.approx(0.05 / 0.95)
    assert distribution({**answer, "content": "The query is about women"}) is None  # its text names no label
    assert distribution({"content": "f", "top": [["The", -0.1], ["I", -2.0]]}) is None  # no label listed
    assert distribution("f") is None  # a plain answer


def test_the_confidence_is_the_mean_distribution_by_hand():
    answers = [
        {"content": "f", "top": [["f", ln(0.8)], ["m", ln(0.2)]]},  # f .8, m .2
        {"content": "f", "top": [["f", ln(0.5)], ["o", ln(0.25)], ["I", ln(0.25)]]},  # f .5, o .25, unknown .25
        "m",  # cached before log-probabilities: m for certain
        "maybe",  # unparseable: no label, counts against
    ]
    prediction = vote(answers)
    # f = (0.8 + 0.5) / 4, m = (0.2 + 1) / 4, o = 0.25 / 4, unknown = 0.25 / 4
    assert prediction.label == "f" and prediction.confidence == pytest.approx(0.325)
    assert prediction.detail["distribution"] == {"f": 0.325, "m": 0.3, "o": 0.0625}
    assert prediction.detail["unknown"] == 0.0625 and prediction.detail["logprob_answers"] == 2
    assert prediction.detail["basis"] == "logprobs" and prediction.detail["unparseable"] == 1


def test_votes_alone_are_smoothed_so_that_few_answers_rank_below_many():
    assert vote(["f"] * 3).confidence == pytest.approx(0.8)  # (3 + 1) / (3 + 2)
    assert vote(["f"] * 15 + ["m"]).confidence == pytest.approx(16 / 18)  # 15 of 16 ranks above 3 of 3
    assert vote(["f"] * 16).confidence == pytest.approx(17 / 18)
    assert vote(["??", "no"]).label is None


# -- over HTTP: the labeller with a memory cache -----------------------------------------------
@pytest.fixture
def fake():
    fake = FakeOpenAI()
    url, http = serve(fake)
    fake.url = url
    yield fake
    http.shutdown()


def labeller(fake, *, samples=3, max_samples=8, budget=None, concurrency=1, cache=None, **client_options):
    client = ChatClient(fake.url, KEY, fake.model, max_attempts=5, sleep=lambda s: None, **client_options)
    return ChatPreLabeller(
        client,
        samples=samples,
        max_samples=max_samples,
        budget=budget,
        concurrency=concurrency,
        cache=cache if cache is not None else MemoryCache(),
    )


QUERIES = [(str(i), f"query {i}") for i in range(6)]
#: Queries 0 and 1 split, the others are unanimous (the unscripted answer "n").
SPLIT = {"query 0": ["f", "f", "m"], "query 1": ["m", "o", "m"]}


def _asked(fake):
    """(query, n) of each request, in order."""
    return [(fake.query_of(r), r.get("n", 1)) for r in fake.requests]


def test_with_logprobs_one_call_per_query_settles_it(fake):
    fake.answers = dict(SPLIT)
    predictions = labeller(fake).label(QUERIES)
    assert _asked(fake) == [(text, 3) for _, text in QUERIES]  # no second draw
    assert all(r["logprobs"] is True and r["top_logprobs"] == 5 for r in fake.requests)
    assert [p.detail["basis"] for p in predictions] == ["logprobs"] * 6
    assert predictions[0].confidence == pytest.approx(2 / 3)


def test_without_logprobs_each_query_is_drawn_to_the_maximum_in_a_second_call(fake):
    fake.logprobs = "ignore"  # a server that does not implement them
    fake.answers = dict(SPLIT)
    chat = labeller(fake, samples=3, max_samples=8)
    predictions = chat.label(QUERIES)
    asked = _asked(fake)
    assert asked[:6] == [(text, 3) for _, text in QUERIES]
    # The second draw: the most confident first (the unanimous 0.8 before the split 0.6), 5 more each.
    assert asked[6:] == [(f"query {i}", 5) for i in (2, 3, 4, 5, 0, 1)]
    assert [p.detail["samples"] for p in predictions] == [8] * 6
    assert [p.detail["basis"] for p in predictions] == ["votes"] * 6
    # query 0 cycles f, f, m: 6 f of 8, (6 + 1) / 10; query 1 m, o, m: 5 m of 8; the others 8 of 8.
    assert [(p.label, p.confidence) for p in predictions] == [("f", 0.7), ("m", 0.6)] + [("n", 0.9)] * 4
    assert chat.usage.requests == 12 and chat.usage.answers == 48 and chat.usage.logprob_answers == 0


def test_the_budget_bounds_the_second_draw_and_a_rerun_asks_for_nothing(fake):
    fake.logprobs = "ignore"
    fake.answers = dict(SPLIT)
    cache = MemoryCache()
    # 6 queries × 5 answers = 30; the first draws hold 18: 12 left, room for two draws of 5.
    first = labeller(fake, samples=3, max_samples=8, budget=5, cache=cache).label(QUERIES)
    assert _asked(fake)[6:] == [("query 2", 5), ("query 3", 5)]
    assert sum(len(s.answers) for s in cache.entries.values()) == 28 <= 30
    assert [p.confidence for p in first] == [pytest.approx(0.6)] * 2 + [0.9, 0.9, 0.8, 0.8]
    requests = len(fake.requests)
    again = labeller(fake, samples=3, max_samples=8, budget=5, cache=cache).label(QUERIES)
    assert len(fake.requests) == requests and again == first  # decided from the answers held: nothing asked
    # A larger budget draws the rest, and only the rest.
    labeller(fake, samples=3, max_samples=8, budget=8, cache=cache).label(QUERIES)
    assert _asked(fake)[requests:] == [("query 4", 5), ("query 5", 5), ("query 0", 5), ("query 1", 5)]


def test_faults_in_either_draw_are_retried_and_change_nothing(fake):
    fake.logprobs = "ignore"
    fake.answers = dict(SPLIT)
    clean = labeller(fake).label(QUERIES)
    clean_requests = len(fake.requests)
    other = FakeOpenAI(answers=dict(SPLIT), logprobs="ignore")
    url, http = serve(other)
    other.url = url
    try:
        # The first draw's second call is throttled, the second draw's calls meet a 500, a lost
        # answer, a non-JSON answer and a 429 without Retry-After.
        other.faults = ["", "throttle", "", "", "", "", "", "error", "lose", "", "garbage", "throttle_bare"]
        faulty = labeller(other).label(QUERIES)
    finally:
        http.shutdown()
    assert faulty == clean
    assert len(other.requests) == clean_requests + 5  # one more request per fault


def test_a_stop_between_the_draws_keeps_the_first_answers_and_a_rerun_asks_only_the_second(fake):
    fake.logprobs = "ignore"
    cache = MemoryCache()
    fake.faults = [""] * 6 + ["error"] * 10  # the first draws answered; then every call fails
    chat = labeller(fake, cache=cache)
    chat.max_consecutive_failures = 2
    with pytest.raises(PreLabelStopped, match="stopped: 2 queries in a row failed") as caught:
        chat.label(QUERIES)
    assert [p.confidence for p in caught.value.partial] == [0.8] * 6  # first answers kept: 3 of 3
    assert "4 not asked" in str(caught.value)
    requests = len(fake.requests)
    labeller(fake, cache=cache).label(QUERIES)
    assert [n for _, n in _asked(fake)[requests:]] == [5] * 6  # only the second draws


def test_an_endpoint_that_refuses_logprobs_is_asked_without_them(fake):
    fake.logprobs = "refuse"
    fake.answers = dict(SPLIT)
    chat = labeller(fake, max_samples=3)
    predictions = chat.label(QUERIES)
    assert len(fake.refused) == 1 and fake.refused[0]["logprobs"] is True  # asked once, then never again
    assert chat.client.logprobs_refused and not any("logprobs" in r for r in fake.requests)
    assert [p.detail["basis"] for p in predictions] == ["votes"] * 6 and len(fake.requests) == 6
    assert predictions[0].confidence == pytest.approx(0.6)  # (2 + 1) / (3 + 2)


def test_a_400_for_another_reason_does_not_switch_logprobs_off(fake):
    chat = labeller(fake, max_samples=3)
    fake.model = "another-model"  # the client's model is not served: refused with or without log-probabilities
    with pytest.raises(PreLabelStopped, match="HTTP 400"):
        chat.label(QUERIES[:1])
    assert [("logprobs" in r) for r in fake.refused] == [True, False] and not chat.client.logprobs_refused


def test_logprobs_can_be_switched_off(fake):
    labeller(fake, max_samples=3, top_logprobs=0).label(QUERIES[:1])
    assert "logprobs" not in fake.requests[0] and "top_logprobs" not in fake.requests[0]


def test_many_more_distinct_confidences_than_five_votes_give(fake):
    """A fake model whose answers vary: query i is answered f with probability p_i (40 values)."""
    queries = [(str(i), f"query {i}") for i in range(40)]
    shares = [0.5 + 0.49 * i / 39 for i in range(40)]
    for (_, text), p in zip(queries, shares, strict=True):
        # Its first token's distribution, and sampled answers in proportion (f for the first round(16 p) of 16).
        top = {"f": ln(p), "m": ln(1 - p)}
        script = ["f"] * round(16 * p) + ["m"] * (16 - round(16 * p))
        fake.answers[text] = [{"content": a, "top": top} for a in script]
    with_logprobs = labeller(fake, samples=3, max_samples=16).label(queries)
    assert len({p.confidence for p in with_logprobs}) == 40
    assert [p.confidence for p in with_logprobs] == pytest.approx(shares)  # the model's own probabilities

    fake.logprobs = "ignore"
    fake.turns.clear()
    five = {p.confidence for p in labeller(fake, samples=5, max_samples=5).label(queries)}
    fake.turns.clear()
    sixteen = {p.confidence for p in labeller(fake, samples=3, max_samples=16).label(queries)}
    assert len(five) <= 3  # 3, 4 or 5 votes of 5 (f leads in the first five answers)
    assert len(sixteen) >= 8  # 8 to 16 votes of 16


# -- through the service: older cached answers are used -----------------------------------------
def test_answers_cached_before_logprobs_are_still_used(fake_openai, batch, settings):  # noqa: F811
    text = TEXT["102"]
    PreLabelAnswer.objects.create(
        model=fake_openai.model, prompt_version="gender-v2", text_sha256=_sha(text), text=text, answers=["f"] * 3
    )
    settings.PRELABEL_MAX_SAMPLES = 3
    prelabel_batch(batch, "openai")
    assert text not in [fake_openai.query_of(r) for r in fake_openai.requests]  # answered from the cache
    assert stored(batch)["102"] == ("f", pytest.approx(0.8))  # votes: 3 of 3
    settings.PRELABEL_MAX_SAMPLES = 5
    prelabel_batch(batch, "openai")  # its answers had no log-probabilities: two more are drawn, with them
    assert [r["n"] for r in fake_openai.requests if fake_openai.query_of(r) == text] == [2]
    kept = PreLabelAnswer.objects.get(text=text).answers
    assert kept[:3] == ["f"] * 3 and [answer_content(a) for a in kept[3:]] == ["n", "n"]
    assert stored(batch)["102"] == ("f", pytest.approx(0.6))  # f f f (certain) n n (logprob 0): 3 / 5
    assert len(fake_openai.requests) == 5 + 1  # the other queries were settled by their first draw


def test_the_database_cache_keeps_answers_with_their_logprobs(fake_openai, batch):  # noqa: F811
    fake_openai.answers = {TEXT["103"]: [{"content": "m", "top": {"m": ln(0.7), "f": ln(0.2), " o": ln(0.1)}}]}
    prelabel_batch(batch, "openai")
    row = DatabaseAnswerCache().get_many(fake_openai.model, "gender-v2", [TEXT["103"]])[TEXT["103"]]
    assert row.answers[0] == {"content": "m", "top": [["m", ln(0.7)], ["f", ln(0.2)], [" o", ln(0.1)]]}
    assert stored(batch)["103"] == ("m", pytest.approx(0.7))


def test_the_command_says_what_was_drawn_within_the_sites_budget(fake_openai, batch, settings):  # noqa: F811
    from io import StringIO

    from django.core.management import call_command

    fake_openai.logprobs = "ignore"
    settings.PRELABEL_MAX_SAMPLES = 8
    settings.PRELABEL_SAMPLE_BUDGET = 3.5  # 6 × 3.5 = 21 answers: the first draws hold 18, no second draw of 5 fits
    out = StringIO()
    call_command("prelabel", batch.name, "--labeller", "openai", stdout=out)
    assert "Answers drawn: 18 (0 with log-probabilities); 3.0 per query asked" in out.getvalue()
    settings.PRELABEL_SAMPLE_BUDGET = 16
    out = StringIO()
    call_command("prelabel", batch.name, "--labeller", "openai", stdout=out)
    assert "Answers drawn: 30 (0 with log-probabilities); 5.0 per query asked" in out.getvalue()
    assert set(stored(batch).values()) == {("n", 0.9)}  # 8 of 8


@pytest.mark.parametrize(("value", "problem"), [("21", "a whole number of at most 20"), ("-1", "at least 0")])
def test_top_logprobs_outside_the_apis_range_is_refused_at_start(monkeypatch, value, problem):
    from config.env import env_int

    monkeypatch.setenv("PRELABEL_TOP_LOGPROBS", value)
    from django.core.exceptions import ImproperlyConfigured

    with pytest.raises(ImproperlyConfigured, match=f"PRELABEL_TOP_LOGPROBS.*{problem}"):
        env_int("PRELABEL_TOP_LOGPROBS", 5, minimum=0, maximum=20)
