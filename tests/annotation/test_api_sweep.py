"""Every URL under /api/, every method, hostile bodies, path values and query strings, three callers:
never a 5xx, and every 4xx is JSON that says why (``detail`` or field messages).

The URLs come from Django's resolver (not from the schema), so an endpoint the schema leaves
out, a router's ``.json`` suffix variant or the catch-all JSON 404 is swept too. Path
parameters are filled with the seeded objects' names (``test_api_fuzz.seeded``: a published
local batch with answers, a machine-labelled batch with its answered calibration sample,
cached chat answers, a collection, runs, a pool, a report, an export) and with hostile values.
In-process (Django's test ``Client`` with ``raise_request_exception=False``, so an unhandled
exception shows as the 500 a server would send) and in a fixed order: some requests change the
state the later ones see (a batch routed, cancelled, an annotator deactivated), as on a site.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.test.client import BOUNDARY, MULTIPART_CONTENT, encode_multipart

from annotation.models import Assignment, Export, Hit, Judgment
from core.models import Job
from tests.annotation.test_api_fuzz import seeded  # noqa: F401 (fixture)
from tests.support.url_patterns import site_patterns

JSON = "application/json"
FORM = "application/x-www-form-urlencoded"
METHODS = ("GET", "HEAD", "OPTIONS", "POST", "PUT", "PATCH", "DELETE")
BODY_METHODS = ("POST", "PUT", "PATCH")

#: Path values that name nothing, or try to escape the segment (Django's test client sends the
#: path as given: ``%2F`` arrives decoded, as from a server).
HOSTILE_VALUES = [
    "no-such-thing",
    "..",
    "%2E%2E",
    "a%2Fb",
    "%00",
    "x" * 5000,
    "é𝄞中",
    "-1",
    "0",
    "99999999999999999999999",
    "~2F",
    "~",
]

#: Seeded objects per path parameter (``pk`` is looked up per collection).
EXISTING = {
    "batches": ["b1", "mb"],
    "annotators": ["ann-a"],
    "collections": ["tiny"],
    "query-sets": ["q"],
    "runs": ["a"],
    "pools": ["p"],
    "reports": ["rep"],
    "imports": ["queries", "qrels", "run"],
    "prelabel-cache": ["gpt-4o-mini", "org~2Fchat-model"],
    "connections": ["prolific", "chat", "huggingface"],
}
PK_MODELS = {"hits": Hit, "assignments": Assignment, "judgments": Judgment, "exports": Export, "jobs": Job}


def _field_names() -> list[str]:
    """Every property name of the API schema's components: the fields any request body can carry."""
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
    names = set()
    for component in schema["components"]["schemas"].values():
        names |= set(component.get("properties", {}))
    return sorted(names)


def _query_names() -> list[str]:
    """Every query parameter the API schema documents (``target_accuracy``, ``risk``, ``page``...)."""
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
    return sorted(
        {
            parameter["name"]
            for operations in schema["paths"].values()
            for operation in operations.values()
            for parameter in operation.get("parameters", [])
            if parameter["in"] == "query"
        }
    )


#: Values every query parameter gets at once, one query string each (percent-encoded by ``_query``).
HOSTILE_QUERY_VALUES = ["nan", "inf", "1e309", "-1", "99999999999999999999999", "\x00", "..", "x" * 3000, "é𝄞"]


def _query(names: list[str], value: str) -> str:
    from urllib.parse import urlencode

    return urlencode([(name, value) for name in names] + [(names[0], "repeated")])


def _bodies(fields: list[str]) -> list[tuple[str, str, bytes | str]]:
    """(label, content type, raw body): no body, odd JSON, wrong types for every field, a multipart
    upload with an odd file name, form fields."""
    deep = "[" * 100_000 + "]" * 100_000
    deep_object = '{"a":' * 50_000 + "1" + "}" * 50_000
    wrong_types = {
        "lists": [],
        "objects": {"a": {"b": [1]}},
        "huge ints": 10**40,
        "negative": -(10**12),
        "bools": True,
        "floats": 1.5e308,
        "nulls": None,
        "strings": "\u2028\x00é" + "y" * 3000,
    }
    bodies: list[tuple[str, str, bytes | str]] = [
        ("none", JSON, ""),
        ("{}", JSON, "{}"),
        ("[]", JSON, "[]"),
        ("null", JSON, "null"),
        ("invalid JSON", JSON, '{"name": '),
        ("JSON string", JSON, '"hello"'),
        ("1e309", JSON, '{"sample": 1e309, "target_accuracy": 1e309, "seed": 1e309}'),
        ("NaN", JSON, '{"target_accuracy": NaN, "risk": Infinity, "sample": -Infinity}'),
        ("deeply nested list", JSON, deep),
        ("deeply nested object", JSON, deep_object),
        ("not UTF-8", JSON, b'{"name": "\xff\xfe"}'),
        ("form", FORM, "name=x&sample=abc&labeller=..%2F..&annotators=%00"),
    ]
    for label, value in wrong_types.items():
        bodies.append((f"every field {label}", JSON, json.dumps(dict.fromkeys(fields, value))))
    upload = SimpleUploadedFile("..gz", b"\x1f\x8b\x08\x00garbage", content_type="application/gzip")
    other = SimpleUploadedFile("../../etc/passwd", b"q1\tquery\n", content_type="text/plain")
    form = {"file": upload, "train_file": other, "name": "..", "labeller": "trained", "kind": "qrels"}
    bodies.append(("multipart ..gz", MULTIPART_CONTENT, encode_multipart(BOUNDARY, form)))
    return bodies


def api_templates() -> list[str]:
    """Every URL pattern under /api/ from the resolver, as ``/api/...{param}...`` templates."""
    return list(dict.fromkeys(t for _, t in site_patterns() if t.startswith("/api")))


def _collection(template: str, parameter: str) -> str:
    """The path segment naming the collection a parameter belongs to (``batches`` for ``{name}``...)."""
    segments = template.strip("/").split("/")
    index = next(i for i, s in enumerate(segments) if "{" + parameter + "}" in s)
    return segments[index - 1] if index else ""


def _fill(template: str, value_of: dict[str, str]) -> str:
    return re.sub(r"\{(\w+)\}", lambda m: value_of[m[1]], template)


def _existing_paths(template: str) -> list[str]:
    """``template`` with every parameter set to a seeded object (each of them, for a list)."""
    parameters = [p for p in re.findall(r"\{(\w+)\}", template) if p != "format"]
    fixed = {"format": ".json" if template.endswith("/{format}") else "json"}  # api-root's group has the dot
    if not parameters:
        return [_fill(template, fixed)]
    (parameter,) = parameters  # the API's paths have one object parameter each
    collection = _collection(template, parameter)
    if collection in PK_MODELS:
        pk = PK_MODELS[collection].objects.order_by("pk").values_list("pk", flat=True).first()
        values = [str(pk if pk is not None else 1)]
    else:
        values = EXISTING[collection]
    return [_fill(template, fixed | {parameter: value}) for value in values]


@dataclass
class Caller:
    label: str
    client: Client
    headers: dict[str, str]


def _callers(token: str, annotator) -> list[Caller]:
    anonymous = Client(raise_request_exception=False)
    session = Client(raise_request_exception=False)
    session.force_login(annotator)
    researcher = Client(raise_request_exception=False)
    return [
        Caller("researcher", researcher, {"HTTP_AUTHORIZATION": f"Token {token}"}),
        Caller("anonymous", anonymous, {}),
        Caller("annotator", session, {}),
    ]


def _problem(method: str, path: str, response) -> str | None:
    """Why an answer breaks the rule (no 5xx; a 4xx is JSON with ``detail`` or field messages)."""
    status = response.status_code
    if status >= 500:
        return f"{status}"
    if status < 400 or method == "HEAD":
        return None
    if not response.get("Content-Type", "").startswith(JSON):
        return f"{status} not JSON: {response.get('Content-Type')}"
    try:
        data = json.loads(response.content)
    except ValueError:
        return f"{status} unreadable JSON"
    if not isinstance(data, dict) or not data:
        return f"{status} JSON without a message: {str(data)[:100]}"
    if "detail" in data:
        return None if isinstance(data["detail"], (str, list, dict)) and data["detail"] else f"{status} empty detail"
    for messages in data.values():
        if not isinstance(messages, (list, dict, str)) or not messages:
            return f"{status} field without messages: {str(data)[:100]}"
    return None


def _send(caller: Caller, method: str, path: str, content_type: str, body: bytes | str):
    kwargs = dict(caller.headers)
    if method in BODY_METHODS or body:
        return caller.client.generic(method, path, body, content_type=content_type, **kwargs)
    return caller.client.generic(method, path, **kwargs)


@pytest.mark.slow
def test_every_api_url_method_and_body_answers_without_a_server_error(seeded, annotators):  # noqa: F811
    templates = api_templates()
    assert len(templates) > 100 and "/api/annotation/batches/{name}/routing/" in templates
    assert "/api/annotation/prelabel-cache/{model}/" in templates
    bodies = _bodies(_field_names())
    names = _query_names()
    assert {"target_accuracy", "risk", "budget", "no_guarantee", "page"} <= set(names)
    queries = [_query(names, value) for value in HOSTILE_QUERY_VALUES]
    researcher, anonymous, annotator = _callers(seeded, annotators[2])
    # Destructive actions last, so the other endpoints first see the seeded state.
    templates.sort(key=lambda t: ("cancel" in t or "deactivate" in t or "prelabel-cache/{" in t, t))

    plan: list[tuple[Caller, str, str, tuple[str, str, bytes | str]]] = []
    for template in templates:
        suffixed = "{format}" in template
        for path in _existing_paths(template):
            for method in METHODS:
                if suffixed:  # the router's ``.json`` twin: the same view, fewer bodies
                    chosen = bodies[:2] if method in BODY_METHODS else bodies[:1]
                else:
                    chosen = bodies if method in BODY_METHODS else bodies[:1]
                plan.extend((researcher, method, path, body) for body in chosen)
                if not suffixed:
                    plan.extend(
                        (caller, method, path, body) for caller in (anonymous, annotator) for body in bodies[:2]
                    )
            if not suffixed:  # GET with every documented query parameter set to a hostile value
                plan.extend((researcher, "GET", f"{path}?{query}", bodies[0]) for query in queries)
        parameters = [p for p in re.findall(r"\{(\w+)\}", template) if p != "format"]
        if parameters and not suffixed:  # hostile path values: each method as the researcher, GET as anyone
            for value in HOSTILE_VALUES:
                path = _fill(template, {parameters[0]: value, "format": "json"})
                plan.extend((researcher, method, path, bodies[1]) for method in ("GET", "POST", "PUT", "DELETE"))
                plan.append((anonymous, "GET", path, bodies[1]))

    failures: list[str] = []
    kinds: Counter[str] = Counter()
    statuses: Counter[int] = Counter()
    for caller, method, path, (label, content_type, body) in plan:
        response = _send(caller, method, path, content_type, body)
        statuses[response.status_code] += 1
        problem = _problem(method, path, response)
        if problem:
            failures.append(f"{caller.label} {method} {path[:120]} [{label}]: {problem} {response.content[:200]!r}")
            kinds[f"{method} [{label}]: {problem[:60]}"] += 1
    print(f"api sweep: {len(templates)} URL patterns, {len(plan)} requests, statuses {sorted(statuses.items())}")
    summary = "\n".join(f"{n} x {kind}" for kind, n in kinds.most_common())
    assert not failures, f"{len(failures)} of {len(plan)} answers break the rule:\n{summary}\n" + "\n".join(
        failures[:40]
    )
    # The sweep reached the objects: successes and refusals of the state, not only 404s.
    assert statuses[200] > 100 and statuses[400] > 100 and statuses[404] > 100, statuses
    assert len(plan) > 5000, len(plan)


@pytest.mark.django_db
def test_the_server_errors_the_sweep_found_are_refusals(researcher):
    """Each was a 500: a router's ``.json`` twin of a list's POST (``create()`` took no ``format``),
    a body nested deeper than the JSON decoder's recursion limit, OPTIONS on Swagger UI."""
    from core.services.api_tokens import api_token

    client = Client(raise_request_exception=False)
    headers = {"HTTP_AUTHORIZATION": f"Token {api_token(researcher)}"}
    for url in ("/api/annotation/batches.json/", "/api/annotation/annotators.json", "/api/pooling/pools.json"):
        response = client.post(url, "{}", content_type=JSON, **headers)
        assert response.status_code == 400 and response.json(), (url, response.status_code)
    for body in ("[" * 100_000 + "]" * 100_000, '{"a":' * 50_000 + "1" + "}" * 50_000):
        response = client.post("/api/annotation/batches/estimate/", body, content_type=JSON, **headers)
        assert response.status_code == 400 and "nested too deeply" in response.json()["detail"]
    response = client.options("/api/docs/", **headers)
    assert response.status_code == 405
