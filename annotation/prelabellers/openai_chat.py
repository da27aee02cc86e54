"""The chat pre-labeller: any OpenAI-compatible chat-completions endpoint, k samples voted.

Each query is sent with a versioned prompt (:class:`Prompt`: the built-in one below,
:data:`PROMPT_VERSION`, or a researcher's own from a file, versioned by its text) as ``POST {base}/chat/completions`` with ``{model, messages,
temperature, n}``; the answers are ``choices[].message.content`` and the cost is read from
``usage.prompt_tokens`` / ``usage.completion_tokens`` at the configured prices (USD per
million tokens). A server that returns fewer choices than ``n`` is asked again for the rest.

Votes. Each answer is read as a label (a code ``n``/``f``/``m``/``o`` or a category slug,
quotes and a final full stop ignored); anything else is *unparseable*: counted, never
guessed, and left out of the vote. The label is the most voted one (ties: the first in
the labels' order n, f, m, o); its confidence is its share of **all** k answers, so
unparseable answers lower it. A query with no parseable answer gets no label.

Cache. Answers are kept per (model, prompt version, query text) in an :class:`AnswerCache`
(the service gives one over the database): a rerun asks for nothing, and asking for more
samples asks only for the missing ones. The cache is used from the calling thread only.

Transport. Calls run in a small thread pool (``concurrency``). A 429 or a 5xx answer, a
connection that breaks or times out before an answer (a lost response), and an answer
that is not JSON are retried with exponential back-off, honouring ``Retry-After``, up to
``max_attempts``; repeating a completion is safe (it only costs). Other 4xx answers raise
:class:`~annotation.prelabellers.base.PreLabelError`. Pure: no Django.
"""

from __future__ import annotations

import hashlib
import time
import urllib.parse
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Protocol

from core.http import HttpError, JsonClient

from ..labels import LABELS, label_code
from .base import Prediction, PreLabelError, PreLabeller, register

PROMPT_VERSION = "gender-v1"
SYSTEM_PROMPT = """\
You label web search queries by the gender they refer to, for a study of gender bias in search.
Answer with exactly one letter:
n - non-gendered: the query does not refer to any gender; it could be about anyone, or about no person at all.
f - female: the query is about women or girls, or about something that concerns only females.
m - male: the query is about men or boys, or about something that concerns only males.
o - other: the query refers to more than one gender, or to a gender other than female or male.
Examples: "what is a synapse" n; "how long is a pregnancy" f; "what age do men go bald" m; \
"do boys or girls learn faster" o.
Answer with the letter only."""
USER_TEMPLATE = "Query: {query}"
#: SHA-256 of the prompt of each version (a test checks the prompt still matches its version).
PROMPT_SHA256 = hashlib.sha256(f"{SYSTEM_PROMPT}\n\n{USER_TEMPLATE}".encode()).hexdigest()


#: The line that separates the system prompt from the user template in a prompt file.
PROMPT_SEPARATOR = "---"


@dataclass(frozen=True)
class Prompt:
    """A versioned prompt: the system message, the user message (``{query}`` in it) and the version.

    The built-in one is :data:`DEFAULT_PROMPT`. A researcher's own (:meth:`from_text`, the
    ``PRELABEL_PROMPT_FILE`` setting) is versioned by its text, ``custom-<sha256[:12]>``: edit
    the file and its labels and cached answers are new ones, kept beside the old.
    """

    system: str
    user: str
    version: str

    @property
    def sha256(self) -> str:
        return hashlib.sha256(f"{self.system}\n\n{self.user}".encode()).hexdigest()

    @classmethod
    def from_text(cls, text: str) -> Prompt:
        """``system prompt``, a line ``---``, ``user template with {query}``; refused with a clear message."""
        lines = text.replace("\r\n", "\n").split("\n")
        if PROMPT_SEPARATOR not in (line.strip() for line in lines):
            raise ValueError(f"a prompt file is the system prompt, a line {PROMPT_SEPARATOR}, then the user template")
        at = next(i for i, line in enumerate(lines) if line.strip() == PROMPT_SEPARATOR)
        system, user = "\n".join(lines[:at]).strip(), "\n".join(lines[at + 1 :]).strip()
        if not system or "{query}" not in user:
            raise ValueError("a prompt file needs a system prompt and a user template containing {query}")
        try:
            user.format(query="")
        except (KeyError, IndexError, ValueError) as exc:
            raise ValueError(f"the user template may hold no placeholder but {{query}} ({exc})") from None
        draft = cls(system, user, "")
        return cls(system, user, f"custom-{draft.sha256[:12]}")


DEFAULT_PROMPT = Prompt(SYSTEM_PROMPT, USER_TEMPLATE, PROMPT_VERSION)


def messages(query: str, prompt: Prompt = DEFAULT_PROMPT) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": prompt.system},
        {"role": "user", "content": prompt.user.format(query=query)},
    ]


def parse_answer(content: Any) -> str | None:
    """The label an answer names, or ``None`` (unparseable)."""
    if not isinstance(content, str):
        return None
    text = content.strip().strip("\"'`*").strip().rstrip(".").strip().strip("\"'`*").strip()
    return label_code(text) if text else None


def vote(answers: Sequence[Any]) -> Prediction:
    """The most voted label and its share of all answers (see the module docstring)."""
    parsed = [parse_answer(answer) for answer in answers]
    counts = Counter(code for code in parsed if code)
    unparseable = sum(code is None for code in parsed)
    detail = {"votes": {c: counts[c] for c in LABELS if counts[c]}, "unparseable": unparseable, "samples": len(parsed)}
    if not counts:
        return Prediction(None, 0.0, detail)
    best = max(LABELS, key=lambda code: (counts[code], -LABELS.index(code)))
    return Prediction(best, counts[best] / len(parsed), detail)


@dataclass
class Sampled:
    """Answers of one query and what they cost."""

    answers: list[Any]
    prompt_tokens: int = 0
    completion_tokens: int = 0
    requests: int = 0


#: The largest token count believed from one answer's ``usage`` (a number beyond it is a broken answer).
MAX_TOKENS = 10**9
#: An answer longer than this is kept (cached, voted) as the label it names, or as unparseable.
MAX_ANSWER_CHARS = 200


def _tokens(usage: Any, key: str) -> int:
    """A token count of ``usage`` (absent: 0), or a PreLabelError for a count no endpoint sends."""
    value = usage.get(key, 0) if isinstance(usage, dict) else 0
    if value is None:
        return 0
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_TOKENS:
        raise PreLabelError(
            f"chat completions: an answer with usage.{key} = {str(value)[:40]!r}, not a token count", 502
        )
    return value


def bounded_answer(content: Any) -> str | None:
    """What is kept of one answer: itself when short, else the label it names (``None``: unparseable)."""
    if not isinstance(content, str):
        return None
    return content if len(content) <= MAX_ANSWER_CHARS else parse_answer(content)


def read_choices(answer: Any) -> tuple[list[str | None], int, int]:
    """The answers and the prompt and completion tokens of one chat completion, or a PreLabelError
    saying what is wrong with it (valid JSON of another shape is a clear error, never a raw one)."""
    if not isinstance(answer, dict) or not isinstance(answer.get("choices"), list):
        raise PreLabelError("chat completions: an answer without a list of choices", 502)
    contents = []
    for choice in answer["choices"]:
        message = choice.get("message") if isinstance(choice, dict) else None
        if not isinstance(message, dict):
            raise PreLabelError("chat completions: an answer whose choice has no message object", 502)
        contents.append(bounded_answer(message.get("content")))
    usage = answer.get("usage") or {}
    return contents, _tokens(usage, "prompt_tokens"), _tokens(usage, "completion_tokens")


class ChatClient:
    """An OpenAI-compatible endpoint at ``base_url`` (``.../v1/``); ``sleep`` injectable for tests.

    ``timeout`` bounds each attempt's reads, ``deadline`` one query's call in all (retries
    included), ``max_bytes`` an answer's size (see :mod:`core.http`).
    """

    def __init__(
        self,
        base_url: str,
        api_key: str,
        model: str,
        *,
        max_attempts: int = 6,
        base_delay: float = 0.5,
        max_delay: float = 30.0,
        timeout: float = 60.0,
        deadline: float = 300.0,
        max_bytes: int = 1_000_000,
        sleep: Callable[[float], None] = time.sleep,
        prompt: Prompt = DEFAULT_PROMPT,
    ) -> None:
        if not model:
            raise PreLabelError("PRELABEL_MODEL is not set: name the model the endpoint serves")
        self.url = urllib.parse.urljoin(base_url.rstrip("/") + "/", "chat/completions")
        self.api_key = api_key
        self.model = model
        self.max_attempts = max_attempts
        self.base_delay = base_delay
        self.max_delay = max_delay
        self.timeout = timeout
        self.deadline = deadline
        self.max_bytes = max_bytes
        self.sleep = sleep
        self.prompt = prompt
        try:
            self.transport = JsonClient(
                self.url,
                {"Authorization": f"Bearer {api_key}"} if api_key else {},
                timeout=timeout,
                deadline=deadline,
                max_attempts=max_attempts,
                base_delay=base_delay,
                max_delay=max_delay,
                max_bytes=max_bytes,
                sleep=sleep,
            )
        except ValueError as exc:
            raise PreLabelError(f"PRELABEL_API_URL: {exc}") from None

    def complete(self, body: dict, *, deadline: float | None = None) -> dict:
        """One chat completion, retried (see the module docstring); ``deadline`` shortens the call's."""
        try:
            answer = self.transport.request("POST", self.url, body, deadline=deadline)
        except HttpError as exc:
            if exc.kind == "refused":
                raise PreLabelError(f"chat completions: HTTP {exc.status}: {exc.text[:300]}", exc.status) from None
            raise PreLabelError(f"chat completions: {exc}", exc.status, upstream=True) from None
        if not isinstance(answer, dict):
            raise PreLabelError("chat completions: an answer that is not a JSON object", 502)
        return answer

    def sample(self, query: str, k: int, temperature: float, *, deadline: float | None = None) -> Sampled:
        """``k`` answers to the prompt for ``query`` (``n=k``; asked again if fewer came back).

        ``deadline`` (seconds) bounds the whole query, however many calls it takes."""
        result = Sampled([])
        ends = None if deadline is None else time.monotonic() + deadline
        while len(result.answers) < k:
            body = {"model": self.model, "messages": messages(query, self.prompt), "temperature": temperature}
            if k - len(result.answers) > 1:
                body["n"] = k - len(result.answers)
            left = None if ends is None else ends - time.monotonic()
            if left is not None and left <= 0:
                raise PreLabelError("chat completions: the job's deadline passed", upstream=True)
            contents, prompt_tokens, completion_tokens = read_choices(self.complete(body, deadline=left))
            result.requests += 1
            result.prompt_tokens += prompt_tokens
            result.completion_tokens += completion_tokens
            contents = contents[: k - len(result.answers)]
            if not contents:
                raise PreLabelError("chat completions: an answer with no choices", 502)
            result.answers += contents
        return result


class AnswerCache(Protocol):
    """Answers kept per (model, prompt version, query text)."""

    def get_many(self, model: str, prompt_version: str, texts: Sequence[str]) -> dict[str, Sampled]: ...

    def put(self, model: str, prompt_version: str, text: str, sampled: Sampled) -> None:
        """Keep ``sampled`` (all the answers known for ``text``, with their total tokens)."""


class MemoryCache:
    def __init__(self) -> None:
        self.entries: dict[tuple[str, str, str], Sampled] = {}

    def get_many(self, model: str, prompt_version: str, texts: Sequence[str]) -> dict[str, Sampled]:
        return {
            t: self.entries[(model, prompt_version, t)] for t in texts if (model, prompt_version, t) in self.entries
        }

    def put(self, model: str, prompt_version: str, text: str, sampled: Sampled) -> None:
        self.entries[(model, prompt_version, text)] = sampled


@register("openai")
class ChatPreLabeller(PreLabeller):
    prompt_version = PROMPT_VERSION

    def __init__(
        self,
        client: ChatClient,
        *,
        samples: int = 5,
        temperature: float = 1.0,
        concurrency: int = 4,
        cache: AnswerCache | None = None,
        prompt_price: Decimal = Decimal("0"),
        completion_price: Decimal = Decimal("0"),
    ) -> None:
        super().__init__()
        if samples < 1:
            raise ValueError("samples must be at least 1")
        if not temperature > 0:
            raise ValueError("temperature must be above 0: the samples are meant to differ")
        self.client = client
        self.model = client.model
        self.prompt_version = client.prompt.version
        self.samples = samples
        self.temperature = temperature
        self.concurrency = max(1, concurrency)
        self.cache = cache if cache is not None else MemoryCache()
        self.prompt_price = Decimal(prompt_price)
        self.completion_price = Decimal(completion_price)

    def _spend(self, sampled: Sampled) -> None:
        self.usage.requests += sampled.requests
        self.usage.prompt_tokens += sampled.prompt_tokens
        self.usage.completion_tokens += sampled.completion_tokens
        self.usage.cost += (
            sampled.prompt_tokens * self.prompt_price + sampled.completion_tokens * self.completion_price
        ) / 1_000_000

    def label(self, queries: Sequence[tuple[str, str]]) -> list[Prediction]:
        texts = list(dict.fromkeys(text for _, text in queries))
        known = self.cache.get_many(self.model, self.prompt_version, texts)
        missing = {t: self.samples - len(known[t].answers) if t in known else self.samples for t in texts}
        missing = {t: n for t, n in missing.items() if n > 0}
        self.usage.cached_queries += len(texts) - len(missing)
        self.usage.sampled_queries += len(missing)
        failure: BaseException | None = None
        if missing:
            with ThreadPoolExecutor(max_workers=min(self.concurrency, len(missing))) as pool:
                futures = {t: pool.submit(self.client.sample, t, n, self.temperature) for t, n in missing.items()}
                for text, future in futures.items():  # collected in this thread: the cache is not shared
                    try:
                        sampled = future.result()
                    except PreLabelError as exc:
                        failure = failure or exc
                        continue
                    self._spend(sampled)
                    before = known.get(text, Sampled([]))
                    merged = Sampled(
                        before.answers + sampled.answers,
                        before.prompt_tokens + sampled.prompt_tokens,
                        before.completion_tokens + sampled.completion_tokens,
                        before.requests + sampled.requests,
                    )
                    self.cache.put(self.model, self.prompt_version, text, merged)
                    known[text] = merged
        if failure is not None:  # what was answered is cached: a rerun asks only for the rest
            raise failure
        predictions = {t: vote(known[t].answers[: self.samples]) for t in texts}
        for prediction in predictions.values():
            self.usage.unparseable += prediction.detail["unparseable"]
        return [predictions[text] for _, text in queries]
