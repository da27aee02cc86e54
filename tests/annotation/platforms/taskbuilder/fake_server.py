"""A Task Builder–compatible test server on loopback, written from Prolific's API reference (Task Builder:
datasets, uploading data to a V4 dataset, batches with ``batch_items``, setup, status, responses; and the
study and submission calls a Task Builder study needs).

Not product code (tests import it; the product never does). It behaves as the reference describes:

- a dataset is made with a schema (``text``, ``task_group_id``, ``metadata`` fields; ``strict`` refuses
  unknown fields); ``GET .../upload-url/{filename}`` makes an import job (``uninitialised``) and a
  presigned URL on this server; the PUT of a JSONL file there moves it to ``processing``, and it is
  ``complete`` after ``processing_polls`` looks (a line that breaks the schema makes it ``partial``);
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

Faults, scripted per route name as for the Prolific server (``faults[name]`` used up one per call,
``standing[name]`` for every call): ``throttle`` (429, ``Retry-After: 0``; ``throttle:N``), ``error``
(502, nothing done), ``status:NNN``, ``lose_response`` (done, then the connection dropped).
``duplicate_responses`` lists every response twice (as a page read again would), ``shuffle_responses``
lists them out of order (seeded).
"""

from __future__ import annotations

import datetime as dt
import json
import random
import re
import threading
import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from urllib.parse import parse_qs, urlencode, urlparse

from benchmarks.fakes.loopback import LoopbackServer, serve_in_thread

TOKEN = "test-token"
#: Sessions that give their place back (as on Prolific: returned, timed out, rejected).
FREES_PLACE = {"RETURNED", "TIMED-OUT", "REJECTED"}
API = "api/v1"


def _now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _uuid() -> str:
    return str(uuid.uuid4())


def _hex() -> str:
    return uuid.uuid4().hex[:24]


@dataclass
class FakeTaskBuilder:
    datasets: dict[str, dict] = field(default_factory=dict)
    imports: dict[str, dict] = field(default_factory=dict)
    batches: dict[str, dict] = field(default_factory=dict)
    studies: dict[str, dict] = field(default_factory=dict)
    submissions: dict[str, dict] = field(default_factory=dict)
    responses: list[dict] = field(default_factory=list)
    calls: list[str] = field(default_factory=list)
    faults: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    standing: dict[str, str] = field(default_factory=dict)
    page_size: int = 3
    processing_polls: int = 2
    duplicate_responses: bool = False
    shuffle_responses: bool = False
    base: str = ""
    lock: threading.Lock = field(default_factory=threading.Lock)

    ROUTES = (
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
        ("POST", rf"{API}/studies", "create_study"),
        ("GET", rf"{API}/projects/(?P<project>[^/]+)/studies", "list_studies"),
        ("GET", rf"{API}/studies/(?P<study>[^/]+)", "get_study"),
        ("PATCH", rf"{API}/studies/(?P<study>[^/]+)", "update_study"),
        ("POST", rf"{API}/studies/(?P<study>[^/]+)/transition", "transition_study"),
        ("GET", rf"{API}/studies/(?P<study>[^/]+)/submissions", "list_submissions"),
        ("POST", rf"{API}/submissions/(?P<submission>[^/]+)/transition", "transition_submission"),
    )

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
            done = {key: sum(1 for s in taken if s["group"] == key) for key in batch["groups"]}
            group = min(batch["groups"], key=lambda key: (done[key], list(batch["groups"]).index(key)))
            session = _hex()
            self.submissions[session] = {
                "id": session,
                "study_id": study_id,
                "participant_id": participant_id,
                "status": "ACTIVE",
                "started_at": _now(),
                "completed_at": None,
                "group": group,
            }
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
            for point in batch["groups"][submission["group"]]:
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

    def start(self, study_id: str, participant_id: str, choose, answered: int = 1) -> str:
        """A participant still working: a place taken, ``answered`` tasks answered, nothing submitted."""
        return self.work(study_id, participant_id, choose, finish=False, answered=answered)

    # -- routing ----------------------------------------------------------------------------------
    def route(self, method: str, path: str) -> tuple[str, dict] | None:
        path = path.strip("/")
        for verb, pattern, name in self.ROUTES:
            match = re.fullmatch(pattern, path)
            if verb == method and match:
                return name, match.groupdict()
        return None

    def _page(self, items: list[dict], query: dict, path: str) -> dict:
        limit = min(int(query.get("limit", ["100"])[0]), self.page_size)
        offset = int(query.get("offset", ["0"])[0])
        page = {"results": items[offset : offset + limit], "meta": {"count": len(items)}, "_links": {"next": None}}
        if offset + limit < len(items):
            rest = {k: v[0] for k, v in query.items() if k not in ("limit", "offset")}
            page["_links"]["next"] = {
                "href": f"{self.base}/{path}?{urlencode({**rest, 'limit': limit, 'offset': offset + limit})}"
            }
        return page

    def handle(self, method: str, path: str, query: dict, body, token: str) -> tuple[int, dict, dict]:
        found = self.route(method, path)
        if found is None:
            return 404, {"error": {"detail": f"no route {method} {path}"}}, {}
        name, args = found
        self.calls.append(name)
        if name != "upload" and token != f"Token {TOKEN}":
            return 401, {"error": {"detail": "Invalid token."}}, {}
        fault = self.faults[name].pop(0) if self.faults[name] else self.standing.get(name)
        if fault and fault.startswith("throttle"):
            return 429, {"error": {"detail": "Request was throttled."}}, {"Retry-After": fault.partition(":")[2] or "0"}
        if fault == "error":
            return 502, {"error": {"detail": "Bad gateway"}}, {}
        if fault and fault.startswith("status:"):
            return int(fault.partition(":")[2]), {"error": {"detail": f"scripted {fault}"}}, {}
        status, answer = getattr(self, name)(args, query, body)
        if fault == "lose_response":
            return -1, {}, {}
        return status, answer, {}

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
        return 201, self._public(dataset)

    @staticmethod
    def _public(dataset: dict) -> dict:
        return {k: v for k, v in dataset.items() if k != "datapoints"}

    def list_datasets(self, args, query, body):
        workspace = query.get("workspace_id", [""])[0]
        items = [self._public(d) for d in self.datasets.values() if d["workspace_id"] == workspace]
        return 200, self._page(items, query, f"{API}/data-collection/datasets")

    def get_dataset(self, args, query, body):
        dataset = self.datasets.get(args["dataset"])
        return (200, self._public(dataset)) if dataset else (404, {"error": {"detail": "Not found."}})

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
        job.update(status="processing", accepted=accepted, rejected=rejected)
        return 200, {}

    def import_status(self, args, query, body):
        job = self.imports.get(args["import_id"])
        if job is None or job["dataset_id"] != args["dataset"]:
            return 404, {"error": {"detail": "Not found."}}
        if job["status"] == "processing":
            job["looks"] += 1
            if job["looks"] >= self.processing_polls:
                dataset = self.datasets[job["dataset_id"]]
                dataset["datapoints"] += job["accepted"]
                dataset["total_datapoint_count"] = len(dataset["datapoints"])
                job["status"] = "partial" if job["rejected"] else "complete"
        answer = {"id": job["id"], "status": job["status"]}
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
        return 200, self._page(items, query, f"{API}/data-collection/batches")

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
        return 200, self._page(items, query, f"{API}/data-collection/batches/{args['batch']}/responses")

    # -- the study --------------------------------------------------------------------------------
    def create_study(self, args, query, body):
        required = ("name", "internal_name", "description", "completion_codes", "reward", "total_available_places")
        missing = [k for k in required if k not in body]
        if missing:
            return 400, {"error": {"detail": {k: ["This field is required."] for k in missing}}}
        if body.get("data_collection_method") != "AI_TASK_BUILDER_BATCH":
            return 400, {"error": {"detail": "a Task Builder study needs data_collection_method AI_TASK_BUILDER_BATCH"}}
        batch = self.batches.get(body.get("data_collection_id") or "")
        if batch is None or batch["status"] != "READY":
            return 400, {"error": {"detail": "data_collection_id must be a READY Task Builder batch"}}
        study = dict(body, id=_hex(), status="UNPUBLISHED")
        self.studies[study["id"]] = study
        return 201, study

    def list_studies(self, args, query, body):
        items = [s for s in self.studies.values() if s.get("project") == args["project"]]
        return 200, self._page(items, query, f"{API}/projects/{args['project']}/studies/")

    def get_study(self, args, query, body):
        study = self.studies.get(args["study"])
        return (200, study) if study else (404, {"error": {"detail": "Not found."}})

    def update_study(self, args, query, body):
        study = self.studies[args["study"]]
        study.update({k: v for k, v in body.items() if k == "total_available_places"})
        return 200, study

    def transition_study(self, args, query, body):
        study = self.studies[args["study"]]
        allowed = {"PUBLISH": {"UNPUBLISHED"}, "STOP": {"ACTIVE", "PAUSED"}}
        action = body.get("action")
        if study["status"] not in allowed.get(action, set()):
            return 400, {"error": {"detail": f"cannot {action} a study that is {study['status']}"}}
        study["status"] = {"PUBLISH": "ACTIVE", "STOP": "COMPLETED"}[action]
        return 200, study

    def list_submissions(self, args, query, body):
        items = [
            {k: v for k, v in s.items() if k != "group"}
            for s in self.submissions.values()
            if s["study_id"] == args["study"]
        ]
        return 200, self._page(items, query, f"{API}/studies/{args['study']}/submissions/")

    def transition_submission(self, args, query, body):
        submission = self.submissions.get(args["submission"])
        if submission is None:
            return 404, {"error": {"detail": "Not found."}}
        target = {"APPROVE": "APPROVED", "REJECT": "REJECTED"}.get(body.get("action"))
        if target is None:
            return 400, {"error": {"detail": f"unknown action {body.get('action')}"}}
        if submission["status"] == target:
            return 200, submission
        if submission["status"] != "AWAITING REVIEW":
            return 400, {"error": {"detail": f"cannot {body['action']} a submission that is {submission['status']}"}}
        if target == "REJECTED":
            if len(body.get("message", "")) < 100 or not body.get("rejection_category"):
                return 400, {"error": {"detail": "message (100+ characters) and rejection_category are required"}}
            submission["rejection"] = (body["rejection_category"], body["message"])
        submission["status"] = target
        return 200, {k: v for k, v in submission.items() if k != "group"}


class _Handler(BaseHTTPRequestHandler):
    server: LoopbackServer

    def _serve(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        url = urlparse(self.path)
        fake = self.server.fake
        if url.path.startswith("/s3/"):
            body = raw
        else:
            try:
                body = json.loads(raw) if raw else {}
            except ValueError:
                body = None
        with self.server.lock, fake.lock:
            if body is None:
                status, answer, headers = 400, {"error": {"detail": "the body is not JSON"}}, {}
            else:
                status, answer, headers = fake.handle(
                    self.command, url.path, parse_qs(url.query), body, self.headers.get("Authorization", "")
                )
        if status == -1:  # done; the answer never arrives
            self.close_connection = True
            self.connection.shutdown(2)
            return
        data = json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, value in headers.items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def _quietly(self):
        try:
            self._serve()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    do_GET = do_POST = do_PATCH = do_PUT = _quietly

    def log_message(self, *args):
        pass


def serve(fake: FakeTaskBuilder) -> tuple[str, LoopbackServer]:
    """Serve ``fake`` on a free loopback port; returns the API's base URL (``.../api/v1/``) and the server."""
    server = serve_in_thread(_Handler, fake)
    fake.base = server.base
    return f"{server.base}/{API}/", server
