"""A Task Builder–compatible test server on loopback, written from Prolific's API reference (Task Builder:
datasets, uploading data to a V4 dataset, batches with ``batch_items``, setup, status, responses; and the
study and submission calls a Task Builder study needs).

Not product code (tests import it; the product never does). It behaves as the reference describes:

- a dataset is made with a schema (``text``, ``task_group_id``, ``metadata`` fields; ``strict`` refuses
  unknown fields); ``GET .../upload-url/{filename}`` makes an import job (``uninitialised``) and a
  presigned URL on this server; the PUT of a JSONL file there moves it to ``processing`` (the same URL
  PUT again changes nothing), and it is ``complete`` after ``processing_polls`` looks (a line that
  breaks the schema makes it ``partial``), its accepted lines appended to the dataset's datapoints
  (every file received is appended: a file uploaded twice is there twice); a dataset's imports are
  run one at a time in arrival order (a later one is ``queued`` meanwhile); ``GET`` of a dataset lists
  its import jobs (``imports``, most recent first, as the reference's "Get a Dataset" for V4);
- a batch's ``batch_items`` may reference only the dataset's ``text`` fields; its setup needs a
  complete import and is refused once begun; it is ``PROCESSING`` for ``processing_polls`` looks,
  then ``READY``, the datapoints grouped into task groups by their ``task_group_id`` field;
- a study made with ``data_collection_method`` ``AI_TASK_BUILDER_BATCH`` needs a ``READY`` batch as
  ``data_collection_id``; ``PUBLISH`` makes it ``ACTIVE``; a participant (:meth:`FakeTaskBuilder.work`)
  takes a place (a returned, timed-out or rejected session gives its place back), gets the task group
  done by fewest, answers each task (a ``multiple_choice`` response
  with the datapoint's ``metadata``) and submits (``AWAITING REVIEW``); :meth:`start` leaves one working
  (``ACTIVE``, some answers given);
- submissions are approved or rejected once (the same transition twice is ignored; a rejection needs
  a category and a message of 100 characters or more).

The study and submission endpoints are the Prolific server's (:class:`FakeTaskBuilder` extends
:class:`tests.annotation.platforms.prolific.fake_server.FakeProlific`, its routes, paging, token check,
faults and serving): a Task Builder study is a Prolific study whose data are collected on Prolific, so
what the Prolific server does with a study, its places and its submissions is written once. This server
adds the ``data-collection`` routes, the presigned upload (no token) and the participants' work.

Faults, scripted per route name as for the Prolific server (``faults[name]`` used up one per call,
``standing[name]`` for every call): ``throttle`` (429, ``Retry-After: 0``; ``throttle:N``), ``error``
(502, nothing done), ``status:NNN``, ``lose_response`` (done, then the connection dropped), and the
Prolific server's random ``shares``. ``duplicate_responses`` lists every response twice (as a page read
again would), ``shuffle_responses`` lists them out of order (seeded).
"""

from __future__ import annotations

import itertools
import json
import random
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field

from tests.annotation.platforms.prolific import fake_server as prolific
from tests.annotation.platforms.prolific.fake_server import FREES_PLACE, TOKEN, FakeProlific, _now

__all__ = ["FREES_PLACE", "TOKEN", "FakeTaskBuilder", "serve"]

API = "api/v1"


def _uuid() -> str:
    return str(uuid.uuid4())


@dataclass
class FakeTaskBuilder(FakeProlific):
    datasets: dict[str, dict] = field(default_factory=dict)
    imports: dict[str, dict] = field(default_factory=dict)
    batches: dict[str, dict] = field(default_factory=dict)
    responses: list[dict] = field(default_factory=list)
    #: The task group (a HIT) each session labels.
    task_groups: dict[str, str] = field(default_factory=dict)
    _arrivals: Iterator[int] = field(default_factory=lambda: itertools.count(1))
    page_size: int = 3
    processing_polls: int = 2
    duplicate_responses: bool = False
    shuffle_responses: bool = False
    #: Held by the participants' work and by every API call (the server's threads), so they never interleave.
    lock: threading.RLock = field(default_factory=threading.RLock)

    UNAUTHENTICATED = FakeProlific.UNAUTHENTICATED | {"upload"}
    RAW_BODY_PATHS = ("/s3/",)
    ROUTES = [
        *FakeProlific.ROUTES,
        ("POST", rf"{API}/data-collection/datasets", "create_dataset"),
        ("GET", rf"{API}/data-collection/datasets", "list_datasets"),
        ("GET", rf"{API}/data-collection/datasets/(?P<dataset>[^/]+)", "get_dataset"),
        ("GET", rf"{API}/data-collection/datasets/(?P<dataset>[^/]+)/upload-url/(?P<filename>[^/]+)", "upload_url"),
        ("GET", rf"{API}/data-collection/datasets/(?P<dataset>[^/]+)/imports/(?P<import_id>[^/]+)", "import_status"),
        ("PUT", r"s3/(?P<import_id>[^/]+)", "upload"),
        ("POST", rf"{API}/data-collection/batches", "create_batch"),
        ("GET", rf"{API}/data-collection/batches", "list_batches"),
        ("POST", rf"{API}/data-collection/batches/(?P<batch>[^/]+)/setup", "set_up_batch"),
        ("GET", rf"{API}/data-collection/batches/(?P<batch>[^/]+)/status", "batch_status"),
        ("GET", rf"{API}/data-collection/batches/(?P<batch>[^/]+)/responses", "list_responses"),
    ]

    # -- participants (the test plays them) -------------------------------------------------------
    def work(
        self, study_id: str, participant_id: str, choose, *, finish: bool = True, answered: int | None = None
    ) -> str:
        """``participant_id`` takes a place in the study and labels the task group done by fewest:
        ``choose(datapoint) -> value`` per task; submitted unless ``finish`` is False (then only
        ``answered`` tasks are answered). Returns the session (submission) id."""
        with self.lock:
            study = self.studies[study_id]
            taken = [
                s for s in self.submissions.values() if s["study_id"] == study_id and s["status"] not in FREES_PLACE
            ]
            if study["status"] != "ACTIVE" or len(taken) >= study["total_available_places"]:
                raise ValueError(f"study {study_id} is {study['status']} with {len(taken)} places taken")
            if any(s["participant_id"] == participant_id for s in taken):
                raise ValueError(f"{participant_id} took part already")
            batch = self.batches[study["data_collection_id"]]
            done = {key: sum(1 for s in taken if self.task_groups[s["id"]] == key) for key in batch["groups"]}
            group = min(batch["groups"], key=lambda key: (done[key], list(batch["groups"]).index(key)))
            session = self._new_submission(study_id, participant_id)
            self.task_groups[session] = group
            points = batch["groups"][group]
            for point in points[: len(points) if answered is None else answered]:
                self._answer(batch, self.submissions[session], point, choose)
            if finish:
                self.submissions[session].update(status="AWAITING REVIEW", completed_at=_now())
            return session

    def finish(self, session: str, choose) -> None:
        """The participant working in ``session`` answers the rest of their task group and submits."""
        with self.lock:
            submission = self.submissions[session]
            batch = self.batches[self.studies[submission["study_id"]]["data_collection_id"]]
            answered = {r["task_id"] for r in self.responses if r["submission_id"] == session}
            for point in batch["groups"][self.task_groups[session]]:
                if point["task_id"] not in answered:
                    self._answer(batch, submission, point, choose)
            submission.update(status="AWAITING REVIEW", completed_at=_now())

    def _answer(self, batch: dict, submission: dict, point: dict, choose) -> None:
        self.responses.append(
            {
                "id": _uuid(),
                "batch_id": batch["id"],
                "participant_id": submission["participant_id"],
                "submission_id": submission["id"],
                "task_id": point["task_id"],
                "correlation_id": _uuid(),
                "metadata": {k: point[k] for k in batch["metadata_fields"] if k in point},
                "response": {
                    "instruction_id": batch["instruction_id"],
                    "type": "multiple_choice",
                    "answer": [{"value": choose(point)}],
                },
                "created_at": _now(),
                "schema_version": 4,
            }
        )

    def start(self, study_id: str, participant_id: str, choose, answered: int = 1) -> str:  # type: ignore[override]
        """A participant still working: a place taken, ``answered`` tasks answered, nothing submitted
        (on Prolific's own pages: no study URL to follow, unlike :meth:`FakeProlific.start`)."""
        return self.work(study_id, participant_id, choose, finish=False, answered=answered)

    # -- routing: the Prolific server's, under this server's lock ----------------------------------
    def handle(self, method: str, path: str, query: dict, body, token: str) -> tuple[int, dict, dict, str]:
        with self.lock:
            return super().handle(method, path, query, body, token)

    def _list(self, items: list[dict], query: dict, path: str) -> dict:
        return self._page(items, query, f"{self.base}/{path}")

    # -- datasets ---------------------------------------------------------------------------------
    def create_dataset(self, args, query, body):
        schema = body.get("schema") or {}
        fields = schema.get("fields") or {}
        if not body.get("name") or not body.get("workspace_id") or not fields:
            return 400, {"error": {"detail": "name, workspace_id and a schema with fields are required"}}
        kinds = {"text", "image_url", "audio_url", "video_url", "metadata", "task_group_id"}
        if any(f.get("type") not in kinds for f in fields.values()):
            return 400, {"error": {"detail": "unknown field type"}}
        dataset = {
            "id": _uuid(),
            "name": body["name"],
            "workspace_id": body["workspace_id"],
            "schema": schema,
            "created_at": _now(),
            "total_datapoint_count": 0,
            "datapoints": [],
        }
        self.datasets[dataset["id"]] = dataset
        return 201, self._public_dataset(dataset)

    def _public_dataset(self, dataset: dict) -> dict:
        jobs = [j for j in self.imports.values() if j["dataset_id"] == dataset["id"]]
        listed = [{"import_id": j["id"], "status": j["status"], "type": "file_upload"} for j in reversed(jobs)]
        return {k: v for k, v in dataset.items() if k != "datapoints"} | {"imports": listed}

    def list_datasets(self, args, query, body):
        workspace = query.get("workspace_id", [""])[0]
        items = [self._public_dataset(d) for d in self.datasets.values() if d["workspace_id"] == workspace]
        return 200, self._list(items, query, f"{API}/data-collection/datasets")

    def get_dataset(self, args, query, body):
        dataset = self.datasets.get(args["dataset"])
        if dataset:
            self._tick(dataset["id"])
        return (200, self._public_dataset(dataset)) if dataset else (404, {"error": {"detail": "Not found."}})

    def upload_url(self, args, query, body):
        if args["dataset"] not in self.datasets:
            return 404, {"error": {"detail": "Not found."}}
        job = {"id": _uuid(), "dataset_id": args["dataset"], "status": "uninitialised", "looks": 0}
        self.imports[job["id"]] = job
        return 200, {
            "upload_url": f"{self.base}/s3/{job['id']}?X-Amz-Signature=fake",
            "http_method": "PUT",
            "import_id": job["id"],
            "content_type": "application/jsonl",
        }

    def upload(self, args, query, body):
        job = self.imports.get(args["import_id"])
        if job is None:
            return 403, {"error": {"detail": "signature does not match"}}
        if job["status"] != "uninitialised":
            return 200, {}  # the same object PUT again: S3 keeps the last, the import job runs once
        dataset = self.datasets[job["dataset_id"]]
        fields = dataset["schema"]["fields"]
        accepted, rejected = [], 0
        for line in (body or b"").decode().splitlines():
            if not line.strip():
                continue
            try:
                point = json.loads(line)
            except ValueError:
                rejected += 1
                continue
            if dataset["schema"].get("strict") and set(point) - set(fields):
                rejected += 1
                continue
            accepted.append(point)
        job.update(status="processing", accepted=accepted, rejected=rejected, arrived=next(self._arrivals))
        return 200, {}

    def _tick(self, dataset_id: str) -> None:
        """Time passes for the dataset's imports (at each look at the dataset or one of its imports): the
        first received one not finished gets one look (they
        run one at a time in arrival order, the others ``queued``); after ``processing_polls`` looks its
        accepted lines are appended to the dataset."""
        waiting = sorted(
            (
                j
                for j in self.imports.values()
                if j["dataset_id"] == dataset_id and j["status"] in ("processing", "queued")
            ),
            key=lambda j: j["arrived"],
        )
        for position, job in enumerate(waiting):
            job["status"] = "processing" if position == 0 else "queued"
        if waiting:
            job = waiting[0]
            job["looks"] += 1
            if job["looks"] >= self.processing_polls:
                dataset = self.datasets[dataset_id]
                dataset["datapoints"] += job["accepted"]
                dataset["total_datapoint_count"] = len(dataset["datapoints"])
                job["status"] = "partial" if job["rejected"] else "complete"

    def import_status(self, args, query, body):
        job = self.imports.get(args["import_id"])
        if job is None or job["dataset_id"] != args["dataset"]:
            return 404, {"error": {"detail": "Not found."}}
        self._tick(job["dataset_id"])
        answer = {"id": job["id"], "import_id": job["id"], "status": job["status"]}
        if job["status"] in ("complete", "partial"):
            answer["accepted_count"] = len(job["accepted"])
        if job["status"] == "partial":
            answer["rejected_count"] = job["rejected"]
        return 200, answer

    # -- batches ----------------------------------------------------------------------------------
    def create_batch(self, args, query, body):
        dataset = self.datasets.get(body.get("dataset_id") or "")
        if not body.get("name") or not body.get("workspace_id") or dataset is None:
            return 400, {"error": {"detail": "name, workspace_id and an existing dataset_id are required"}}
        fields = dataset["schema"]["fields"]
        instructions = []
        for page in body.get("batch_items") or []:
            for row in page.get("rows") or []:
                for column in row.get("columns") or []:
                    for item in column.get("items") or []:
                        if item.get("type") == "dataset_field":
                            if fields.get(item.get("field"), {}).get("type") not in ("text", "image_url"):
                                return 422, {"error": {"detail": f"dataset_field {item.get('field')!r} is not shown"}}
                        elif item.get("type") == "multiple_choice":
                            if not item.get("description") or not item.get("options") or not item.get("answer_limit"):
                                return 422, {
                                    "error": {"detail": "multiple_choice needs description, options, answer_limit"}
                                }
                            instructions.append(dict(item, id=_uuid()))
        if not instructions:
            return 422, {"error": {"detail": "batch_items hold no instruction"}}
        batch = {
            "id": _uuid(),
            "name": body["name"],
            "workspace_id": body["workspace_id"],
            "dataset_id": dataset["id"],
            "status": "UNINITIALISED",
            "created_at": _now(),
            "batch_items": body["batch_items"],
            "instruction_id": instructions[0]["id"],
            "options": [o["value"] for o in instructions[0]["options"]],
            "looks": 0,
            "groups": {},
            "metadata_fields": [k for k, f in fields.items() if f["type"] == "metadata"],
        }
        self.batches[batch["id"]] = batch
        return 201, self._public_batch(batch)

    @staticmethod
    def _public_batch(batch: dict) -> dict:
        keep = ("id", "name", "workspace_id", "status", "created_at", "batch_items")
        return {k: batch[k] for k in keep} | {"total_task_count": sum(len(g) for g in batch["groups"].values())}

    def list_batches(self, args, query, body):
        workspace = query.get("workspace_id", [""])[0]
        items = [self._public_batch(b) for b in self.batches.values() if b["workspace_id"] == workspace]
        return 200, self._list(items, query, f"{API}/data-collection/batches")

    def set_up_batch(self, args, query, body):
        batch = self.batches.get(args["batch"])
        if batch is None:
            return 404, {"error": {"detail": "Not found."}}
        if batch["status"] != "UNINITIALISED":
            return 400, {"error": {"detail": f"batch is {batch['status']}: set up already"}}
        dataset = self.datasets[body.get("dataset_id") or batch["dataset_id"]]
        if not any(j["status"] == "complete" and j["dataset_id"] == dataset["id"] for j in self.imports.values()):
            return 400, {"error": {"detail": "the dataset has no complete import"}}
        group_field = next(k for k, f in dataset["schema"]["fields"].items() if f["type"] == "task_group_id")
        for point in dataset["datapoints"]:
            batch["groups"].setdefault(point[group_field], []).append(dict(point, task_id=_uuid()))
        batch["status"] = "PROCESSING"
        return 202, {}

    def batch_status(self, args, query, body):
        batch = self.batches.get(args["batch"])
        if batch is None:
            return 404, {"error": {"detail": "Not found."}}
        if batch["status"] == "PROCESSING":
            batch["looks"] += 1
            if batch["looks"] >= self.processing_polls:
                batch["status"] = "READY"
        return 200, {"status": batch["status"]}

    def list_responses(self, args, query, body):
        if args["batch"] not in self.batches:
            return 404, {"error": {"detail": "Not found."}}
        items = [r for r in self.responses if r["batch_id"] == args["batch"]]
        if self.duplicate_responses:
            items = [r for r in items for _ in (0, 1)]
        if self.shuffle_responses:
            items = random.Random(7).sample(items, len(items))
        return 200, self._list(items, query, f"{API}/data-collection/batches/{args['batch']}/responses")

    # -- the study: Prolific's, with the Task Builder batch it collects with checked ---------------------
    def create_study(self, args, query, body):
        if body.get("data_collection_method") != "AI_TASK_BUILDER_BATCH":
            return 400, {"error": {"detail": "a Task Builder study needs data_collection_method AI_TASK_BUILDER_BATCH"}}
        batch = self.batches.get(body.get("data_collection_id") or "")
        if batch is None or batch["status"] != "READY":
            return 400, {"error": {"detail": "data_collection_id must be a READY Task Builder batch"}}
        return super().create_study(args, query, body)


def serve(fake: FakeTaskBuilder) -> tuple[str, prolific.LoopbackServer]:
    """Serve ``fake`` on a free loopback port (as the Prolific server is); returns the API's base URL
    (``.../api/v1/``) and the server."""
    base, server = prolific.serve(fake)
    return f"{base}/{API}/", server
