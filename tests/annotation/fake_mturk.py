"""A small MTurk-compatible server on loopback, speaking the real wire protocol (JSON 1.1).

It lets the tests drive the product exactly as it runs against MTurk: a real boto3 client
pointed at ``MTURK_ENDPOINT_URL``, real HTTP, botocore's own request signing, retries and
error parsing. Only the operations the product uses are implemented. Faults can be
scripted per operation: ``throttle`` answers ThrottlingException, ``refuse`` a RequestError
(not retried), ``lose_response``
carries out the request and then answers 500 as if the response had been lost on the way.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TARGET_PREFIX = "MTurkRequesterServiceV20170117."


def _id() -> str:
    return uuid.uuid4().hex[:30].upper()


@dataclass
class FakeMTurk:
    hit_types: dict[str, dict] = field(default_factory=dict)
    hits: dict[str, dict] = field(default_factory=dict)
    tokens: dict[str, str] = field(default_factory=dict)
    assignments: dict[str, dict] = field(default_factory=dict)
    calls: list[str] = field(default_factory=list)
    faults: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    page_size: int = 2
    #: CreateWorkerBlock calls: (WorkerId, Reason), repeats included.
    blocks: list[tuple[str, str]] = field(default_factory=list)
    #: Idempotency tokens of CreateAdditionalAssignmentsForHIT already processed.
    extension_tokens: set[str] = field(default_factory=set)

    # -- what workers do ------------------------------------------------------------
    def submit(self, hit_id: str, worker_id: str, answer_xml: str) -> str:
        """A worker accepts and submits; like MTurk, only while the HIT has a place left
        (a rejected assignment keeps its place: only an extension adds one)."""
        taken = sum(1 for a in self.assignments.values() if a["HITId"] == hit_id)
        if taken >= self.hits[hit_id]["MaxAssignments"]:
            raise LookupError(f"HIT {hit_id} has no assignment left")
        assignment_id = _id()
        self.assignments[assignment_id] = {
            "AssignmentId": assignment_id,
            "WorkerId": worker_id,
            "HITId": hit_id,
            "AssignmentStatus": "Submitted",
            "AcceptTime": time.time() - 60,
            "SubmitTime": time.time(),
            "Answer": answer_xml,
        }
        return assignment_id

    # -- the API ----------------------------------------------------------------------
    def handle(self, operation: str, body: dict) -> tuple[int, dict]:
        self.calls.append(operation)
        fault = self.faults[operation].pop(0) if self.faults[operation] else None
        if fault == "throttle":
            return 400, {"__type": "ThrottlingException", "message": "Rate exceeded"}
        if fault == "refuse":  # refused outright: not retried, nothing done
            return 400, {"__type": "RequestError", "Message": "the request was refused (scripted fault)"}
        status, answer = getattr(self, operation)(body)
        if fault == "lose_response":
            return 500, {"__type": "ServiceFault", "Message": "the response was lost"}
        return status, answer

    def GetAccountBalance(self, body):
        return 200, {"AvailableBalance": "10000.00"}

    def CreateHITType(self, body):
        hit_type_id = _id()
        self.hit_types[hit_type_id] = body
        return 200, {"HITTypeId": hit_type_id}

    def CreateHITWithHITType(self, body):
        token = body.get("UniqueRequestToken")
        if token in self.tokens:
            hit_id = self.tokens[token]
            return 400, {
                "__type": "RequestError",
                "Message": f"There is already a HIT which exists with the same Unique Request Token. HITId: {hit_id}",
                "TurkErrorCode": "AWS.MechanicalTurk.HitAlreadyExists",
            }
        hit_id = _id()
        hit = {
            "HITId": hit_id,
            "HITTypeId": body["HITTypeId"],
            "Question": body["Question"],
            "MaxAssignments": body["MaxAssignments"],
            "RequesterAnnotation": body.get("RequesterAnnotation", ""),
            "HITStatus": "Assignable",
            "CreationTime": time.time(),
        }
        self.hits[hit_id] = hit
        if token:
            self.tokens[token] = hit_id
        return 200, {"HIT": hit}

    def ListHITs(self, body):
        return 200, {"HITs": list(self.hits.values()), "NumResults": len(self.hits)}

    def ListAssignmentsForHIT(self, body):
        statuses = set(body.get("AssignmentStatuses") or ["Submitted", "Approved", "Rejected"])
        matching = [
            a for a in self.assignments.values() if a["HITId"] == body["HITId"] and a["AssignmentStatus"] in statuses
        ]
        start = int(body.get("NextToken") or 0)
        page = matching[start : start + self.page_size]
        answer = {"Assignments": page, "NumResults": len(page)}
        if start + self.page_size < len(matching):
            answer["NextToken"] = str(start + self.page_size)
        return 200, answer

    def _review(self, body, status):
        assignment = self.assignments.get(body["AssignmentId"])
        if assignment is None:
            return 400, {"__type": "RequestError", "Message": "Assignment does not exist."}
        if assignment["AssignmentStatus"] != "Submitted":
            return 400, {
                "__type": "RequestError",
                "Message": "This operation can be called with a status of: Submitted",
            }
        assignment["AssignmentStatus"] = status
        if body.get("RequesterFeedback"):  # what the worker is shown, as GetAssignment returns it
            assignment["RequesterFeedback"] = body["RequesterFeedback"]
        return 200, {}

    def ApproveAssignment(self, body):
        return self._review(body, "Approved")

    def RejectAssignment(self, body):
        return self._review(body, "Rejected")

    def CreateAdditionalAssignmentsForHIT(self, body):
        token = body.get("UniqueRequestToken")
        if token and token in self.extension_tokens:
            return 400, {
                "__type": "RequestError",
                "Message": f'The idempotency token "{token}" has already been processed.',
            }
        hit = self.hits.get(body["HITId"])
        if hit is None:
            return 400, {"__type": "RequestError", "Message": "Hit does not exist."}
        if hit["MaxAssignments"] < 10 <= hit["MaxAssignments"] + body["NumberOfAdditionalAssignments"]:
            return 400, {"__type": "RequestError", "Message": "InvalidMaximumAssignmentsIncrease"}
        hit["MaxAssignments"] += body["NumberOfAdditionalAssignments"]
        if token:
            self.extension_tokens.add(token)
        return 200, {}

    def UpdateExpirationForHIT(self, body):
        hit = self.hits.get(body["HITId"])
        if hit is None:
            return 400, {"__type": "RequestError", "Message": "Hit does not exist."}
        hit["Expiration"] = float(body["ExpireAt"])
        return 200, {}

    def CreateWorkerBlock(self, body):
        self.blocks.append((body["WorkerId"], body["Reason"]))
        return 200, {}

    def GetAssignment(self, body):
        assignment = self.assignments[body["AssignmentId"]]
        return 200, {"Assignment": assignment, "HIT": self.hits[assignment["HITId"]]}


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        operation = self.headers.get("X-Amz-Target", "").removeprefix(TARGET_PREFIX)
        with self.server.lock:
            status, answer = self.server.fake.handle(operation, body)
        data = json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/x-amz-json-1.1")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):  # keep test output quiet
        pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, fake: FakeMTurk) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.fake = fake
        self.lock = threading.Lock()


def serve(fake: FakeMTurk) -> tuple[str, _Server]:
    """Start serving ``fake`` on a free loopback port; returns its URL and the server."""
    server = _Server(fake)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}", server
