"""The hostile round's sweep: what is sent to a URL pattern and how each answer is judged (the kinds:
docs/benchmarks.md, "Hostile round")."""

from __future__ import annotations

import json
from urllib.parse import urlencode

from benchmarks.hostile_labs import SECRET_TEXTS, SECRETS, client

HOSTILE_VALUES = [
    "1_0",
    "٣",
    "²",
    "①",
    "nan",
    "1e309",
    "-1",
    "\x00",
    "x" * 2000,
    "é𝄞",
    "../../etc/passwd",
    "' OR 1=1 --",
]
_FIELDS = [
    "name",
    "queries",
    "provider",
    "reward",
    "assignments_per_query",
    "max_assignments",
    "username",
    "role",
    "group",
    "action",
    "access",
    "annotators",
    "label",
    "qid",
    "cutoffs",
    "target_accuracy",
    "active",
]
BODIES = [
    ("application/json", "{}"),
    ("application/json", "[1, 2]"),
    ("application/json", "{"),
    *(("application/json", json.dumps(dict.fromkeys(_FIELDS, value))) for value in HOSTILE_VALUES),
    ("application/json", json.dumps({"name": "x", "queries": SECRETS["query_set"], "typo_field": 1})),
    (
        "application/x-www-form-urlencoded",
        "group=hostile-lab-a&action=set&username=hr-b-researcher&role=owner&access=password&active=0",
    ),
]


def ask(findings: dict, counts: dict, who: str, account, name: str, path: str, round_number: int) -> None:
    """Every method on ``path`` as ``account`` (``None``: a visitor), each answer judged into ``findings``;
    each round sends other bodies and query values."""
    asking = client(account)
    for method in ("GET", "POST", "PUT", "PATCH", "DELETE"):
        for content_type, body in _pick(method, round_number):
            query = "" if method != "GET" else "?" + _query(round_number)
            response = asking.generic(method, path + query, body, content_type=content_type)
            counts["attempts"] += 1
            _judge(findings, counts, f"{who}: {method} {path} ({name}) -> {response.status_code}", path, response)


def verdict(kind_if_taken: str, what: str, status: int, taken: bool) -> tuple[str | None, str]:
    """A finding tried again: Medium on a 5xx, else ``kind_if_taken`` if it was taken, else ``None``."""
    if status >= 500:
        return "Medium", f"{what} -> {status}"
    return (kind_if_taken if taken else None), f"{what} -> {status}{' (taken)' if taken else ''}"


def tried(check, *args) -> list[tuple[str | None, str]]:
    """``check(*args)``'s findings; a crash of the code under test is a Medium finding, not the end of the round."""
    try:
        return check(*args)
    except Exception as exc:
        return [("Medium", f"{check.__name__}: {type(exc).__name__}: {str(exc)[:300]}")]


def _pick(method: str, round_number: int) -> list[tuple[str, str]]:
    if method == "GET":
        return [("application/json", "")]
    if method == "DELETE":
        return [BODIES[0]]
    start = (round_number * 3) % len(BODIES)
    return [BODIES[(start + i) % len(BODIES)] for i in range(3)]


def _query(round_number: int) -> str:
    value = HOSTILE_VALUES[round_number % len(HOSTILE_VALUES)]
    return urlencode({"page": value, "batch": SECRETS["batch"], "max_assignments": value, "group": "hostile-lab-a"})


def _judge(findings: dict, counts: dict, where: str, path: str, response) -> None:
    status = response.status_code
    if status >= 500:
        if getattr(response, "exc_info", None):  # what the 500 was, for the report
            where += f": {response.exc_info[0].__name__}: {str(response.exc_info[1])[:200]}"
        counts["Medium"] += 1
        findings["Medium"].append(where)
        return
    body = b"".join(response.streaming_content) if response.streaming else response.content
    text = body.decode("utf-8", "replace")
    if status < 400:
        # The annotator of lab A's own name shows on their own pages only; nobody here is them.
        leaked = [s for s in [*SECRETS.values(), *SECRET_TEXTS] if s in text]
        if leaked:
            counts["High"] += 1
            findings["High"].append(f"{where}: shows {leaked}")
    elif path.startswith("/api/") and status != 405 and "json" not in response.get("Content-Type", ""):
        counts["Low"] += 1
        findings["Low"].append(f"{where}: not JSON")
