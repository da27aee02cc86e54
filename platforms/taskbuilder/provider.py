"""Prolific's Task Builder as a crowd platform: Prolific hosts the labelling task, this site hosts nothing.

Publishing makes a **dataset** (one datapoint per query, the HIT's token its ``task_group_id``, the HIT
and the query's field kept as ``metadata`` to tie each answer back), a **batch** showing the query
beside the four-category question, and a **study** using it, each found again by name, so
:meth:`TaskBuilderProvider.prepare` is safe to re-run. At sync, finished submissions and their
responses become one assignment each, read HIT by HIT like MTurk's (docs/prolific.md, "Task Builder").
"""

from __future__ import annotations

import contextlib
import json
from collections import defaultdict
from collections.abc import Iterator
from typing import TYPE_CHECKING

from annotation.crowd.providers.base import CrowdProvider, RemoteAssignment, register
from annotation.crowd.providers.options import BatchOption
from core.errors import ServiceError
from genderbias.labels import VOCABULARY
from platforms.prolific.client import DEVICES, create_or_find, moment
from platforms.prolific.provider import ProlificProvider, api_client, check_known
from platforms.taskbuilder.client import (
    DATA_COLLECTION_METHOD,
    DATASET_DONE,
    TaskBuilder,
    TaskBuilderError,
    TaskBuilderUnknownOutcome,
)

if TYPE_CHECKING:
    from annotation.models import Assignment, Batch, Hit

#: A Task Builder study's options (``Batch.provider_options``), declared once for the form, API and command.
OPTIONS: tuple[BatchOption, ...] = (
    BatchOption(
        "taskbuilder_minutes",
        "whole",
        "Task Builder only: minutes one HIT's queries take, shown to participants; 10 when not given.",
        minimum=1,
        maximum=24 * 60,
        into="provider_options",
    ),
)
OPTION_KEYS = {"taskbuilder_minutes"}
#: The statuses of a study's submissions whose answers are final, as this site's assignment statuses.
FINISHED = {"AWAITING REVIEW": "submitted", "APPROVED": "approved", "REJECTED": "rejected"}
#: How often, and how long apart, publishing asks whether Prolific finished an import or a setup.
POLLS = 60
POLL_SECONDS = 2.0
#: Prolific lists responses late, a changed answer as a later one: a session is read once this long has
#: passed since it was completed and every query of its HIT has its answer listed ...
QUIET_SECONDS = 120
#: ... or, if some answer is still not listed, once this long has passed (read as it is then).
SETTLE_SECONDS = 15 * 60
#: The dataset's fields: the query shown, the HIT as the task group, the rest kept to tie answers back.
SCHEMA = {
    "strict": True,
    "fields": {
        "query": {"type": "text", "label": "Search query"},
        "hit": {"type": "task_group_id"},
        "hit_token": {"type": "metadata"},
        "field": {"type": "metadata"},
    },
}
QUESTION = "Which gender, if any, does this search query refer to?"
REJECTION_MESSAGE = (
    " Your answers were checked against questions whose answer is known, and against the rules shown"
    " with the task. If you think this is a mistake, please message us through Prolific."
)


def datapoints(batch: Batch) -> list[dict]:
    """One datapoint per query of each published-to-be HIT, in the HIT's order (gold included)."""
    from annotation.models import HitQuery

    rows = (
        HitQuery.objects.filter(hit__batch=batch)
        .select_related("hit", "batch_query")
        .order_by("hit__position", "position")
    )
    return [
        {
            "query": hq.batch_query.text,
            "hit": hq.hit.unique_token,
            "hit_token": hq.hit.unique_token,
            "field": hq.field_name,
        }
        for hq in rows
    ]


def annotators_per_task(batch: Batch) -> int:
    """The participants per task group: the most answers any HIT asks for (Prolific has one number for all)."""
    from django.db.models import Max

    return max(int(batch.hits.aggregate(most=Max("max_assignments"))["most"] or 0), 1)


def batch_items() -> list[dict]:
    """The batch's one page: the query beside the four-category question (one answer)."""
    return [
        {
            "rows": [
                {
                    "columns": [
                        {"items": [{"type": "dataset_field", "field": "query"}]},
                        {
                            "items": [
                                {
                                    "type": "multiple_choice",
                                    "description": QUESTION,
                                    "answer_limit": 1,
                                    "options": [
                                        {"label": f"{label.name}: {label.definition}", "value": label.code}
                                        for label in VOCABULARY
                                    ],
                                }
                            ]
                        },
                    ]
                }
            ]
        }
    ]


@register("taskbuilder")
class TaskBuilderProvider(CrowdProvider):
    """Prolific's Task Builder: the queries labelled on Prolific's own pages, no site of ours needed."""

    label = "Prolific Task Builder (hosted by Prolific)"
    short_label = "Task Builder"
    batch_options = (*CrowdProvider.batch_options, *OPTIONS)
    assignments_per_participant = 1
    bonus_charges = "bulk"

    # A Task Builder study is Prolific's: Prolific's fees, its submissions approved, and the study
    # published and stopped alike.
    work_cost = ProlificProvider.work_cost
    bonus_fees = ProlificProvider.bonus_fees
    approve = ProlificProvider.approve
    launch = ProlificProvider.launch
    stop_study = ProlificProvider.stop_study
    expire = ProlificProvider.expire

    @classmethod
    def check_settings(cls, batch_settings) -> None:
        check_known(dict(batch_settings.provider_options or {}), "Task Builder", OPTION_KEYS, OPTIONS)

    def __init__(
        self,
        client: TaskBuilder | None = None,
        *,
        polls: int = POLLS,
        poll_seconds: float = POLL_SECONDS,
        quiet_seconds: float = QUIET_SECONDS,
        settle_seconds: float = SETTLE_SECONDS,
        clock=None,
    ):
        from django.utils import timezone

        self.client = client if client is not None else api_client(TaskBuilder)
        self.polls, self.poll_seconds = polls, poll_seconds
        self.quiet_seconds, self.settle_seconds = quiet_seconds, settle_seconds
        self.clock = clock or timezone.now
        self._answers: dict[str, dict[str, list[RemoteAssignment]]] = {}
        self._stopped: set[str] = set()

    # -- publishing -------------------------------------------------------------------------
    def prepare(self, batch: Batch) -> str:
        """The dataset, the Task Builder batch and the draft study (the study's id), each made once, so an
        interrupted publish is finished by the next."""
        from platforms.prolific.connection.selectors import prolific_settings

        connection = prolific_settings()
        workspace, project = connection.workspace_id, connection.project_id
        if not workspace or not project:
            raise ServiceError(
                "PROLIFIC_WORKSPACE_ID and PROLIFIC_PROJECT_ID must be set (or the Connections page's Prolific "
                "workspace and project) for a Task Builder study"
            )
        name = ProlificProvider.internal_name(batch)
        tb_batch = self.client.find_batch(workspace, name)
        if tb_batch is None:
            dataset = self.client.create_dataset(workspace, name, SCHEMA)
            tb_batch = self._once(
                lambda: self.client.find_batch(workspace, name),
                lambda: self.client.create_batch(
                    {
                        "name": name,
                        "workspace_id": workspace,
                        "dataset_id": dataset["id"],
                        "task_details": {
                            "task_name": batch.title,
                            "task_introduction": batch.description,
                            "task_steps": QUESTION,
                        },
                        "batch_items": batch_items(),
                    }
                ),
            )
        attached = [d.get("id") for d in tb_batch.get("datasets") or [] if isinstance(d, dict)]
        if len(attached) != 1 or not isinstance(attached[0], str):
            raise TaskBuilderError(
                f"Prolific's Task Builder batch {tb_batch.get('id')} for batch {batch.name!r} has "
                f"{len(attached)} datasets, not the one it was made with; this needs a person",
                upstream=False,
            )
        self._import(attached[0], datapoints(batch))
        self._set_up(tb_batch["id"], attached[0])
        study = self._once(
            lambda: self.client.find_study(project, name),
            lambda: self.client.create_study(self._study_fields(batch, name, tb_batch["id"], project)),
        )
        return study["id"]

    def _once(self, find, create) -> dict:
        """The resource ``find`` finds, else ``create``'s; after a lost answer to ``create``, ``find`` again."""
        found = find()
        return found if found is not None else create_or_find(create, find)

    def _import(self, dataset_id: str, points: list[dict]) -> None:
        """The batch's queries in the dataset exactly once: Prolific appends every file it receives, so the
        file is uploaded only while the dataset's status is ``UNINITIALISED``; then the import is waited for."""
        if self.client.dataset_status(dataset_id) == "UNINITIALISED":
            data = "".join(json.dumps(point, ensure_ascii=False) + "\n" for point in points).encode()
            target = self.client.upload_url(dataset_id, "queries.jsonl")
            self.client.upload(target["upload_url"], data, "application/jsonl")
        status = self._wait(lambda: self.client.dataset_status(dataset_id), DATASET_DONE)
        if status != "READY":
            raise TaskBuilderError(
                f"Prolific received the batch's queries but could not import them (dataset {dataset_id}: {status}); "
                "this needs a person: look at the dataset on Prolific, or cancel this batch and create it again. "
                "Publishing again will not send the file again.",
                upstream=False,
            )

    def _set_up(self, tb_batch_id: str, dataset_id: str) -> None:
        status = self.client.batch_status(tb_batch_id)
        if status == "UNINITIALISED":
            with contextlib.suppress(TaskBuilderUnknownOutcome):  # a lost answer: the status says whether it began
                self.client.set_up_batch(tb_batch_id, dataset_id)
            if self.client.batch_status(tb_batch_id) == "UNINITIALISED":
                self.client.set_up_batch(tb_batch_id, dataset_id)
        status = self._wait(lambda: self.client.batch_status(tb_batch_id), DATASET_DONE)
        if status != "READY":
            raise TaskBuilderError(f"Prolific could not make the batch's tasks (status {status})", upstream=True)

    def _wait(self, status, done) -> str | None:
        for attempt in range(self.polls):
            found = status()
            if found in done:
                return found
            if attempt + 1 < self.polls:
                self.client.sleep(self.poll_seconds)
        raise TaskBuilderError(
            f"Prolific was still processing after {self.polls} looks; publish again later", upstream=True
        )

    @staticmethod
    def _study_fields(batch: Batch, name: str, tb_batch_id: str, project: str) -> dict:
        from platforms.taskbuilder.client import cents

        options = batch.provider_options or {}
        minutes = int(options.get("taskbuilder_minutes") or 10)
        annotators = annotators_per_task(batch)
        return {
            "name": batch.title,
            "internal_name": name,
            "description": batch.description,
            "data_collection_method": DATA_COLLECTION_METHOD,
            "data_collection_id": tb_batch_id,
            # Without it Prolific gives each task group one participant (the reference's "Study").
            "data_collection_metadata": {"annotators_per_task": annotators},
            "prolific_id_option": "not_required",
            "completion_codes": [
                {"code": "TASKBUILDER", "code_type": "COMPLETED", "actions": [{"action": "MANUALLY_REVIEW"}]}
            ],
            # What Prolific makes of it anyway: every task group (a HIT) times its annotators.
            "total_available_places": batch.hits.count() * annotators,
            "estimated_completion_time": minutes,
            "maximum_allowed_time": max(minutes * 3, int(batch.assignment_duration.total_seconds() // 60)),
            "reward": cents(batch.reward),
            "device_compatibility": list(DEVICES),  # Task Builder's pages are Prolific's own
            "project": project,
        }

    def publish_hit(self, hit: Hit, question_html: str) -> str:
        """Nothing to send: the HIT is a task group of the dataset uploaded at :meth:`prepare`."""
        return f"taskbuilder-{hit.unique_token}"

    # -- answers ----------------------------------------------------------------------------
    def fetch_assignments(self, hit: Hit) -> Iterator[RemoteAssignment]:
        """The HIT's finished submissions whose answers are all in, each with them (read once per batch and sync)."""
        study_id = hit.batch.hit_type_id
        if study_id not in self._answers:
            self._answers[study_id] = self._read(hit.batch)
        return iter(self._answers[study_id].get(hit.unique_token, []))

    def _read(self, batch: Batch) -> dict[str, list[RemoteAssignment]]:
        """Finished sessions and their answers, by HIT token, once settled (:data:`QUIET_SECONDS`): a response
        counts once, the later answer wins, a participant who took the study again is read once. When no
        response is tied to the batch's queries by ``metadata``, the sync stops naming the batch."""
        from annotation.models import Assignment, HitQuery

        study_id = batch.hit_type_id
        finished = {s.id: s for s in self.client.submissions(study_id) if s.status in FINISHED}
        tb_batch_id = self.client.get_study(study_id).get("data_collection_id")
        if not finished or not tb_batch_id:
            return {}
        recorded = set(
            Assignment.objects.filter(hit__batch=batch, provider_assignment_id__in=list(finished)).values_list(
                "provider_assignment_id", flat=True
            )
        )
        first: dict[str, str] = {}
        for session in sorted(finished.values(), key=lambda s: (s.id not in recorded, s.started_at or "", s.id)):
            first.setdefault(session.participant_id, session.id)
        read = set(first.values())
        fields: dict[str, set[str]] = defaultdict(set)
        for hit_query in HitQuery.objects.filter(hit__batch=batch).select_related("hit"):
            fields[hit_query.hit.unique_token].add(hit_query.field_name)
        answers: dict[str, dict[str, tuple[str, str, str]]] = defaultdict(dict)
        hit_of: dict[str, str] = {}
        unlinked: set[str] = set()
        for response in self.client.responses(tb_batch_id):
            session = response.get("submission_id")
            if session not in read:
                continue
            metadata = response.get("metadata") or {}
            field, token = metadata.get("field"), metadata.get("hit_token")
            if token not in fields or field not in fields[token] or hit_of.setdefault(session, token) != token:
                unlinked.add(session)
                continue  # not one of this batch's queries, or a session across two HITs: not read
            values = [
                a.get("value") for a in (response.get("response") or {}).get("answer") or [] if isinstance(a, dict)
            ]
            value = values[0] if len(values) == 1 and isinstance(values[0], str) else ""
            stamp = (str(response.get("created_at") or ""), str(response.get("id") or ""), value)
            if field not in answers[session] or answers[session][field] < stamp:
                answers[session][field] = stamp
        if unlinked and not hit_of:
            raise TaskBuilderError(
                f"batch {batch.name!r}: Prolific's responses to Task Builder batch {tb_batch_id} carry no metadata "
                "(hit_token, field) tying them to the batch's queries, so no answer can be read; the dataset must "
                "keep them as metadata fields (docs/prolific.md, Task Builder)",
                upstream=False,
            )
        now = self.clock()
        by_hit: dict[str, list[RemoteAssignment]] = defaultdict(list)
        for session, token in hit_of.items():
            submission = finished[session]
            given = {field: value for field, (_, _, value) in sorted(answers[session].items())}
            completed = moment(submission.completed_at)
            waited = (now - completed).total_seconds() if completed is not None else self.quiet_seconds
            settled = waited >= self.settle_seconds or (set(given) >= fields[token] and waited >= self.quiet_seconds)
            if not settled and session not in recorded:
                continue  # some of its responses are not listed yet: read at a later sync
            by_hit[token].append(
                RemoteAssignment(
                    assignment_id=session,
                    worker_id=submission.participant_id,
                    status=FINISHED[submission.status],
                    raw_answer=json.dumps(given, sort_keys=True),
                    answers=given,
                    submitted_at=completed,
                    accepted_at=moment(submission.started_at),
                )
            )
        return by_hit

    def reject(self, assignment: Assignment, feedback: str) -> bool:
        if assignment.gold_passed is False:
            category, text = "FAILED_CHECK", feedback or "Too many check questions were answered wrongly."
        else:
            category, text = "LOW_EFFORT", feedback or "Some queries were left without a usable answer."
        self.client.reject(assignment.provider_assignment_id, category, (text.rstrip() + REJECTION_MESSAGE)[:2000])
        return True

    def add_assignments(self, hit: Hit, count: int, unique_token: str) -> None:
        """More answers for ``hit``: annotators per task raised to the most any HIT asks for (absolute). It is
        the only way to add places a task group can take, so every HIT gets the extra answers."""
        wanted = annotators_per_task(hit.batch)
        study = self.client.get_study(hit.batch.hit_type_id)
        current = (study.get("data_collection_metadata") or {}).get("annotators_per_task") or 1
        if wanted > int(current):
            self.client.set_annotators_per_task(hit.batch.hit_type_id, wanted)
