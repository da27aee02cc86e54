"""A small client for Prolific's Task Builder API (``/api/v1/data-collection/``), built on Prolific's
client (the study and submission calls a Task Builder study needs), over :class:`core.http.JsonClient`.
Pure (no Django).

Prolific hosts the labelling task itself: a *dataset* holds the datapoints (our queries, one per
line of a JSONL file with a schema: the query's text shown, its HIT and field name kept as
metadata, the HIT as the ``task_group_id`` so that one participant labels one HIT's queries in one
submission), a *batch* pairs each datapoint with the instruction (one multiple-choice question,
the four categories), its setup turns them into tasks, and a *study* whose
``data_collection_method`` is the batch (``AI_TASK_BUILDER_BATCH``, ``data_collection_id``) brings
the participants. Their answers are read back with ``GET /data-collection/batches/{id}/responses``;
the study's submissions say which sessions are finished and are approved or rejected as any
Prolific submission.

Checked against Prolific's published API reference (``publicapi.yaml``, April 2026: the contract tests
under tests/platforms/prolific/ hold every call here to it): every call is one of its
operations. Where it and Prolific's documentation pages disagree, the pages are followed, and the
call says so:

- the dataset is made with a ``schema`` (a V4 dataset: a ``task_group_id`` field groups a HIT's queries,
  ``metadata`` fields are kept with each datapoint), as the pages "Working with Datasets" and "Defining a
  Dataset Schema" describe; the reference's request names only ``name`` and ``workspace_id`` (its
  schema allows more);
- the batch is made with ``batch_items`` (the question shown beside the query), as the page "Create a
  Batch" describes, which calls the reference's ``POST .../instructions`` deprecated;
- the pages track a V4 upload by its import job (``GET .../datasets/{id}/imports/{id}``, "Get a
  Dataset"'s ``imports``); the reference offers neither, only ``GET .../datasets/{id}/status``, which
  is what is asked here: ``UNINITIALISED`` until a file arrives, ``READY`` once it is imported;
- there is no list of datasets in the reference (the pages have none either): a dataset is found again
  through the batch it was attached to (``datasets`` of ``GET .../batches?workspace_id=``), and a
  dataset whose creation lost its answer before any batch named it stays empty and unused;
- the reference's responses are pages of ``results`` with ``meta.count`` and no links: they are read
  by offset until ``meta.count`` are seen (a ``_links.next`` followed when one is given);
- how a response is tied to its query: the reference's response has a free ``metadata`` object, and
  "Defining a Dataset Schema" says a ``metadata`` field is "an internal value included in exports";
  the provider reads the datapoint's ``metadata`` fields there and says so, naming the batch, when a
  finished session's responses carry none.

The study and submission calls are Prolific's own (:class:`platforms.prolific.client.Prolific`,
which this client extends): each Prolific endpoint is written once, and its errors are Prolific's
(:class:`TaskBuilderError` is :class:`~platforms.prolific.client.ProlificError`).

Retries are :mod:`core.http`'s: a 429 (``Retry-After`` honoured), a 5xx, a broken connection and
an unreadable answer are retried with back-off when the call is safe to repeat (reads, setting a
study's places, a submission's transition, the upload's PUT of the same bytes). Creating a dataset,
a batch or a study, starting a setup and transitioning a study are not: after a lost answer they
raise :class:`TaskBuilderUnknownOutcome`, and the provider looks the resource up by name before
any second attempt.
"""

from __future__ import annotations

import http.client
import urllib.parse
from collections.abc import Iterator

from core.backoff import backoff_delay, retry_after_seconds
from platforms.prolific.client import PAGE_SIZE, Prolific, ProlificError, ProlificUnknownOutcome, cents

__all__ = [
    "DATASET_DONE",
    "DATA_COLLECTION_METHOD",
    "TaskBuilder",
    "TaskBuilderError",
    "TaskBuilderUnknownOutcome",
    "cents",
]

#: The largest answer read (a page of 200 responses, each with its metadata).
MAX_RESPONSE_BYTES = 20 * 1024 * 1024
#: The statuses of a dataset (and of a batch's setup) that end its processing (reference: "Get Dataset Status").
DATASET_DONE = frozenset({"READY", "ERROR"})
#: The study's data collection method for a Task Builder batch.
DATA_COLLECTION_METHOD = "AI_TASK_BUILDER_BATCH"
#: Prolific's errors, under the names the Task Builder provider speaks of: one API, one kind of error.
TaskBuilderError = ProlificError
TaskBuilderUnknownOutcome = ProlificUnknownOutcome


class TaskBuilder(Prolific):
    """Prolific's API at ``base_url`` (``.../api/v1/``) with ``token``, with Task Builder's calls added to
    Prolific's study and submission calls; ``sleep`` injectable for tests."""

    def __init__(self, base_url: str, token: str, *, max_bytes: int = MAX_RESPONSE_BYTES, **options) -> None:
        super().__init__(base_url, token, max_bytes=max_bytes, **options)

    # -- datasets ---------------------------------------------------------------------------
    def create_dataset(self, workspace_id: str, name: str, schema: dict) -> dict:
        """``POST /data-collection/datasets`` with a schema (a V4 dataset, page "Working with Datasets").
        Not repeatable."""
        body = {"name": name, "workspace_id": workspace_id, "schema": schema}
        return self.request("POST", "data-collection/datasets", body, repeatable=False)

    def dataset_status(self, dataset_id: str) -> str:
        """``GET /data-collection/datasets/{id}/status``: ``UNINITIALISED`` (no file received), ``PROCESSING``,
        ``READY`` or ``ERROR``."""
        answer = self.request("GET", f"data-collection/datasets/{_q(dataset_id)}/status")
        return str(answer.get("status") or "") if isinstance(answer, dict) else ""

    def upload_url(self, dataset_id: str, filename: str) -> dict:
        """A presigned URL for one file (``upload_url``): repeatable (an unused URL changes nothing)."""
        answer = self.request("GET", f"data-collection/datasets/{_q(dataset_id)}/upload-url/{_q(filename)}")
        if not isinstance(answer, dict) or not isinstance(answer.get("upload_url"), str):
            raise TaskBuilderError("Prolific answered an upload URL request without upload_url", 502)
        return answer

    def upload(self, upload_url: str, data: bytes, content_type: str) -> None:
        """PUT the file to the presigned URL (no token: the URL is signed). The same bytes to the same
        URL, so it is repeated after a 429, a 5xx or a lost answer, with :mod:`core.backoff`'s delays."""
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
        """``POST /data-collection/batches`` (its layout in ``batch_items``, page "Create a Batch"). Not repeatable."""
        return self.request("POST", "data-collection/batches", fields, repeatable=False)

    def find_batch(self, workspace_id: str, name: str) -> dict | None:
        """The workspace's batch of this name (``GET /data-collection/batches?workspace_id=``), or ``None``."""
        return _named(self.pages(f"data-collection/batches?workspace_id={_q(workspace_id)}"), name)

    def set_up_batch(self, batch_id: str, dataset_id: str) -> None:
        """Start making the batch's tasks (asynchronous). Not repeatable: the status says whether it began."""
        body = {"dataset_id": dataset_id}
        self.request("POST", f"data-collection/batches/{_q(batch_id)}/setup", body, repeatable=False)

    def batch_status(self, batch_id: str) -> str:
        answer = self.request("GET", f"data-collection/batches/{_q(batch_id)}/status")
        return str(answer.get("status", "")) if isinstance(answer, dict) else ""

    def responses(self, batch_id: str) -> Iterator[dict]:
        """Every response of the batch listed now, each once (by its ``id``): pages of ``results`` read by
        offset until ``meta.count`` are seen (the reference's pages have no links; a ``_links.next`` is
        followed when given); a page that adds nothing ends the read (the rest are read at the next sync)."""
        path = f"data-collection/batches/{_q(batch_id)}/responses"
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

    # -- the study's annotators per task ------------------------------------------------------
    def set_annotators_per_task(self, study_id: str, annotators: int) -> dict:
        """``PATCH /studies/{id}/`` ``data_collection_metadata.annotators_per_task`` (absolute, so repeatable):
        Prolific makes the study's places every task group times this (it can only grow once published)."""
        body = {"data_collection_metadata": {"annotators_per_task": annotators}}
        return self.request("PATCH", f"studies/{_q(study_id)}/", body)


def _q(value: str) -> str:
    return urllib.parse.quote(str(value), safe="")


def _named(items: Iterator[dict], name: str) -> dict | None:
    return next((item for item in items if item.get("name") == name), None)
