"""The review queue: which status each query of a batch has, and which query a review walks to next.

Pure, on the rows of ``query_results``, so a notebook can walk a batch's disputes as the page does. A
query may have several statuses: ``disputed`` (no crowd label, no ruling), ``settled``, ``escalated``,
``gold-failed`` (some answers uncounted).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from typing import Any

DISPUTED = "disputed"
SETTLED = "settled"
ESCALATED = "escalated"
GOLD_FAILED = "gold-failed"
#: The review's filters, in the order the page shows them.
REVIEW_STATUSES: tuple[str, ...] = (DISPUTED, SETTLED, ESCALATED, GOLD_FAILED)
#: How the page names each status ("Gold-failed").
STATUS_NAMES: dict[str, str] = {status: status.capitalize() for status in REVIEW_STATUSES}


def query_statuses(result: dict[str, Any], escalated: Collection[str], gold_failed: Collection[str]) -> list[str]:
    """The statuses of one row of ``query_results`` (in ``REVIEW_STATUSES`` order)."""
    found = []
    if result["adjudicated"]:
        found.append(SETTLED)
    elif result["crowd_label"] is None and result["votes"]:
        found.append(DISPUTED)
    if result["qid"] in escalated:
        found.append(ESCALATED)
    if result["qid"] in gold_failed:
        found.append(GOLD_FAILED)
    return sorted(found, key=REVIEW_STATUSES.index)


def review_rows(
    results: Iterable[dict[str, Any]], escalated: Collection[str], gold_failed: Collection[str]
) -> list[dict[str, Any]]:
    """The rows of ``query_results`` (batch order kept), each with its ``statuses``."""
    return [{**result, "statuses": query_statuses(result, escalated, gold_failed)} for result in results]


def status_counts(rows: Sequence[dict[str, Any]]) -> dict[str, int]:
    return {status: sum(status in row["statuses"] for row in rows) for status in REVIEW_STATUSES}


def with_status(rows: Sequence[dict[str, Any]], status: str) -> list[dict[str, Any]]:
    if status not in REVIEW_STATUSES:
        raise ValueError(f"unknown status {status!r}; choose one of {', '.join(REVIEW_STATUSES)}")
    return [row for row in rows if status in row["statuses"]]


def next_query(rows: Sequence[dict[str, Any]], status: str, after: str | None = None) -> dict[str, Any] | None:
    """The first query with ``status`` after query ``after`` in batch order, wrapping round, never
    ``after`` itself (unknown or none: the first); None when no other query has the status."""
    order = {row["qid"]: index for index, row in enumerate(rows)}
    candidates = [row for row in with_status(rows, status) if row["qid"] != after]
    if not candidates:
        return None
    start = order.get(after, -1) if after is not None else -1
    later = [row for row in candidates if order[row["qid"]] > start]
    return (later or candidates)[0]
