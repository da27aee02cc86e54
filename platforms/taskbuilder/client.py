"""A small client for Prolific's Task Builder API (``/api/v1/data-collection/``), built on Prolific's
client (the study and submission calls a Task Builder study needs), over :class:`core.http.JsonClient`.
Pure (no Django); the flow is docs/prolific.md, "Task Builder". Every call is an operation of
Prolific's API reference (the contract tests hold it to it). Where the reference and the documentation
pages disagree, this follows the pages for the dataset's ``schema`` (V4: ``task_group_id`` groups a
HIT's queries, ``metadata`` fields kept with each datapoint) and the batch's ``batch_items``, and the
reference for the upload's ``.../datasets/{id}/status``. Neither lists datasets: one is found again
through its batch. Responses are tied to queries by ``metadata``, which the reference does not describe.
"""

from __future__ import annotations

import http.client
from collections.abc import Iterator
from dataclasses import dataclass, field

from core.backoff import backoff_delay, retry_after_seconds
from platforms.prolific.client import (
    PAGE_SIZE,
    Prolific,
    ProlificError,
    ProlificUnknownOutcome,
    cents,
    named,
    quote_id,
)

__all__ = [
    "DATASET_DONE", "DATA_COLLECTION_METHOD", "TaskBuilder", "TaskBuilderError", "TaskBuilderUnknownOutcome", "cents",
]  # fmt: skip

#: The largest answer read (a page of 200 responses, each with its metadata).
MAX_RESPONSE_BYTES = 20 * 1024 * 1024
#: The statuses of a dataset (and of a batch's setup) that end its processing (reference: "Get Dataset Status").
DATASET_DONE = frozenset({"READY", "ERROR"})
#: The study's data collection method for a Task Builder batch.
DATA_COLLECTION_METHOD = "AI_TASK_BUILDER_BATCH"
#: Prolific's errors, under the names the Task Builder provider speaks of: one API, one kind of error.
TaskBuilderError = ProlificError
TaskBuilderUnknownOutcome = ProlificUnknownOutcome


@dataclass(eq=False)
class TaskBuilder(Prolific):
    """Prolific's client with Task Builder's calls added."""

    max_bytes: int = field(default=MAX_RESPONSE_BYTES, kw_only=True)

    # -- datasets ---------------------------------------------------------------------------
    def create_dataset(self, workspace_id: str, name: str, schema: dict) -> dict:
        body = {"name": name, "workspace_id": workspace_id, "schema": schema}
        return self.request("POST", "data-collection/datasets", body, repeatable=False)

    def dataset_status(self, dataset_id: str) -> str:
        """``UNINITIALISED`` (no file received), ``PROCESSING``, ``READY`` or ``ERROR``."""
        answer = self.request("GET", f"data-collection/datasets/{quote_id(dataset_id)}/status")
        return str(answer.get("status") or "") if isinstance(answer, dict) else ""

    def upload_url(self, dataset_id: str, filename: str) -> dict:
        """A presigned URL for one file (``upload_url``): repeatable (an unused URL changes nothing)."""
        answer = self.request("GET", f"data-collection/datasets/{quote_id(dataset_id)}/upload-url/{quote_id(filename)}")
        if not isinstance(answer, dict) or not isinstance(answer.get("upload_url"), str):
            raise TaskBuilderError("Prolific answered an upload URL request without upload_url", 502)
        return answer

    def upload(self, upload_url: str, data: bytes, content_type: str) -> None:
        """PUT the file to the presigned URL (signed: no token); the same bytes, so repeated after a 429, a 5xx
        or a lost answer."""
        import urllib.error
        import urllib.request

        timeout = self.timeout
        attempts = max(1, int(self.max_attempts))
        for attempt in range(1, attempts + 1):
            retry_after = None
            request = urllib.request.Request(upload_url, data=data, method="PUT")
            request.add_header("Content-Type", content_type)
            try:
                with urllib.request.urlopen(request, timeout=timeout) as answer:  # the https URL Prolific gave
                    answer.read()
                return
            except urllib.error.HTTPError as exc:
                if exc.code != 429 and exc.code < 500:
                    raise TaskBuilderError(f"uploading the dataset's file: HTTP {exc.code}", exc.code) from None
                retry_after = retry_after_seconds(exc.headers.get("Retry-After"))
                failure = f"HTTP {exc.code}"
            except (OSError, http.client.HTTPException) as exc:  # a connection lost before the answer
                failure = f"no answer ({exc.__class__.__name__})"
            if attempt == attempts:
                raise TaskBuilderError(
                    f"uploading the dataset's file: {failure} after {attempt} attempts", upstream=True
                )
            self.sleep(backoff_delay(attempt, retry_after, base=self.base_delay, cap=self.max_delay))

    # -- batches ------------------------------------------------------------------------
    def create_batch(self, fields: dict) -> dict:
        return self.request("POST", "data-collection/batches", fields, repeatable=False)

    def find_batch(self, workspace_id: str, name: str) -> dict | None:
        return named(self.pages(f"data-collection/batches?workspace_id={quote_id(workspace_id)}"), name)

    def set_up_batch(self, batch_id: str, dataset_id: str) -> None:
        """Start making the batch's tasks (asynchronous; not repeatable: the status says whether it began)."""
        body = {"dataset_id": dataset_id}
        self.request("POST", f"data-collection/batches/{quote_id(batch_id)}/setup", body, repeatable=False)

    def batch_status(self, batch_id: str) -> str:
        answer = self.request("GET", f"data-collection/batches/{quote_id(batch_id)}/status")
        return str(answer.get("status", "")) if isinstance(answer, dict) else ""

    def responses(self, batch_id: str) -> Iterator[dict]:
        """Every response listed now, each once (by ``id``), read by offset until ``meta.count`` (or a given
        ``_links.next``); a page that adds nothing ends the read."""
        path = f"data-collection/batches/{quote_id(batch_id)}/responses"
        seen: set[str] = set()
        offset = 0
        url: str | None = f"{path}?limit={PAGE_SIZE}&offset=0"
        while url:
            page = self.request("GET", url)
            results = page.get("results") if isinstance(page, dict) else page
            if results is None:
                results = []
            if not isinstance(results, list) or not all(isinstance(item, dict) for item in results):
                raise TaskBuilderError(f"Prolific GET {path}: a list page that is not a list of objects", 502)
            for item in results:
                key = str(item.get("id"))
                if key not in seen:
                    seen.add(key)
                    yield item
            meta = page.get("meta") if isinstance(page, dict) else None
            count = meta.get("count") if isinstance(meta, dict) else None
            link = ((page.get("_links") or {}).get("next") or {}).get("href") if isinstance(page, dict) else None
            offset += len(results)
            if link:
                url = link
            elif results and (offset < count if isinstance(count, int) else len(results) >= PAGE_SIZE):
                url = f"{path}?limit={PAGE_SIZE}&offset={offset}"
            else:
                url = None

    def set_annotators_per_task(self, study_id: str, annotators: int) -> dict:
        """Absolute, so repeatable: the study's places are every task group times this (only grows once published)."""
        body = {"data_collection_metadata": {"annotators_per_task": annotators}}
        return self.request("PATCH", f"studies/{quote_id(study_id)}/", body)
