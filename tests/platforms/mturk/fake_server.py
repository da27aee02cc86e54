"""A small MTurk-compatible server on loopback, speaking the real wire protocol (JSON 1.1).

It lets the tests drive the product exactly as it runs against MTurk: a real boto3 client
pointed at ``MTURK_ENDPOINT_URL``, real HTTP, botocore's own request signing, retries and
error parsing. Only the operations the product uses are implemented. Faults can be
scripted per operation: ``throttle`` answers ThrottlingException, ``refuse`` a RequestError
(not retried), ``lose_response``
carries out the request and then answers 500 as if the response had been lost on the way.

Money (issue 41): as MTurk's pricing page states, approving an assignment charges its reward plus
the commission (20% of the reward, 40% on HITs of 10 or more assignments, 5% more with Masters, at
least $0.01 per assignment), and ``SendBonus`` charges the bonus plus 20% of it (at least $0.01);
each commission is a charge of its own, rounded half-up to the cent. A ``SendBonus`` repeated with
its ``UniqueRequestToken`` pays nothing more (MTurk answers that the token was processed).
``charges`` records every charge (kind, assignment, amount, commission); :meth:`FakeMTurk.charged`
sums them: what the requester's balance paid.
"""

from __future__ import annotations

import json
import time
import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal
from http.server import BaseHTTPRequestHandler
from xml.sax.saxutils import escape

from platforms.mturk.mturk_xml import ANSWERS_NS, check_xml_chars
from tests.loopback import LoopbackServer, send, serve_in_thread

TARGET_PREFIX = "MTurkRequesterServiceV20170117."
#: Masters' qualification type ids (production, sandbox), as MTurk documents them.
MASTERS = {"2F1QJWKUDD8XADTFD2Q0G6UTO95ALH", "2ARFPLSP75KLA8M8DH1HTEQVJT3SY6"}
CENT = Decimal("0.01")


def _commission(amount: Decimal, rate: Decimal) -> Decimal:
    return max(CENT, (amount * rate).quantize(CENT, rounding=ROUND_HALF_UP))


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
    #: What the requester was charged: (kind "reward" or "bonus", AssignmentId, amount, commission).
    charges: list[tuple[str, str, Decimal, Decimal]] = field(default_factory=list)
    #: SendBonus request tokens already processed.
    bonus_tokens: set[str] = field(default_factory=set)

    def charged(self, hit_ids: set[str] | None = None) -> Decimal:
        """Every dollar charged (rewards, bonuses, their commissions), of the HITs ``hit_ids`` (None: all)."""
        return sum(
            (
                amount + commission
                for _, assignment_id, amount, commission in self.charges
                if hit_ids is None or self.assignments[assignment_id]["HITId"] in hit_ids
            ),
            Decimal("0.00"),
        )

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
        status, answer = self._review(body, "Approved")
        if status == 200:
            assignment = self.assignments[body["AssignmentId"]]
            hit = self.hits[assignment["HITId"]]
            hit_type = self.hit_types[hit["HITTypeId"]]
            reward = Decimal(hit_type["Reward"])
            rate = Decimal("0.40") if hit["MaxAssignments"] >= 10 else Decimal("0.20")
            required = {q.get("QualificationTypeId") for q in hit_type.get("QualificationRequirements") or []}
            if required & MASTERS:
                rate += Decimal("0.05")
            self.charges.append(("reward", assignment["AssignmentId"], reward, _commission(reward, rate)))
        return status, answer

    def SendBonus(self, body):
        token = body.get("UniqueRequestToken")
        if token and token in self.bonus_tokens:
            return 400, {
                "__type": "RequestError",
                "Message": f'The idempotency token "{token}" has already been processed.',
            }
        assignment = self.assignments.get(body["AssignmentId"])
        if assignment is None or assignment["WorkerId"] != body["WorkerId"]:
            return 400, {"__type": "RequestError", "Message": "Assignment does not exist for this worker."}
        amount = Decimal(body["BonusAmount"])
        self.charges.append(("bonus", assignment["AssignmentId"], amount, _commission(amount, Decimal("0.20"))))
        if token:
            self.bonus_tokens.add(token)
        return 200, {}

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
    server: LoopbackServer

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        operation = self.headers.get("X-Amz-Target", "").removeprefix(TARGET_PREFIX)
        with self.server.lock:
            status, answer = self.server.fake.handle(operation, body)
        send(self, status, json.dumps(answer).encode(), "application/x-amz-json-1.1")

    def log_message(self, *args):  # keep test output quiet
        pass


def serve(fake: FakeMTurk) -> tuple[str, LoopbackServer]:
    """Start serving ``fake`` on a free loopback port; returns its URL and the server."""
    server = serve_in_thread(_Handler, fake)
    return server.base, server


def build_answers_xml(answers: dict[str, str]) -> str:
    """QuestionFormAnswers XML as MTurk returns it (for test servers): ``parse_answers`` gives ``answers`` back."""
    parts = ['<?xml version="1.0" encoding="UTF-8" standalone="no"?>', f'<QuestionFormAnswers xmlns="{ANSWERS_NS}">']
    for identifier, value in answers.items():
        if not identifier:
            raise ValueError("a QuestionIdentifier cannot be empty")
        check_xml_chars(identifier, f"question identifier {identifier!r}")
        check_xml_chars(value, f"the answer to {identifier!r}")
        parts.append(
            "<Answer>"
            f"<QuestionIdentifier>{_text(identifier)}</QuestionIdentifier>"
            f"<FreeText>{_text(value)}</FreeText>"
            "</Answer>"
        )
    parts.append("</QuestionFormAnswers>")
    return "\n".join(parts)


def _text(value: str) -> str:
    """Escaped element text; ``\\r`` as a reference so parsers keep it."""
    return escape(value, {"\r": "&#13;"})
