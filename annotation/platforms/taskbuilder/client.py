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

Written from Prolific's API reference (docs.prolific.com/api-reference/task-builder: datasets,
uploading data, batches, setup, responses) and its open-source CLI (prolific-oss/cli,
``model/ai_task_builder.go``, ``model/study.go``). Not confirmed there, and handled defensively:
an import job listed in the dataset's ``imports`` carries ``import_id`` (or ``id``) and ``status`` as
its status answer does;
a response's ``metadata`` carries the datapoint's ``metadata`` fields (how an answer is tied to its
query); lists are read by pages of ``results`` until a short page or no ``_links.next``; the
datasets and batches of a workspace are listed with ``?workspace_id=`` (how a resource whose
creation lost its answer is found again by its name, which is unique per batch of this site).

The study and submission calls are Prolific's own (:class:`annotation.platforms.prolific.client.Prolific`,
which this client extends): each Prolific endpoint is written once, and its errors are Prolific's
(:class:`TaskBuilderError` is :class:`~annotation.platforms.prolific.client.ProlificError`).

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

from annotation.platforms.prolific.client import Prolific, ProlificError, ProlificUnknownOutcome, cents
from core.backoff import backoff_delay, retry_after_seconds

__all__ = [
    "DATA_COLLECTION_METHOD",
    "IMPORT_DONE",
    "TaskBuilder",
    "TaskBuilderError",
    "TaskBuilderUnknownOutcome",
    "cents",
]

#: The largest answer read (a page of 200 responses, each with its metadata).
MAX_RESPONSE_BYTES = 20 * 1024 * 1024
#: The statuses of an import job that end it (docs: "Get Dataset Import Status").
IMPORT_DONE = frozenset({"complete", "partial", "failed", "pending_schema"})
#: The statuses of an import job that received its file (all but ``uninitialised``, a presigned URL never
#: used, and ``failed``, nothing ingested): the file was sent once, and must not be sent again.
IMPORT_RECEIVED = frozenset({"queued", "processing", "complete", "partial", "pending_schema"})
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

    # -- datasets -----------------------------------------------------------------------
    def create_dataset(self, workspace_id: str, name: str, schema: dict) -> dict:
        """``POST /data-collection/datasets`` with a schema (a V4 dataset). Not repeatable."""
        body = {"name": name, "workspace_id": workspace_id, "schema": schema}
        return self.request("POST", "data-collection/datasets", body, repeatable=False)

    def find_dataset(self, workspace_id: str, name: str) -> dict | None:
        return _named(self.pages(f"data-collection/datasets?workspace_id={_q(workspace_id)}"), name)

    def get_dataset(self, dataset_id: str) -> dict:
        return self.request("GET", f"data-collection/datasets/{_q(dataset_id)}")

    def imports(self, dataset_id: str) -> list[dict] | None:
        """The dataset's import jobs, most recent first, each with its ``import_id`` and ``status`` (``GET``
        of the dataset, its ``imports``: docs "Get a Dataset", V4 datasets); ``None`` when the answer has no
        such list (how a file sent by an attempt whose answer never came is found again)."""
        found = self.get_dataset(dataset_id).get("imports")
        if not isinstance(found, list):
            return None
        jobs = []
        for job in found:
            if isinstance(job, dict) and isinstance(job.get("import_id") or job.get("id"), str):
                jobs.append({**job, "import_id": job.get("import_id") or job["id"], "status": str(job.get("status"))})
        return jobs

    def upload_url(self, dataset_id: str, filename: str) -> dict:
        """A presigned URL for one file and its import job (``upload_url``, ``import_id``): repeatable
        (an unused import job stays ``uninitialised``)."""
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

    def import_status(self, dataset_id: str, import_id: str) -> dict:
        return self.request("GET", f"data-collection/datasets/{_q(dataset_id)}/imports/{_q(import_id)}")

    # -- batches ------------------------------------------------------------------------
    def create_batch(self, fields: dict) -> dict:
        """``POST /data-collection/batches`` (its layout in ``batch_items``). Not repeatable."""
        return self.request("POST", "data-collection/batches", fields, repeatable=False)

    def find_batch(self, workspace_id: str, name: str) -> dict | None:
        return _named(self.pages(f"data-collection/batches?workspace_id={_q(workspace_id)}"), name)

    def set_up_batch(self, batch_id: str, dataset_id: str) -> None:
        """Start making the batch's tasks (asynchronous). Not repeatable: the status says whether it began."""
        body = {"dataset_id": dataset_id}
        self.request("POST", f"data-collection/batches/{_q(batch_id)}/setup", body, repeatable=False)

    def batch_status(self, batch_id: str) -> str:
        answer = self.request("GET", f"data-collection/batches/{_q(batch_id)}/status")
        return str(answer.get("status", "")) if isinstance(answer, dict) else ""

    def responses(self, batch_id: str) -> Iterator[dict]:
        """Every response of the batch (one per task and instruction a participant answered)."""
        return self.pages(f"data-collection/batches/{_q(batch_id)}/responses")


def _q(value: str) -> str:
    return urllib.parse.quote(str(value), safe="")


def _named(items: Iterator[dict], name: str) -> dict | None:
    return next((item for item in items if item.get("name") == name), None)
