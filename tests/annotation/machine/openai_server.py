"""A small OpenAI-compatible chat-completions server on loopback, for the chat pre-labeller.

``POST /v1/chat/completions`` with ``{model, messages, temperature, n, logprobs, top_logprobs}`` answers
``{id, object, created, model, choices: [{index, message: {role, content}, logprobs, finish_reason}],
usage: {prompt_tokens, completion_tokens, total_tokens}}``. The answers to a query are
scripted in ``answers`` (query text -> the answers handed out in turn, cycling); an
unscripted query is answered ``n``. Usage: 20 prompt tokens a request, 1 completion
token a choice. ``max_n`` caps the choices of one answer (servers that ignore ``n``).
Requests answered 400 are logged in ``refused``.

Log-probabilities, as OpenAI's API gives them (https://platform.openai.com/docs/api-reference/chat/create):
asked ``logprobs: true`` (``top_logprobs`` 0-20, which needs ``logprobs: true``, else 400), a
choice's ``logprobs`` is ``{content: [{token, logprob, bytes, top_logprobs: [{token, logprob,
bytes}]}], refusal: null}`` with one entry per token of the answer (words with their leading
space, punctuation apart), else ``null``. A scripted answer is a string (the model was sure of
its first token: logprob 0, the other alternatives listed at -9999.0, "very unlikely") or
``{"content": "f", "top": {"f": -0.2, "m": -1.8, ...}}``, whose ``top`` lists the first token's
alternatives (the most likely ``top_logprobs`` of them are sent). ``logprobs`` = ``"honour"``
(default), ``"ignore"`` (``null`` whatever was asked: servers that do not implement them) or
``"refuse"`` (400 when they are asked for). ``logprobs_shape`` = ``"chat"`` (default, the shape above)
or ``"completion"``: the text-completion shape ``{tokens, token_logprobs, top_logprobs: [{token:
logprob}], text_offset}`` that llama-cpp-python's chat answers carried before 0.2.58.

The answer's length, as servers cap it: ``token_limit`` = ``"max_tokens"`` (default: llama.cpp,
vLLM) reads ``max_tokens``; ``"max_completion_tokens"`` (OpenAI's reasoning models) reads that one and
refuses ``max_tokens`` with OpenAI's 400 ("Unsupported parameter: 'max_tokens' is not supported with
this model. Use 'max_completion_tokens' instead."). An answer longer than the cap is cut to that many
tokens (``tokens_of``) with ``finish_reason: "length"``; a request with no cap gets the whole scripted
answer, which may be a long free text. ``count_tokens``: usage counts the tokens of each answer sent
(default: 1 a choice).

Structured answers (``response_format``), as the servers read it. ``response_formats`` lists the types
this server accepts besides ``text``: OpenAI's (default) accepts ``json_schema`` (``json_schema: {name,
schema, strict}``; ``name`` required, of letters, digits, ``_`` and ``-``, at most 64; under ``strict`` every
object must list all its properties as required and set ``additionalProperties: false``) and ``json_object``
(only when a message contains the word "json", else 400); ``("json_object",)`` is llama-cpp-python 0.3.36's
server, whose request model allows ``type`` "text" or "json_object" (with an optional ``schema``) and
answers anything else with HTTP 500 and pydantic's message ("Input should be 'text' or 'json_object'"):
``format_refusal_status``. A schema that is not a valid JSON Schema is refused (400). A format honoured
with a schema writes the answer as the schema's object (``{"label": "f"}``), the one value a
constrained decoder can take: the label the scripted answer names, else the most likely label of its
``top``, else the schema's first; the answer is checked against the schema. Its log-probabilities are
the model's own, before the constraint, as llama-cpp-python lists them: the scripted alternatives stand at
the label value's token.

llama.cpp's own server (``llama-server``, as xllamacpp 2026.10.11549 embeds it; measured, docs/prelabelling.md),
when ``slots`` is set (:func:`llama_server`): ``GET /props`` reports ``total_slots`` (other GETs: 404, as
on OpenAI's API); ``n`` above the slots is refused with its 400 (``Field 'n': Value must be between 1 <=
value <= S, but got N``); ``response_format`` ``json_schema`` and ``json_object`` (with or without a
schema) are taken, any other type refused with its 400, and OpenAI's "json" word rule does not apply;
a structured answer's log-probability tokens begin with a code fence (```` ``` ```` ``json`` ``\n``)
and end with one (``\n`` ```` ``` ````) that its ``content`` lacks, and they count against the cap, so a
cap cuts the JSON (``finish_reason: "length"``); a call asking ``n`` answers holds ``n`` slots, and a call
with no slot free waits in its queue (``most_received`` counts the calls held at once, waiting or answered).
``props=False``: a server that does not report its slots.

Faults, taken in turn from ``faults`` one per request (``""``: none): ``throttle`` (429 with
``Retry-After: 0``), ``throttle_bare`` (429 without ``Retry-After``), ``error`` (500),
``lose`` (the connection closes without an answer), ``garbage`` (200 with a body that is not
JSON), and the hostile ones: ``drip`` (a 200 of 1,000 bytes sent one byte every
``drip_every`` seconds, for at most ``drip_for`` seconds), ``huge`` (a valid answer whose
content is ``huge_chars`` characters), ``redirect`` (302 to ``redirect_to``), ``json:TEXT``
(200 with TEXT: valid JSON of the wrong shape). Requests are checked (bearer key, model,
messages, temperature) and logged in ``requests``.
"""

from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler

from tests.loopback import LoopbackServer, drip, send, serve_in_thread

KEY = "sk-test"
PROMPT_TOKENS = 20


@dataclass
class FakeOpenAI:
    answers: dict[str, list[str]] = field(default_factory=dict)
    faults: list[str] = field(default_factory=list)
    max_n: int = 128
    model: str = "test-model"
    requests: list[dict] = field(default_factory=list)
    refused: list[dict] = field(default_factory=list)  #: requests answered 400
    turns: dict[str, int] = field(default_factory=dict)
    in_flight: int = 0
    most_in_flight: int = 0
    delay: float = 0.0
    drip_every: float = 0.2
    drip_for: float = 6.0
    #: Per ``drip`` answered, whether the client hung up before its end (:func:`.loopback.drip`).
    drips: list[bool] = field(default_factory=list)
    huge_chars: int = 2_000_000
    redirect_to: str = ""
    logprobs: str = "honour"
    logprobs_shape: str = "chat"
    token_limit: str = "max_tokens"
    count_tokens: bool = False
    response_formats: tuple[str, ...] = ("json_schema", "json_object")
    format_refusal_status: int = 400
    #: llama-server's slots (0: not llama-server; see the module docstring)
    slots: int = 0
    received: int = 0
    most_received: int = 0
    props: bool = True  #: whether llama-server's GET /props answers (False: a server that does not say its slots)
    queue: threading.Condition = field(default_factory=threading.Condition)
    free: int = 0

    def cap_of(self, body: dict) -> int | None:
        """The answer's cap the request sets in the field this server reads (``None``: no cap)."""
        value = body.get(self.token_limit)
        return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None

    def query_of(self, body: dict) -> str:
        """The query of the user message: the JSON string between ``<query>`` lines, else after ``Query: ``."""
        content = body["messages"][-1]["content"]
        match = re.search(r"\n<query>\n(.*)\n</query>$", content)
        if match:
            return json.loads(match.group(1))
        return json.loads(content.removeprefix("Query: "))

    def complete(self, body: dict) -> list[dict]:
        """The next ``n`` scripted answers of the body's query, as choices (with logprobs when asked and honoured)."""
        query = self.query_of(body)
        script = self.answers.get(query, ["n"])
        n = min(int(body.get("n", 1)), self.max_n)
        with_logprobs = body.get("logprobs") is True and self.logprobs == "honour"
        choices = []
        for index in range(n):
            turn = self.turns.get(query, 0)
            self.turns[query] = turn + 1
            answer = script[turn % len(script)]
            content = answer["content"] if isinstance(answer, dict) else answer
            at = 0  # the token whose alternatives are scripted
            schema = schema_of(body.get("response_format"))
            if schema is not None:
                content, at = constrained(answer, schema)
                answer = {**answer, "content": content} if isinstance(answer, dict) else content
            fenced = bool(self.slots) and schema is not None  # llama-server: a fence in the tokens only
            prefix, suffix = (FENCE_OPEN, FENCE_CLOSE) if fenced else ([], [])
            cap, finish = self.cap_of(body), "stop"
            if cap is not None and len(prefix) + len(tokens_of(content)) + len(suffix) > cap:
                content, finish = "".join(tokens_of(content)[: max(0, cap - len(prefix))]), "length"
                answer = {**answer, "content": content} if isinstance(answer, dict) else content
                suffix = []
            choice = {"index": index, "message": {"role": "assistant", "content": content}, "finish_reason": finish}
            choice["logprobs"] = None
            if with_logprobs:
                k = int(body.get("top_logprobs") or 0)
                entries = [sure(t, k) for t in prefix] + token_logprobs(answer, k, at) + [sure(t, k) for t in suffix]
                choice["logprobs"] = (
                    completion_shaped(entries)
                    if self.logprobs_shape == "completion"
                    else {"content": entries, "refusal": None}
                )
            choices.append(choice)
        return choices


#: Listed after the token chosen when a scripted answer gives no alternatives.
FILLERS = ["\n", " ", ".", "The", "I", "This", "Label", "It", "A", "Answer"] + [f"<{i}>" for i in range(10)]


#: The code fence llama-server's log-probability tokens put around a structured answer (its content has none).
FENCE_OPEN, FENCE_CLOSE = ["```", "json", "\n"], ["\n", "```"]


def sure(token: str, k: int) -> dict:
    """A token the model was sure of, with ``k`` alternatives listed (the fillers, very unlikely)."""
    top = [(token, 0.0)] + [(filler, -9999.0) for filler in FILLERS if filler != token]
    return {**_entry(token, 0.0), "top_logprobs": [_entry(t, lp) for t, lp in top[:k]]}


def llama_server(fake: FakeOpenAI, slots: int = 1) -> FakeOpenAI:
    """The test server as llama.cpp's ``llama-server`` with ``slots`` slots (see the module docstring)."""
    fake.slots = fake.free = slots
    return fake


def llama_problem(fake: FakeOpenAI, body: dict) -> str | None:
    """llama-server's 400 message for what it refuses, or ``None``."""
    n = body.get("n", 1)
    if isinstance(n, int) and not 1 <= n <= fake.slots:
        return f"Field 'n': Value must be between 1 <= value <= {fake.slots}, but got {n}"
    rf = body.get("response_format")
    kind = rf.get("type") if isinstance(rf, dict) else None
    if rf is not None and kind not in ("text", "json_object", "json_schema"):
        return f'response_format type must be one of "text" or "json_object", but got: {kind}'
    return None


def tokens_of(content: str) -> list[str]:
    """A rough tokenisation: words with their leading whitespace, each punctuation mark apart."""
    return re.findall(r"\s*\w+|\s*[^\w\s]", content)


def _entry(token: str, logprob: float) -> dict:
    return {"token": token, "logprob": logprob, "bytes": list(token.encode())}


def schema_of(response_format) -> dict | None:
    """The JSON Schema a (valid, accepted) ``response_format`` holds the answer to; ``None``: free text."""
    if not isinstance(response_format, dict) or response_format.get("type") == "text":
        return None
    if response_format.get("type") == "json_schema":
        return response_format["json_schema"]["schema"]
    return response_format.get("schema") or {
        "type": "object",
        "properties": {"label": {"type": "string", "enum": ["n", "f", "m", "o"]}},
        "required": ["label"],
    }


def constrained(answer: str | dict, schema: dict) -> tuple[str, int]:
    """The scripted answer as a decoder held to ``schema`` writes it, and the index of the token of the
    first enum value (see the module docstring); only objects of enum-valued strings are known here."""
    from jsonschema import validate

    def word(text: str) -> str:  # a scripted answer's or token's word: "f", " F.", '"m"' -> f, f, m
        return text.strip().strip("\"'`*.").strip().lower()

    content = answer["content"] if isinstance(answer, dict) else answer
    named = word(content)
    top = sorted(answer["top"].items(), key=lambda item: -item[1]) if isinstance(answer, dict) else []
    by_top = [word(token) for token, _ in top]
    value = {}
    for name in schema.get("required", []):
        enum = schema["properties"][name]["enum"]
        value[name] = named if named in enum else next((c for c in by_top if c in enum), enum[0])
    validate(value, schema)
    text = json.dumps(value)
    tokens = tokens_of(text)
    first = next(iter(value.values()), None)
    at = next((i for i, t in enumerate(tokens) if i > 0 and tokens[i - 1].endswith('"') and t == first), 0)
    return text, at


def format_problem(fake: FakeOpenAI, body: dict) -> str | None:
    """Why the server refuses the request's ``response_format`` (see the module docstring), or ``None``."""
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    rf = body.get("response_format")
    if rf is None or fake.slots:  # llama-server's refusals: llama_problem
        return None
    kind = rf.get("type") if isinstance(rf, dict) else None
    if kind not in ("text", *fake.response_formats):
        if fake.format_refusal_status == 500:  # llama-cpp-python's pydantic message
            return f"1 validation error: response_format.type: Input should be 'text' or 'json_object', input: {kind!r}"
        return f"Invalid value: {kind!r}. Supported values are: 'text', {', '.join(map(repr, fake.response_formats))}."
    schema = rf.get("schema") if kind == "json_object" else None
    if kind == "json_schema":
        spec = rf.get("json_schema")
        if not isinstance(spec, dict) or not re.fullmatch(r"[A-Za-z0-9_-]{1,64}", str(spec.get("name", ""))):
            return "Missing required parameter: 'response_format.json_schema.name'."
        schema = spec.get("schema")
        if spec.get("strict") and not strict_ok(schema):
            return "Invalid schema for response_format: In context=(), 'additionalProperties' is required to be supplied and to be false; 'required' must list every property."
    said_json = any("json" in str(m.get("content", "")).lower() for m in body.get("messages", []))
    if kind == "json_object" and "json_schema" in fake.response_formats and not said_json:  # OpenAI's rule
        return "'messages' must contain the word 'json' in some form, to use 'response_format' of type 'json_object'."
    if schema is not None:
        try:
            Draft202012Validator.check_schema(schema)
        except SchemaError as exc:
            return f"Invalid schema for response_format: {exc.message}"
    return None


def strict_ok(schema) -> bool:
    """OpenAI's strict mode: every object lists all its properties as required, with no others allowed."""
    if not isinstance(schema, dict):
        return False
    if schema.get("type") == "object":
        props = schema.get("properties", {})
        if schema.get("additionalProperties") is not False or set(schema.get("required", [])) != set(props):
            return False
        return all(strict_ok(sub) for sub in props.values())
    return True


def token_logprobs(answer: str | dict, k: int, at: int = 0) -> list[dict]:
    """``logprobs.content`` of one answer: its token ``at`` (the first; in a structured answer the label
    value's) with the scripted alternatives, the rest sure."""
    content = answer["content"] if isinstance(answer, dict) else answer
    tokens = tokens_of(content)
    entries = []
    for position, token in enumerate(tokens):
        if position == at and isinstance(answer, dict):
            top = sorted(answer["top"].items(), key=lambda item: -item[1])
            chosen = answer["top"].get(token, -9999.0)
        else:
            top = [(token, 0.0)] + [(filler, -9999.0) for filler in FILLERS if filler != token]
            chosen = 0.0
        entries.append({**_entry(token, chosen), "top_logprobs": [_entry(t, lp) for t, lp in top[:k]]})
    return entries


def completion_shaped(entries: list[dict]) -> dict:
    """The chat shape's ``content`` entries in the text-completion shape (llama-cpp-python before 0.2.58)."""
    offsets, at = [], 0
    for entry in entries:
        offsets.append(at)
        at += len(entry["token"])
    return {
        "tokens": [e["token"] for e in entries],
        "text_offset": offsets,
        "token_logprobs": [e["logprob"] for e in entries],
        "top_logprobs": [{t["token"]: t["logprob"] for t in e["top_logprobs"]} for e in entries],
    }


class _Handler(BaseHTTPRequestHandler):
    server: LoopbackServer

    def _reply(self, status: int, data: bytes, headers: dict[str, str] | None = None) -> None:
        self._answered()
        send(self, status, data, headers=headers)

    def _answered(self) -> None:
        """A call's slots free once its answer is ready, before it is written, as llama-server frees a slot
        when generation ends: counted after the write, a client that sends its next call the moment it has
        read an answer was seen beside the call that had just answered it (``most_received`` one too many)."""
        release, self._release = getattr(self, "_release", None), None
        if release is not None:
            release()

    def do_GET(self):
        fake = self.server.fake
        if fake.slots and fake.props and self.path == "/props":
            return self._reply(200, json.dumps({"total_slots": fake.slots, "model_path": fake.model}).encode())
        return self._reply(404, b'{"error": {"message": "not found"}}')

    def do_POST(self):
        fake = self.server.fake
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path != "/v1/chat/completions":
            return self._reply(404, b'{"error": {"message": "not found"}}')
        if fake.slots:
            with self.server.lock:
                fake.received += 1
                fake.most_received = max(fake.most_received, fake.received)
            try:
                n = json.loads(raw).get("n", 1)
                hold = n if isinstance(n, int) and 1 <= n <= fake.slots else 1
            except (ValueError, AttributeError):
                hold = 1
            with (
                fake.queue
            ):  # llama-server answers with `slots` slots at once, a call asking n holds n; the others wait
                fake.queue.wait_for(lambda: fake.free >= hold)
                fake.free -= hold

            def release() -> None:
                with fake.queue:
                    fake.free += hold
                    fake.queue.notify_all()
                with self.server.lock:
                    fake.received -= 1

            self._release = release
            try:
                return self._post(fake, raw)
            finally:
                self._answered()  # an answer that was never written (the connection lost) frees its slots too
        return self._post(fake, raw)

    def _post(self, fake: FakeOpenAI, raw: bytes):
        if self.headers.get("Authorization") != f"Bearer {KEY}":
            return self._reply(401, b'{"error": {"message": "bad key"}}')
        body = json.loads(raw)
        problems = [
            body.get("model") != fake.model and "model",
            not (body.get("temperature", 0) > 0) and "temperature",
            [m["role"] for m in body.get("messages", [])] != ["system", "user"] and "messages",
            "top_logprobs" in body
            and not (
                body.get("logprobs") is True
                and isinstance(body["top_logprobs"], int)
                and 0 <= body["top_logprobs"] <= 20
            )
            and "top_logprobs",
            fake.logprobs == "refuse" and body.get("logprobs") and "logprobs are not supported by this model",
            fake.token_limit == "max_completion_tokens"
            and "max_tokens" in body
            and "Unsupported parameter: 'max_tokens' is not supported with this model. Use "
            "'max_completion_tokens' instead.",
        ]
        if fake.slots and (problem := llama_problem(fake, body)):
            with self.server.lock:
                fake.refused.append(body)
            error = {"error": {"code": 400, "message": problem, "type": "invalid_request_error"}}
            return self._reply(400, json.dumps(error).encode())
        problem = format_problem(fake, body)
        if problem and fake.format_refusal_status != 400:
            with self.server.lock:
                fake.refused.append(body)
            return self._reply(fake.format_refusal_status, json.dumps({"error": {"message": problem}}).encode())
        problems.append(problem and f"response_format: {problem}")
        if any(problems):
            with self.server.lock:
                fake.refused.append(body)
            return self._reply(400, json.dumps({"error": {"message": f"bad request: {problems}"}}).encode())
        with self.server.lock:
            fake.requests.append(body)
            fault = fake.faults.pop(0) if fake.faults else ""
            fake.in_flight += 1
            fake.most_in_flight = max(fake.most_in_flight, fake.in_flight)
        time.sleep(fake.delay)
        with self.server.lock:  # done before answering: the client may send its next call at once
            fake.in_flight -= 1
        if fault == "throttle":
            return self._reply(429, b'{"error": {"message": "rate limited"}}', {"Retry-After": "0"})
        if fault == "error":
            return self._reply(500, b'{"error": {"message": "server error"}}')
        if fault == "lose":
            self.close_connection = True
            self.connection.shutdown(2)
            return None
        if fault == "garbage":
            return self._reply(200, b"<html>upstream timeout</html>")
        if fault == "throttle_bare":
            return self._reply(429, b'{"error": {"message": "rate limited"}}')
        if fault == "redirect":
            return self._reply(302, b"", {"Location": fake.redirect_to})
        if fault.startswith("json:"):
            return self._reply(200, fault.removeprefix("json:").encode())
        if fault == "drip":
            return self._drip(fake)
        if fault == "huge":
            huge = {"choices": [{"index": 0, "message": {"role": "assistant", "content": "n" * fake.huge_chars}}]}
            return self._reply(200, json.dumps(huge).encode())
        with self.server.lock:
            choices = fake.complete(body)
        completion = len(choices)
        if fake.count_tokens:
            completion = sum(len(tokens_of(c["message"]["content"])) for c in choices)
        answer = {
            "id": f"chatcmpl-{len(fake.requests)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": fake.model,
            "choices": choices,
            "usage": {
                "prompt_tokens": PROMPT_TOKENS,
                "completion_tokens": completion,
                "total_tokens": PROMPT_TOKENS + completion,
            },
        }
        return self._reply(200, json.dumps(answer).encode())

    def _drip(self, fake: FakeOpenAI) -> None:
        hung_up = drip(self, fake.drip_for, fake.drip_every, "application/json")
        with self.server.lock:
            fake.drips.append(hung_up)

    def log_message(self, *args):
        pass


def serve(fake: FakeOpenAI) -> tuple[str, LoopbackServer]:
    """Serve ``fake`` on a free loopback port; returns the API base (``.../v1/``) and the server."""
    server = serve_in_thread(_Handler, fake)
    return f"{server.base}/v1/", server
