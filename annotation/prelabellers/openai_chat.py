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
import http.client
import json
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Protocol

from core.backoff import backoff_delay, retry_after_seconds

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


class ChatClient:
    """An OpenAI-compatible endpoint at ``base_url`` (``.../v1/``); ``sleep`` injectable for tests."""

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
        self.sleep = sleep
        self.prompt = prompt

    def complete(self, body: dict) -> dict:
        """One chat completion, retried (see the module docstring)."""
        data = json.dumps(body).encode()
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        for attempt in range(1, self.max_attempts + 1):
            request = urllib.request.Request(self.url, data=data, method="POST", headers=headers)
            retry_after = None
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as response:
                    raw = response.read()
                answer = json.loads(raw)
                if isinstance(answer, dict) and isinstance(answer.get("choices"), list):
                    return answer
                error = PreLabelError(f"chat completions: no choices in the answer after {attempt} attempts", 502)
            except urllib.error.HTTPError as exc:
                status = exc.code
                text = exc.read().decode("utf-8", "replace")[:300]
                if status != 429 and status < 500:
                    raise PreLabelError(f"chat completions: HTTP {status}: {text}", status) from None
                retry_after = retry_after_seconds(exc.headers.get("Retry-After"))
                error = PreLabelError(f"chat completions: HTTP {status} after {attempt} attempts", status)
            except (urllib.error.URLError, http.client.HTTPException, ConnectionError, TimeoutError) as exc:
                error = PreLabelError(f"chat completions: no answer after {attempt} attempts ({exc})", upstream=True)
            except ValueError:  # not JSON
                error = PreLabelError(f"chat completions: an answer that is not JSON after {attempt} attempts", 502)
            if attempt == self.max_attempts:
                raise error
            self.sleep(backoff_delay(attempt, retry_after, base=self.base_delay, cap=self.max_delay))
        raise AssertionError("unreachable")

    def sample(self, query: str, k: int, temperature: float) -> Sampled:
        """``k`` answers to the prompt for ``query`` (``n=k``; asked again if fewer came back)."""
        result = Sampled([])
        while len(result.answers) < k:
            body = {"model": self.model, "messages": messages(query, self.prompt), "temperature": temperature}
            if k - len(result.answers) > 1:
                body["n"] = k - len(result.answers)
            answer = self.complete(body)
            result.requests += 1
            usage = answer.get("usage") or {}
            result.prompt_tokens += int(usage.get("prompt_tokens") or 0)
            result.completion_tokens += int(usage.get("completion_tokens") or 0)
            choices = answer["choices"][: k - len(result.answers)]
            if not choices:
                raise PreLabelError("chat completions: an answer with no choices", 502)
            result.answers += [(choice.get("message") or {}).get("content") for choice in choices]
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
