"""Prolific's published API reference as a contract the tests hold the project and its test servers to.

The reference is ``../shared/reference/prolific/publicapi.yaml`` (Prolific's OpenAPI 3.0 description
of its API for data collectors, from prolific-oss/cli's ``contract_test/``), read with openapi-core
(pinned in requirements-dev.txt), not with checks of our own:

- :meth:`Contract.operation` finds the operation a method and path are (``None``: the reference has
  no such path, or no such method on it);
- :meth:`Contract.request_errors` validates a request as the project sends it: path and method, the
  token header, query and path parameters, and the JSON body against the operation's schema;
- :meth:`Contract.response_errors` validates an answer a test server gives against the operation's
  response schema for its status (a 2xx status the operation does not declare is an error too).

How a Prolific-compatible test server uses it (the Prolific server's request handler,
``tests/platforms/prolific/fake_server.py``'s ``_Handler._serve``, does, so every server
served by it does, the Task Builder one included, whatever routes it adds): ``refused =
checked(method, path, query, body, token)`` before the server routes a call -- ``(status, answer)``
to send instead: a path the reference does not have is answered 404, a method the reference does not
offer on a path it has 405, a request whose body or parameters the reference refuses 400, as Prolific
answers them -- and ``status, answer = answer_checked(method, path, query, status, answer)`` on what
the server answered: an answer that breaks the response schema is turned into a 500 naming the
breach. Both run outside the server's lock (a validation takes a few milliseconds). Both record what they found in :data:`VIOLATIONS`, which the tests'
autouse fixture (tests/conftest.py) requires empty at the end of every test: a test server that
drifts from the reference, or a client call the reference does not offer, fails the test that
showed it. Paths outside ``/api/`` and ``/.well-known/`` (a participant's completion page, a
presigned upload URL) are not Prolific's API and are not checked.

As published the reference fails a strict OpenAPI 3.0 check in 10 schemas for one reason: they use
JSON Schema's ``const`` (3.1); it is read as a one-value ``enum`` (see the reference's README).
Without the reference (``REFERENCE_DIR`` elsewhere, the file absent) :func:`reference` is ``None``
and the servers run unchecked; the contract tests skip.
"""

from __future__ import annotations

import ast
import functools
import json
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.conftest import REFERENCE_DIR

REFERENCE = REFERENCE_DIR / "prolific" / "publicapi.yaml"
#: The reference's server (its ``servers``): the host requests are matched under.
HOST = "https://api.prolific.com"
#: The parts of a server that are Prolific's API (the rest is a participant's page or a presigned upload).
API_PREFIXES = ("/api/", "/.well-known/")
#: What the test servers found against the reference since the last :func:`reset` (one string each).
VIOLATIONS: list[str] = []
#: The operations (``operationId``) whose requests a test server validated and passed on, in this process.
SEEN: set[str] = set()
_LOCK = threading.Lock()
ROOT = Path(__file__).resolve().parents[3]
#: The modules whose calls to Prolific the contract must cover (each call site is listed by :func:`client_calls`).
CLIENT_FILES = (
    *sorted((ROOT / "platforms/prolific").glob("client*.py")),
    ROOT / "platforms/taskbuilder/client.py",
)
#: Calls to Prolific made outside the clients: (file, the function that makes them, the helper it calls
#: with ``(client, METHOD, path)``): the Connections page's test of a Prolific connection.
OTHER_CALLERS = ((ROOT / "platforms/prolific/connection/services.py", "check_prolific", "_call"),)


def _const_as_enum(node: Any) -> Any:
    if isinstance(node, dict):
        if "const" in node:
            node["enum"] = [node.pop("const")]
        for value in node.values():
            _const_as_enum(value)
    elif isinstance(node, list):
        for value in node:
            _const_as_enum(value)
    return node


def _explode_object_queries(spec: dict) -> dict:
    """Query parameters that are objects as OpenAPI 3.0 serializes them (``style: form``, ``explode: true``,
    the defaults): each property its own query parameter. The reference's one such parameter is
    ``GET /participant-groups/``'s ``filter`` (``oneOf`` an object with ``workspace_id`` or one with
    ``project_id``; so too on Prolific's page "Get a list of all participant groups within a project or
    workspace"), sent as ``?workspace_id=…``, the serialization OpenAPI 3.0 gives an object in the query
    by default (``form``, exploded), which openapi-core 0.23 does not read back into the object; the
    properties become optional parameters, and one of them must be given."""
    schemas = spec["components"]["schemas"]

    def resolved(schema: dict) -> dict:
        while "$ref" in schema:
            schema = schemas[schema["$ref"].rsplit("/", 1)[-1]]
        return schema

    for operations in spec["paths"].values():
        for operation in operations.values():
            if not isinstance(operation, dict) or "parameters" not in operation:
                continue
            parameters = []
            for parameter in operation["parameters"]:
                schema = resolved(parameter.get("schema", {}))
                options = [resolved(s) for s in schema.get("oneOf", [schema])]
                if parameter.get("in") != "query" or not all(o.get("type") == "object" for o in options):
                    parameters.append(parameter)
                    continue
                for option in options:
                    for name, prop in option.get("properties", {}).items():
                        parameters.append({"in": "query", "name": name, "required": False, "schema": prop})
                operation.setdefault("x-one-of-queries", []).append(
                    sorted(name for option in options for name in option.get("properties", {}))
                )
            operation["parameters"] = parameters
    return spec


@dataclass(frozen=True)
class Operation:
    method: str
    template: str  # the reference's path, e.g. /api/v1/studies/{id}/
    operation_id: str


class Contract:
    """The reference, loaded once (openapi-core's :class:`~openapi_core.OpenAPI`)."""

    def __init__(self, spec: dict) -> None:
        from openapi_core import OpenAPI

        self.spec = spec
        self.api = OpenAPI.from_dict(spec)
        self._paths: list[tuple[re.Pattern, str]] = []
        for template in spec["paths"]:
            pattern = re.sub(r"\\\{[^}]+\\\}", "[^/]+", re.escape(template))
            self._paths.append((re.compile(pattern), template))
        # Literal paths first (``/studies/predicted-recruitment-time/`` before ``/studies/{id}/``), as routers match.
        self._paths.sort(key=lambda item: item[1].count("{"))

    def template(self, path: str) -> str | None:
        """The reference's path ``path`` is an instance of, or ``None``."""
        return next((template for pattern, template in self._paths if pattern.fullmatch(path)), None)

    def operation(self, method: str, path: str) -> Operation | None:
        template = self.template(path)
        found = self.spec["paths"].get(template or "", {}).get(method.lower())
        return Operation(method.upper(), template, found.get("operationId", "")) if found else None

    def refusal(self, method: str, path: str) -> int | None:
        """404 when the reference has no such path, 405 when it has the path but not the method, else ``None``."""
        if self.template(path) is None:
            return 404
        return None if self.operation(method, path) else 405

    def _request(self, method: str, path: str, query: dict | None, body: Any, token: str):
        from openapi_core.testing import MockRequest

        data = (
            b"" if body is None or (body == {} and method.upper() in ("GET", "DELETE")) else json.dumps(body).encode()
        )
        args = {k: v if isinstance(v, list) else [v] for k, v in (query or {}).items()}
        return MockRequest(
            HOST, method, path, args=args, headers={"Authorization": token}, data=data, content_type="application/json"
        )

    def request_errors(
        self, method: str, path: str, query: dict | None = None, body: Any = None, token: str = "Token t"
    ) -> list[str]:
        """What the reference finds wrong with this request (empty: nothing)."""
        return list(self._request_errors(method, path, _canonical(query), _canonical(body), token))

    @functools.lru_cache(maxsize=4096)  # noqa: B019 -- one Contract per process (reference()), kept for its life
    def _request_errors(self, method: str, path: str, query_json: str, body_json: str, token: str) -> tuple[str, ...]:
        """:meth:`request_errors` of a request as canonical JSON: the same request is validated once, as the
        test servers see the same polls, pages and updates again and again."""
        query, body = json.loads(query_json), json.loads(body_json)
        refused = self.refusal(method, path)
        if refused:
            return (f"{method} {path}: {'no such path' if refused == 404 else 'method not allowed'} in the reference",)
        try:
            self.api.validate_request(self._request(method, path, query, body, token))
        except Exception as exc:  # openapi-core's validation errors, each with its causes
            return (f"{method} {path}: request: {_explain(exc)}",)
        operation = self.operation(method, path)
        for names in self.spec["paths"][operation.template][method.lower()].get("x-one-of-queries", []):
            if not set(names) & set(query or {}):
                return (f"{method} {path}: request: one of the query parameters {', '.join(names)} is required",)
        return ()

    def response_errors(self, method: str, path: str, status: int, answer: Any, query: dict | None = None) -> list[str]:
        """What the reference finds wrong with a test server's answer (only answers of 2xx, and errors it declares)."""
        return list(self._response_errors(method, path, status, _canonical(answer), _canonical(query)))

    @functools.lru_cache(maxsize=4096)  # noqa: B019 -- as _request_errors
    def _response_errors(
        self, method: str, path: str, status: int, answer_json: str, query_json: str
    ) -> tuple[str, ...]:
        from openapi_core.testing import MockResponse

        answer, query = json.loads(answer_json), json.loads(query_json)
        operation = self.operation(method, path)
        if operation is None:
            return (f"{method} {path}: answered, though the reference has no such operation",)
        declared = self.spec["paths"][operation.template][method.lower()].get("responses", {})
        if str(status) not in declared and "default" not in declared:
            if 200 <= status < 300:
                return (f"{method} {path}: answered {status}; the reference declares {sorted(declared)}",)
            return ()  # an error answer the reference does not describe
        data = b"" if status == 204 or answer is None else json.dumps(answer, default=str).encode()
        request = self._request(method, path, query, None, "Token t")
        try:
            self.api.validate_response(request, MockResponse(data, status_code=status))
        except Exception as exc:
            return (f"{method} {path}: {status} answer: {_explain(exc)}",)
        return ()


def _canonical(value: Any) -> str:
    """``value`` as JSON with sorted keys: the key of a validation already made (the reference ignores key order)."""
    return json.dumps(value, sort_keys=True, default=str)


def _explain(exc: Exception) -> str:
    """openapi-core's error with the schema errors that caused it (the first three), on one line each."""
    causes = []
    cause = exc.__cause__ or exc.__context__
    for error in getattr(cause, "schema_errors", None) or getattr(exc, "schema_errors", None) or []:
        where = "/".join(str(p) for p in getattr(error, "absolute_path", []))
        causes.append(f"{where or '(root)'}: {getattr(error, 'message', error)}")
    text = str(exc) if not causes else f"{exc.__class__.__name__}: " + "; ".join(causes[:3])
    return text.replace("\n", " ")[:600]


@functools.cache
def reference() -> Contract | None:
    """The reference as a :class:`Contract` (loaded once per process), or ``None`` when it is not there."""
    if not REFERENCE.is_file():
        return None
    import yaml

    # libyaml's safe loader where PyYAML was built with it (the same document, read several times faster)
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    spec = yaml.load(REFERENCE.read_text(encoding="utf-8"), Loader=loader)
    return Contract(_explode_object_queries(_const_as_enum(spec)))


def reset() -> list[str]:
    """The violations found so far, and none from now on."""
    with _LOCK:
        found = list(VIOLATIONS)
        VIOLATIONS.clear()
    return found


def _record(errors: list[str]) -> None:
    with _LOCK:
        VIOLATIONS.extend(errors)


def _is_api(path: str) -> bool:
    return path.startswith(API_PREFIXES)


def checked(method: str, path: str, query: dict, body: Any, token: str) -> tuple[int, dict] | None:
    """A test server's refusal of a request the reference does not allow (``(status, error answer)``), or ``None``.

    404/405 for an operation the reference does not offer, 400 for a request it refuses; each recorded."""
    contract = reference()
    if contract is None or not _is_api(path):
        return None
    refused = contract.refusal(method, path)
    if refused:
        _record([f"{method} {path}: not an operation of the reference (HTTP {refused})"])
        detail = "Not found." if refused == 404 else f'Method "{method}" not allowed.'
        return refused, {"error": {"detail": detail}}
    operation = contract.operation(method, path)
    open_to_all = not contract.spec["paths"][operation.template][method.lower()].get("security")
    if token.startswith("Token ") or open_to_all:  # a missing token is the server's own 401, not the contract's
        errors = contract.request_errors(method, path, query, body, token)
        if errors:
            _record(errors)
            return 400, {"error": {"detail": errors[0]}}
        with _LOCK:
            SEEN.add(operation.operation_id)
    return None


def answer_checked(method: str, path: str, query: dict, status: int, answer: Any) -> tuple[int, Any]:
    """A test server's answer as it goes out: itself, or a 500 naming how it breaks the reference (recorded)."""
    contract = reference()
    if contract is None or not _is_api(path) or status < 200 or status >= 300:
        return status, answer
    errors = contract.response_errors(method, path, status, answer, query)
    if errors:
        _record(errors)
        return 500, {"error": {"detail": f"the test server broke the reference: {errors[0]}"}}
    return status, answer


# -- the calls the project makes ------------------------------------------------------------------
@dataclass(frozen=True)
class Call:
    """One call site of a client: ``request(METHOD, path)`` or ``pages(path)`` (a GET), its path as written
    (an f-string's fields as ``{…}``, the query string dropped), under the API's base ``/api/v1/``."""

    where: str  # file:line
    method: str
    path: str

    def example(self) -> str:
        """The path with each field filled in (as the ids the project sends): under ``/api/v1/`` unless it is
        absolute (``/.well-known/...``, or a URL of the API's host)."""
        path = re.sub(r"\{[^}]*\}", "5f0c0ffee0000000000000a1", self.path)
        path = re.sub(r"^https?://[^/]+", "", path)
        return path if path.startswith("/") else "/api/v1/" + path


def _path_text(node: ast.expr, local: dict[str, str] | None = None) -> str | None:
    """The path a string or f-string writes (a field that is a local path name spelled out, others ``{…}``)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        parts = []
        for value in node.values:
            if isinstance(value, ast.Constant):
                parts.append(str(value.value))
            elif isinstance(value, ast.FormattedValue) and isinstance(value.value, ast.Name) and local:
                parts.append(local.get(value.value.id, "{…}"))
            else:
                parts.append("{…}")
        return "".join(parts)
    return None


def _named_path(arg: ast.expr, local: dict[str, str]) -> str | None:
    """The path an argument writes, or the one a local name of the function was given."""
    return local.get(arg.id) if isinstance(arg, ast.Name) else _path_text(arg, local)


def client_calls() -> list[Call]:
    """Every call to Prolific written in the client modules (:data:`CLIENT_FILES`), as the source says it."""
    calls = []
    for file in CLIENT_FILES:
        tree = ast.parse(file.read_text(encoding="utf-8"))
        named: dict[int, dict[str, str]] = {}  # per function: the paths its local names hold
        for function in ast.walk(tree):
            if isinstance(function, ast.FunctionDef):
                local: dict[str, str] = {}
                for assign in ast.walk(function):
                    if isinstance(assign, ast.Assign):
                        for target in assign.targets:
                            text = _path_text(assign.value, local)
                            if isinstance(target, ast.Name) and text is not None:
                                local[target.id] = text
                for inner in ast.walk(function):
                    named[id(inner)] = local
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
                continue
            name, args = node.func.attr, node.args
            method = path = None

            if name == "request" and len(args) >= 2 and isinstance(args[0], ast.Constant):
                method, path = args[0].value, _named_path(args[1], named.get(id(node), {}))
            elif name == "pages" and args:
                method, path = "GET", _named_path(args[0], named.get(id(node), {}))
            if method and path is not None:
                where = f"{file.relative_to(ROOT)}:{node.lineno}"
                calls.append(Call(where, str(method).upper(), path.partition("?")[0]))
    for file, caller, helper in OTHER_CALLERS:
        tree = ast.parse(file.read_text(encoding="utf-8"))
        for function in ast.walk(tree):
            if not (isinstance(function, ast.FunctionDef) and function.name == caller):
                continue
            for node in ast.walk(function):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == helper:
                    method, path = node.args[1], _path_text(node.args[2])
                    if isinstance(method, ast.Constant) and path is not None:
                        where = f"{file.relative_to(ROOT)}:{node.lineno}"
                        calls.append(Call(where, str(method.value).upper(), path.partition("?")[0]))
    return calls
