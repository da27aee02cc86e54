"""A Task Builder–compatible test server on loopback, held to Prolific's published API reference
(``publicapi.yaml``, through :mod:`tests.platforms.prolific.contract`, which the Prolific
server it extends applies to every call and answer) and, where the reference is silent, to Prolific's
pages ("Working with Datasets", "Defining a Dataset Schema", "Create a Batch").

Not product code (tests import it; the product never does). It behaves as they describe:

- a dataset is made with a schema (``text``, ``task_group_id``, ``metadata`` fields; ``strict`` refuses
  unknown fields), ``UNINITIALISED``; ``GET .../upload-url/{filename}`` (201) gives a presigned URL on
  this server; the PUT of a JSONL file there makes the dataset ``PROCESSING`` (the same URL PUT again
  changes nothing), and ``READY`` after ``processing_polls`` looks at its status (``ERROR`` when a line
  breaks the schema), its lines appended to the dataset's datapoints (every file received is appended:
  a file uploaded twice is there twice). No list of datasets, no dataset by id, no import jobs: the
  reference has none (405/404);
- a batch's ``batch_items`` may reference only the dataset's ``text`` fields; its setup needs a ``READY``
  dataset and is refused once begun (204); it is ``PROCESSING`` for ``processing_polls`` looks, then
  ``READY``, the datapoints grouped into task groups by their ``task_group_id`` field;
- a study made with ``data_collection_method`` ``AI_TASK_BUILDER_BATCH`` needs a ``READY`` batch as
  ``data_collection_id``; its places are every task group times ``data_collection_metadata.
  annotators_per_task`` (1 when not given), recounted so when that number is raised; ``PUBLISH`` makes it
  ``ACTIVE``; a participant (:meth:`FakeTaskBuilder.work`) takes a place in a task group that has fewer
  than that many participants (a returned, timed-out or rejected session gives its place back; with none
  left, no one can start), the one done by fewest, answers each task (a ``multiple_choice`` response
  with the datapoint's ``metadata``; with ``change_share`` an answer is first given otherwise and changed,
  a later response) and submits (``AWAITING REVIEW``); :meth:`start` leaves one working;
- responses are listed in pages of ``results`` with ``meta.count`` and no links (the reference's shape),
  ``page_size`` at a time by ``offset``; with ``late_share`` a share of them is listed only up to
  ``late_seconds`` later on the server's ``clock`` (Prolific lists responses after the submission that
  made them; :meth:`advance` moves the clock);
- submissions are approved or rejected once (the same transition twice is ignored; a rejection needs
  a category and a message of 100 characters or more).

The study and submission endpoints are the Prolific server's (:class:`FakeTaskBuilder` extends
:class:`tests.platforms.prolific.fake_server.FakeProlific`, its routes, paging, token check,
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

import datetime as dt
import itertools
import json
import random
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field

from tests.platforms.prolific import fake_server as prolific
from tests.platforms.prolific.fake_server import FREES_PLACE, TOKEN, FakeProlific, _now

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
    #: The server's clock (participants work, submit and responses are listed on it; :meth:`advance` moves it).
    clock: dt.datetime = field(default_factory=lambda: dt.datetime.now(dt.UTC).replace(microsecond=0))
    #: A share of responses listed only some time (up to ``late_seconds``, uniform) after they were given.
    late_share: float = 0.0
    late_seconds: float = 40.0
    #: A share of answers first given otherwise, then changed (a later response for the same task).
    change_share: float = 0.0
    seed: int = 0
    _rng: random.Random | None = None
    _clock: Iterator[int] = field(default_factory=lambda: itertools.count(1))
    #: Held by the participants' work and by every API call (the server's threads), so they never interleave.
    lock: threading.RLock = field(default_factory=threading.RLock)

    UNAUTHENTICATED = FakeProlific.UNAUTHENTICATED | {"upload"}
    RAW_BODY_PATHS = ("/s3/",)
    ROUTES = [
        *FakeProlific.ROUTES,
        ("POST", rf"{API}/data-collection/datasets", "create_dataset"),
        ("GET", rf"{API}/data-collection/datasets/(?P<dataset>[^/]+)/status", "dataset_status"),
        ("GET", rf"{API}/data-collection/datasets/(?P<dataset>[^/]+)/upload-url/(?P<filename>[^/]+)", "upload_url"),
        ("PUT", r"s3/(?P<import_id>[^/]+)", "upload"),
        ("POST", rf"{API}/data-collection/batches", "create_batch"),
        ("GET", rf"{API}/data-collection/batches", "list_batches"),
        ("GET", rf"{API}/data-collection/batches/(?P<batch>[^/]+)", "get_batch"),
        ("POST", rf"{API}/data-collection/batches/(?P<batch>[^/]+)/setup", "set_up_batch"),
        ("GET", rf"{API}/data-collection/batches/(?P<batch>[^/]+)/status", "batch_status"),
        ("GET", rf"{API}/data-collection/batches/(?P<batch>[^/]+)/responses", "list_responses"),
    ]

    def rng(self) -> random.Random:
        if self._rng is None:
            self._rng = random.Random(self.seed)
        return self._rng

    def advance(self, seconds: float) -> None:
        """Time passes on the server's clock."""
        with self.lock:
            self.clock += dt.timedelta(seconds=seconds)

    def _stamp(self) -> str:
        """Now on the server's clock, after every other moment it gave (responses are ordered by it, as Prolific's)."""
        moment = self.clock + dt.timedelta(microseconds=next(self._clock))
        return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")

    # -- places: every task group times its annotators -----------------------------------------
    def annotators(self, study: dict) -> int:
        return int((study.get("data_collection_metadata") or {}).get("annotators_per_task") or 1)

    def _recount(self, study: dict) -> None:
        batch = self.batches[study["data_collection_id"]]
        study["total_available_places"] = len(batch["groups"]) * self.annotators(study)

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
            room = [key for key in batch["groups"] if done[key] < self.annotators(study)]
            if not room:
                raise ValueError(f"study {study_id}: no task group has room ({len(taken)} places taken)")
            group = min(room, key=lambda key: (done[key], list(batch["groups"]).index(key)))
            session = self._new_submission(study_id, participant_id)
            self.task_groups[session] = group
            points = batch["groups"][group]
            for point in points[: len(points) if answered is None else answered]:
                self._answer(batch, self.submissions[session], point, choose)
            if finish:
                self.submissions[session].update(status="AWAITING REVIEW", completed_at=self._stamp())
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
            submission.update(status="AWAITING REVIEW", completed_at=self._stamp())

    def _answer(self, batch: dict, submission: dict, point: dict, choose) -> None:
        value = choose(point)
        given = [value]
        if self.change_share and self.rng().random() < self.change_share:
            given = [next(o for o in batch["options"] if o != value), value]  # first another answer, then changed
        for answer in given:
            late = self.late_share and self.rng().random() < self.late_share
            delay = dt.timedelta(seconds=self.rng().uniform(0, self.late_seconds) if late else 0)
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
                        "answer": [{"value": answer}],
                    },
                    "created_at": self._stamp(),
                    "schema_version": 4,
                    "_listed_at": self.clock + delay,
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
            "created_by": "5f0c0ffee0000000000000a1",
            "total_datapoint_count": 0,
            "datapoints": [],
        }
        self.datasets[dataset["id"]] = dataset
        return 201, self._public_dataset(dataset)

    def _status_of(self, dataset_id: str) -> str:
        jobs = [j for j in self.imports.values() if j["dataset_id"] == dataset_id and j["status"] != "uninitialised"]
        if not jobs:
            return "UNINITIALISED"
        if any(j["status"] in ("processing", "queued") for j in jobs):
            return "PROCESSING"
        return "ERROR" if any(j["status"] in ("partial", "failed") for j in jobs) else "READY"

    def _public_dataset(self, dataset: dict) -> dict:
        keep = ("id", "name", "workspace_id", "created_at", "created_by", "total_datapoint_count")
        return {k: dataset[k] for k in keep} | {"status": self._status_of(dataset["id"])}

    def dataset_status(self, args, query, body):
        dataset = self.datasets.get(args["dataset"])
        if dataset is None:
            return 404, {"error": {"detail": "Not found."}}
        self._tick(dataset["id"])
        return 200, {"status": self._status_of(dataset["id"])}

    def upload_url(self, args, query, body):
        if args["dataset"] not in self.datasets:
            return 404, {"error": {"detail": "Not found."}}
        job = {"id": _uuid(), "dataset_id": args["dataset"], "status": "uninitialised", "looks": 0}
        self.imports[job["id"]] = job
        return 201, {
            "upload_url": f"{self.base}/s3/{job['id']}?X-Amz-Signature=fake",
            "http_method": "PUT",
            "dataset_id": args["dataset"],
            "expires_at": "2030-01-01T00:00:00Z",
        }

    def upload(self, args, query, body):
        job = self.imports.get(args["import_id"])
        if job is None:
            return 403, {"error": {"detail": "signature does not match"}}
        if job["status"] != "uninitialised":
            return 200, {}  # the same object PUT again: S3 keeps the last, the import runs once
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
        """Time passes for the dataset's imports (at each look at its status): the first received one not
        finished gets one look (they run one at a time in arrival order, the others ``queued``); after
        ``processing_polls`` looks its accepted lines are appended to the dataset."""
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
            "created_by": "5f0c0ffee0000000000000a1",
            "task_details": body["task_details"],
            "batch_items": body["batch_items"],
            "instruction_id": instructions[0]["id"],
            "options": [o["value"] for o in instructions[0]["options"]],
            "looks": 0,
            "groups": {},
            "metadata_fields": [k for k, f in fields.items() if f["type"] == "metadata"],
        }
        self.batches[batch["id"]] = batch
        return 201, self._public_batch(batch)

    def _public_batch(self, batch: dict) -> dict:
        """As the reference's ``AiTaskBuilderBatch``."""
        dataset = self.datasets[batch["dataset_id"]]
        keep = ("id", "name", "workspace_id", "status", "created_at", "created_by", "task_details")
        return {k: batch[k] for k in keep} | {
            "datasets": [
                {"id": dataset["id"], "total_datapoint_count": dataset["total_datapoint_count"], "filename": "q.jsonl"}
            ],
            "schema_version": 4,
            "total_task_count": sum(len(g) for g in batch["groups"].values()),
            "total_instruction_count": 1,
            "total_task_groups": len(batch["groups"]),
        }

    def list_batches(self, args, query, body):
        workspace = query.get("workspace_id", [""])[0]
        items = [self._public_batch(b) for b in self.batches.values() if b["workspace_id"] == workspace]
        return 200, self._list(items, query, f"{API}/data-collection/batches")

    def get_batch(self, args, query, body):
        batch = self.batches.get(args["batch"])
        return (200, self._public_batch(batch)) if batch else (404, {"error": {"detail": "Not found."}})

    def set_up_batch(self, args, query, body):
        batch = self.batches.get(args["batch"])
        if batch is None:
            return 404, {"error": {"detail": "Not found."}}
        if batch["status"] != "UNINITIALISED":
            return 400, {"error": {"detail": f"batch is {batch['status']}: set up already"}}
        dataset = self.datasets[body.get("dataset_id") or batch["dataset_id"]]
        if self._status_of(dataset["id"]) != "READY":  # the reference: the dataset must be READY
            return 400, {"error": {"detail": f"the dataset is {self._status_of(dataset['id'])}, not READY"}}
        group_field = next(k for k, f in dataset["schema"]["fields"].items() if f["type"] == "task_group_id")
        for point in dataset["datapoints"]:
            batch["groups"].setdefault(point[group_field], []).append(dict(point, task_id=_uuid()))
        batch["status"] = "PROCESSING"
        return 204, None

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
        """Pages of ``results`` with ``meta.count`` and no links, by ``offset`` (the reference's shape); a
        late response is listed once the clock reaches its ``_listed_at``."""
        if args["batch"] not in self.batches:
            return 404, {"error": {"detail": "Not found."}}
        items = [
            {k: v for k, v in r.items() if not k.startswith("_")}
            for r in self.responses
            if r["batch_id"] == args["batch"] and r["_listed_at"] <= self.clock
        ]
        if self.duplicate_responses:
            items = [r for r in items for _ in (0, 1)]
        if self.shuffle_responses:
            items = random.Random(7).sample(items, len(items))
        limit = min(int(query.get("limit", ["100"])[0]), self.page_size)
        offset = int(query.get("offset", ["0"])[0])
        return 200, {"results": items[offset : offset + limit], "meta": {"count": len(items)}}

    # -- the study: Prolific's, with the Task Builder batch it collects with checked ---------------------
    def create_study(self, args, query, body):
        if body.get("data_collection_method") != "AI_TASK_BUILDER_BATCH":
            return 400, {"error": {"detail": "a Task Builder study needs data_collection_method AI_TASK_BUILDER_BATCH"}}
        batch = self.batches.get(body.get("data_collection_id") or "")
        if batch is None or batch["status"] != "READY":
            return 400, {"error": {"detail": "data_collection_id must be a READY Task Builder batch"}}
        status, study = super().create_study(args, query, body)
        if status == 201:
            self._recount(study)  # its places: every task group times its annotators, whatever was asked
        return status, study

    def update_study(self, args, query, body):
        study = self.studies.get(args["study"])
        if study is None:
            return 404, {"error": {"detail": "Not found."}}
        wanted = (body.get("data_collection_metadata") or {}).get("annotators_per_task")
        if wanted is not None and study.get("data_collection_id") in self.batches:
            if study["status"] != "UNPUBLISHED" and int(wanted) < self.annotators(study):
                return 400, {"error": {"detail": "annotators_per_task can only be increased on a published study"}}
            status, _ = super().update_study(args, query, body)
            self._recount(study)
            return status, study
        return super().update_study(args, query, body)


def serve(fake: FakeTaskBuilder) -> tuple[str, prolific.LoopbackServer]:
    """Serve ``fake`` on a free loopback port (as the Prolific server is); returns the API's base URL
    (``.../api/v1/``) and the server."""
    base, server = prolific.serve(fake)
    return f"{base}/{API}/", server
