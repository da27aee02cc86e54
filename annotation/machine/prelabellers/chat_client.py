"""The chat pre-labeller's client of an OpenAI-compatible ``POST {base}/chat/completions``.

Calls go through the project's one HTTP client (:class:`core.http.JsonClient`: bounded answers, no
redirects, so the key stays with the endpoint; 429, 5xx, lost responses and non-JSON answers retried, as
repeating a completion only costs); other 4xx and JSON of the wrong shape raise
:class:`~.interface.PreLabelError` at once. Servers that refuse or ignore parts of the request:
:class:`ChatClient` and docs/prelabelling.md, "llama.cpp's own server". Pure: no Django.
"""

from __future__ import annotations

import dataclasses
import re
import threading
import time
import urllib.parse
from dataclasses import KW_ONLY, dataclass
from typing import Any

from annotation.machine.prelabellers.chat_answers import (
    ANSWER_FORMATS,
    DEFAULT_PROMPT,
    MAX_ANSWER_CHARS,
    Prompt,
    Sampled,
    messages,
    read_choices,
    response_format,
    settled,
)
from annotation.machine.prelabellers.interface import PreLabelError
from core.connection_kinds import CHAT_TOKEN_LIMIT_FIELDS
from core.http import HttpError, JsonClient, Transport

#: Alternatives asked for at each token (the API allows 0 to 20): enough to hold the four labels and a stray.
DEFAULT_TOP_LOGPROBS = 5
#: The most tokens a label's answer may take (the request's cap): a label is a few tokens (docs/prelabelling.md).
DEFAULT_MAX_ANSWER_TOKENS = 16
#: The request fields that cap an answer's length (``max_tokens``, most servers; ``max_completion_tokens``,
#: OpenAI's reasoning models), declared once with the connection's field.
TOKEN_LIMIT_FIELDS = CHAT_TOKEN_LIMIT_FIELDS


#: The most slots believed from a server's ``/props`` (a larger figure is a broken answer).
MAX_SLOTS = 1024
#: A 400 that names the field ``n`` (``Field 'n': Value must be between 1 <= value <= 1, but got 3``).
_N_REFUSED = re.compile(r"""(?:^|[^\w.])['"`]?n['"`]?\s*(?::|must|should|is|value)""", re.IGNORECASE)
_N_BOUND = re.compile(r"<=\s*(\d+)")


def refuses_n(text: str) -> int:
    """The most ``n`` an HTTP 400's text allows when it refuses the field ``n`` (its ``<= S``, else 1);
    0 when the text is about something else."""
    if not _N_REFUSED.search(text):
        return 0
    bound = _N_BOUND.search(text)
    return max(1, int(bound.group(1))) if bound else 1


class Slots:
    """The server's slots a client's calls hold (a call asking ``n`` answers holds ``n``, at most all)."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.free = total
        self._changed = threading.Condition()

    def acquire(self, count: int, timeout: float | None) -> bool:
        """Hold ``count`` slots (at most all), waiting up to ``timeout`` seconds; whether they were had."""
        count = min(count, self.total)
        with self._changed:
            if not self._changed.wait_for(lambda: self.free >= count, timeout=timeout):
                return False
            self.free -= count
            return True

    def release(self, count: int) -> None:
        with self._changed:
            self.free += min(count, self.total)
            self._changed.notify_all()


def wanted_limit_field(text: str, sent: str) -> str | None:
    """The other cap's field when an HTTP 400's text refuses the field ``sent`` and names the other one
    (OpenAI's "Use 'max_completion_tokens' instead"): the request is then sent again with it."""
    other = TOKEN_LIMIT_FIELDS[1 - TOKEN_LIMIT_FIELDS.index(sent)]
    return other if sent in text and other in text else None


@dataclass(eq=False, repr=False)  # no repr: the key stays out of tracebacks
class ChatClient(Transport):
    """An OpenAI-compatible endpoint at ``base_url`` (``.../v1/``); ``sleep`` injectable for tests.

    ``timeout`` bounds each attempt's reads, ``deadline`` one query's call in all (retries included),
    ``max_bytes`` an answer's size (:mod:`core.http`). What a server refuses (log-probabilities, the cap's
    field, ``n`` above a bound) is asked otherwise and remembered for the client's life; a server that
    ignores ``n`` is asked the missing answers one call each (``separate_calls``), only while
    log-probabilities do not settle the query."""

    base_url: str
    api_key: str
    model: str
    _: KW_ONLY
    timeout: float = 60.0
    deadline: float = 300.0
    max_bytes: int = 1_000_000
    prompt: Prompt = DEFAULT_PROMPT
    max_answer_chars: int = MAX_ANSWER_CHARS
    top_logprobs: int = DEFAULT_TOP_LOGPROBS
    max_answer_tokens: int = DEFAULT_MAX_ANSWER_TOKENS
    token_limit: str = TOKEN_LIMIT_FIELDS[0]
    answer_format: str = ANSWER_FORMATS[0]

    def __post_init__(self) -> None:
        if not self.model:
            raise PreLabelError("PRELABEL_MODEL is not set: name the model the endpoint serves")
        self.url = urllib.parse.urljoin(self.base_url.rstrip("/") + "/", "chat/completions")
        if not 0 <= self.top_logprobs <= 20:
            raise PreLabelError(f"PRELABEL_TOP_LOGPROBS: from 0 to 20 (the API's range), got {self.top_logprobs}")
        self.logprobs_refused = False
        tokens = self.max_answer_tokens
        if isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 1:
            raise PreLabelError(f"PRELABEL_MAX_ANSWER_TOKENS: at least 1 token, got {tokens!r}")
        for setting, value, allowed in (
            ("TOKEN_LIMIT_FIELD", self.token_limit, TOKEN_LIMIT_FIELDS),
            ("ANSWER_FORMAT", self.answer_format, ANSWER_FORMATS),
        ):
            if value not in allowed:
                raise PreLabelError(f"PRELABEL_{setting}: one of {', '.join(allowed)}, got {value!r}")
        self.response_format = response_format(self.answer_format)
        #: the answers' version (the cache's and the labels' key): the prompt's, and the format when
        #: structured, as constrained answers are drawn otherwise than free ones and are never mixed with them
        version = self.prompt.version
        self.prompt_version = version if self.response_format is None else f"{version}+{self.answer_format}"
        self.token_limit_switched = False
        self.format_refused = False  #: the server refused the answer format (``response_format``)
        self.n_ignored = False  #: the server answered fewer choices than ``n`` asked: it ignores ``n``
        self.separate_calls = 0  #: calls made for answers a server that ignores ``n`` did not give
        self.n_max: int | None = None  #: the most ``n`` the server allows (it refused more, or reports its slots)
        #: what the server refused and the client then asked otherwise (the Connections page's test reports it)
        self.refusals: list[str] = []
        self._state = threading.Lock()
        self._capacity: int | bool | None = False  # False: not asked yet
        self.slots: Slots | None = None
        try:
            self.transport = JsonClient(
                self.url,
                {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {},
                **self.transport_settings(),
            )
        except ValueError as exc:
            raise PreLabelError(f"PRELABEL_API_URL: {exc}") from None

    def capacity(self) -> int | None:
        """The server's slots (calls it answers at once), asked once: ``total_slots`` of ``GET /props``
        beside ``/v1/`` (``llama-server``); ``None`` when the server does not say (OpenAI: 404)."""
        with self._state:
            if self._capacity is not False:
                return self._capacity  # type: ignore[return-value]
        slots = None
        parts = urllib.parse.urlsplit(self.url)
        at = parts.path.rfind("/v1/")
        props = None if at < 0 else urllib.parse.urlunsplit((*parts[:2], parts.path[: at + 1] + "props", "", ""))
        if props is not None:
            try:
                once = dataclasses.replace(self.transport, max_attempts=1)  # a question, not worth retrying
                answer = once.request("GET", props, deadline=min(self.deadline, 10.0))
            except (HttpError, ValueError):
                answer = None
            value = answer.get("total_slots") if isinstance(answer, dict) else None
            if isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= MAX_SLOTS:
                slots = value
        with self._state:
            self._capacity = slots
            if slots is not None:
                self.slots = Slots(slots)
                self.n_max = slots if self.n_max is None else min(self.n_max, slots)
        return slots

    def complete(self, body: dict, *, deadline: float | None = None) -> dict:
        """One chat completion, retried; ``deadline`` shortens the call's. On a server that reports its
        slots the call first holds ``n`` of them (waiting at most ``deadline``), its deadline counting from then."""
        slots = self.slots
        if slots is None:
            return self._complete(body, deadline=deadline)
        need = max(1, int(body.get("n", 1)))
        started = time.monotonic()
        if not slots.acquire(need, deadline):
            raise PreLabelError(
                f"chat completions: none of the server's {slots.total} slots came free within the deadline",
                upstream=True,
            )
        try:
            left = None if deadline is None else deadline - (time.monotonic() - started)
            return self._complete(body, deadline=left)
        finally:
            slots.release(need)

    def _complete(self, body: dict, *, deadline: float | None = None) -> dict:
        try:
            answer = self.transport.request("POST", self.url, body, deadline=deadline)
        except HttpError as exc:
            if exc.kind == "refused":
                error = PreLabelError(f"chat completions: HTTP {exc.status}: {exc.text[:300]}", exc.status)
            else:
                # What the server said (llama-cpp-python: a 500 naming the field).
                said = f" ({' '.join(exc.text.split())[:300]})" if exc.text else ""
                error = PreLabelError(f"chat completions: {exc}{said}", exc.status, upstream=True)
            error.http = exc  # type: ignore[attr-defined]  # the transport's own account (the Connections page's test)
            raise error from None
        if not isinstance(answer, dict):
            raise PreLabelError("chat completions: an answer that is not a JSON object", 502)
        return answer

    def sample(self, query: str, k: int, temperature: float, *, deadline: float | None = None) -> Sampled:
        """``k`` answers to the prompt for ``query``, with log-probabilities when asked for and given;
        ``deadline`` (seconds) bounds the whole query, however many calls it takes."""
        result = Sampled([])
        ends = None if deadline is None else time.monotonic() + deadline
        ask_logprobs = bool(self.top_logprobs) and not self.logprobs_refused
        refused = False
        limit = self.token_limit
        while len(result.answers) < k:
            if result.answers and (self.n_ignored or self.n_max is not None) and settled(result.answers):
                break  # a further call, and the answers' log-probabilities already settle the query
            wanted = k - len(result.answers)
            n = min(wanted, self.n_max or wanted)
            body: dict[str, Any] = {
                "model": self.model,
                "messages": messages(query, self.prompt),
                "temperature": temperature,
                limit: self.max_answer_tokens,  # a label is a few tokens: every request caps the answer
            }
            if self.response_format is not None:
                body["response_format"] = self.response_format
            if n > 1 and not self.n_ignored:
                body["n"] = n
            if ask_logprobs:
                body |= {"logprobs": True, "top_logprobs": self.top_logprobs}
            left = None if ends is None else ends - time.monotonic()
            if left is not None and left <= 0:
                raise PreLabelError("chat completions: the job's deadline passed", upstream=True)
            try:
                answer = self.complete(body, deadline=left)
            except PreLabelError as exc:
                if exc.status == 400 and "n" in body and (most := refuses_n(str(exc))):  # llama-server: n > its slots
                    with self._state:
                        self.n_max = min(most, self.n_max or most, body["n"] - 1)
                        self.refusals.append(f"n = {body['n']} (asked again with at most {self.n_max}: {exc})")
                    continue
                if exc.status == 400 and (other := wanted_limit_field(str(exc), limit)):  # the server wants it
                    with self._state:
                        self.token_limit, self.token_limit_switched = other, True
                        self.refusals.append(f"{limit} (asked again with {other})")
                    limit = other
                    continue
                if self.response_format is not None and exc.status and "response_format" in str(exc):
                    self.format_refused = True  # every query would be refused alike: the job stops
                    raise PreLabelError(
                        f"the server refused PRELABEL_ANSWER_FORMAT={self.answer_format} ({exc}); set the "
                        f"format it accepts ({', '.join(ANSWER_FORMATS)}) on the Connections page or in the environment",
                        exc.status,
                    ) from None
                if exc.status == 400 and ask_logprobs:  # perhaps an endpoint that refuses them: ask without
                    ask_logprobs = False
                    refused = True
                    continue
                raise
            if refused and not self.logprobs_refused:  # the same call without them was answered: not asked again
                self.logprobs_refused = True
                self.refusals.append("log-probabilities (asked again without them)")
            contents, prompt_tokens, completion_tokens = read_choices(answer, self.max_answer_chars)
            result.requests += 1
            result.prompt_tokens += prompt_tokens
            result.completion_tokens += completion_tokens
            if not contents:
                raise PreLabelError("chat completions: an answer with no choices", 502)
            if result.answers:  # a call for answers the first did not give
                with self._state:
                    self.separate_calls += 1
            if len(contents) < n:  # fewer choices than n: a server that ignores it (llama-cpp-python's)
                with self._state:
                    self.n_ignored = True
            result.answers += contents[:n]
        return result
