"""Crowd providers: where HITs are published and where answers come from.

The services speak to one small interface, :class:`CrowdProvider`, so the batch life
cycle (publish, sync, review, escalate, cancel) is written once. Providers register
under the name stored in ``Batch.provider`` (``local``, ``mturk``, ``prolific``); a new
platform is one class decorated with ``@register("<name>")``.

A provider only talks to the outside world. It never writes to the database: the
services record what it returns, in their own transactions, in an order that makes
re-running after an interruption safe.
"""

from __future__ import annotations

import datetime as dt
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from django.conf import settings

if TYPE_CHECKING:
    from .models import Assignment, Batch, Hit


@dataclass(frozen=True)
class RemoteAssignment:
    """An assignment as the provider reports it."""

    assignment_id: str
    worker_id: str
    status: str  # "submitted", "approved" or "rejected"
    raw_answer: str
    #: ``None`` when ``raw_answer`` could not be read at all (every judgment is then invalid).
    answers: dict[str, str] | None = field(default_factory=dict)
    submitted_at: dt.datetime | None = None
    accepted_at: dt.datetime | None = None


class CrowdProvider(ABC):
    """What the services need from a crowd platform."""

    name: str = ""
    #: True when answers arrive through this site (the local provider) rather than by polling.
    answers_on_site: bool = False
    #: True when a submission with a query left unanswered (or answered with something that
    #: is not a category) is rejected at review: on a paid platform it would otherwise be
    #: approved and paid (MTurk approves by itself after the HIT type's auto-approval delay).
    rejects_invalid: bool = True

    def form_action(self) -> str:
        """Where the HIT page posts its answers when rendered for this provider (``""``: our own view)."""
        return ""

    @abstractmethod
    def prepare(self, batch: Batch) -> str:
        """Make the batch ready to receive HITs (e.g. create the MTurk HIT type); returns its id or ``""``."""

    def launch(self, batch: Batch) -> None:
        """Open the batch to workers once all its HITs are published (e.g. publish the Prolific study)."""
        return None

    @abstractmethod
    def publish_hit(self, hit: Hit, question_html: str) -> str:
        """Create the HIT and return the provider's id for it; must be idempotent on ``hit.unique_token``."""

    #: How long the provider remembers ``unique_token``: past it, a retry could duplicate a HIT.
    token_memory: dt.timedelta | None = None

    def find_hit(self, hit: Hit) -> str | None:
        """The provider's id of ``hit`` if it exists there (looked up, not created), else ``None``."""
        return None

    @abstractmethod
    def fetch_assignments(self, hit: Hit) -> Iterator[RemoteAssignment]:
        """Every submitted, approved or rejected assignment of the HIT."""

    @abstractmethod
    def approve(self, assignment: Assignment, feedback: str = "") -> bool:
        """Approve; ``False`` when it already was."""

    @abstractmethod
    def reject(self, assignment: Assignment, feedback: str) -> bool:
        """Reject with feedback to the worker; ``False`` when it already was."""

    @abstractmethod
    def add_assignments(self, hit: Hit, count: int, unique_token: str) -> None:
        """Ask ``count`` more workers to do the HIT (idempotent on ``unique_token``)."""

    @abstractmethod
    def expire(self, hit: Hit) -> None:
        """Stop the HIT from being offered to more workers."""

    #: True when :meth:`block_worker` asks the platform to block (a call worth recording once).
    blocks_remotely: bool = False

    def block_worker(self, external_id: str, reason: str) -> None:
        """Keep the worker from this requester's work on the platform; here ``Worker.blocked`` does it."""
        return None


_REGISTRY: dict[str, Callable[..., CrowdProvider]] = {}


def register(name: str) -> Callable[[type[CrowdProvider]], type[CrowdProvider]]:
    """Class decorator: make a provider available as ``get_provider(name)``."""

    def decorator(cls: type[CrowdProvider]) -> type[CrowdProvider]:
        cls.name = name
        _REGISTRY[name] = cls
        return cls

    return decorator


def get_provider(name: str, **kwargs: Any) -> CrowdProvider:
    try:
        factory = _REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown crowd provider {name!r}; known: {', '.join(sorted(_REGISTRY))}") from None
    return factory(**kwargs)


def provider_names() -> list[str]:
    return sorted(_REGISTRY)


@register("local")
class LocalProvider(CrowdProvider):
    """In-house annotators working on this site: nothing to call, answers are stored as they come."""

    answers_on_site = True
    rejects_invalid = False  # nothing is paid or approved by itself: kept for a person to look at

    def prepare(self, batch: Batch) -> str:
        return ""

    def publish_hit(self, hit: Hit, question_html: str) -> str:
        return f"local-{hit.unique_token}"

    def fetch_assignments(self, hit: Hit) -> Iterator[RemoteAssignment]:
        return iter(())

    def approve(self, assignment: Assignment, feedback: str = "") -> bool:
        return assignment.status != assignment.Status.APPROVED

    def reject(self, assignment: Assignment, feedback: str) -> bool:
        return assignment.status != assignment.Status.REJECTED

    def add_assignments(self, hit: Hit, count: int, unique_token: str) -> None:
        """Nothing to do: the next-HIT page hands out up to ``hit.max_assignments``."""

    def expire(self, hit: Hit) -> None:
        """Nothing to do: the next-HIT page only offers HITs of published batches."""


_MTURK_STATUSES = {"Submitted": "submitted", "Approved": "approved", "Rejected": "rejected"}


@register("mturk")
class MTurkProvider(CrowdProvider):
    """Amazon Mechanical Turk (or any server speaking its API), through :class:`annotation.mturk.MTurk`."""

    #: MTurk keeps a UniqueRequestToken for 24 hours; an hour's margin.
    token_memory = dt.timedelta(hours=23)

    def __init__(self, mturk=None) -> None:
        if mturk is None:
            from .mturk import MTurk, make_client

            client = make_client(endpoint_url=settings.MTURK_ENDPOINT_URL or None, live=settings.MTURK_LIVE)
            mturk = MTurk(client, max_calls_per_second=settings.MTURK_MAX_CALLS_PER_SECOND)
        self.mturk = mturk

    def form_action(self) -> str:
        """MTurk's ``externalSubmit`` address of the right site (sandbox, production or the configured server)."""
        from .mturk import submit_url

        return submit_url(
            settings.MTURK_ENDPOINT_URL or None, settings.MTURK_LIVE, override=settings.MTURK_SUBMIT_URL or None
        )

    def prepare(self, batch: Batch) -> str:
        from .mturk import qualification_requirements

        q = batch.qualifications or {}
        requirements = qualification_requirements(
            live=settings.MTURK_LIVE,
            locales=q.get("locales") or None,
            min_approval_rate=q.get("min_approval_rate"),
            min_approved_hits=q.get("min_approved_hits"),
            masters=bool(q.get("masters")),
        )
        return self.mturk.create_hit_type(
            title=batch.title,
            description=batch.description,
            keywords=batch.keywords,
            reward=Decimal(batch.reward),
            assignment_duration_seconds=int(batch.assignment_duration.total_seconds()),
            auto_approval_delay_seconds=int(batch.auto_approval_delay.total_seconds()),
            qualification_requirements=requirements,
        )

    def publish_hit(self, hit: Hit, question_html: str) -> str:
        from .question_xml import html_question

        return self.mturk.create_hit(
            hit_type_id=hit.batch.hit_type_id,
            question=html_question(question_html),
            lifetime_seconds=int(hit.batch.lifetime.total_seconds()),
            max_assignments=hit.max_assignments,
            unique_request_token=hit.unique_token,
            requester_annotation=self._annotation(hit),
        )

    def find_hit(self, hit: Hit) -> str | None:
        return self.mturk.find_hit(requester_annotation=self._annotation(hit), hit_type_id=hit.batch.hit_type_id)

    @staticmethod
    def _annotation(hit: Hit) -> str:
        """``RequesterAnnotation`` naming the local HIT: how a HIT is found again on MTurk."""
        return f"{hit.batch.name} HIT {hit.position}"[:255]

    def fetch_assignments(self, hit: Hit) -> Iterator[RemoteAssignment]:
        from .question_xml import parse_answers

        for item in self.mturk.iter_assignments(hit.provider_id):
            raw = item.get("Answer", "")
            try:
                answers = parse_answers(raw) if raw else {}
            except ValueError:
                answers = None  # recorded as invalid ("unreadable answer"), never guessed
            yield RemoteAssignment(
                assignment_id=item["AssignmentId"],
                worker_id=item["WorkerId"],
                status=_MTURK_STATUSES.get(item.get("AssignmentStatus", ""), "submitted"),
                raw_answer=raw,
                answers=answers,
                submitted_at=item.get("SubmitTime"),
                accepted_at=item.get("AcceptTime"),
            )

    def approve(self, assignment: Assignment, feedback: str = "") -> bool:
        return self.mturk.approve(assignment.provider_assignment_id, feedback=feedback or None)

    def reject(self, assignment: Assignment, feedback: str) -> bool:
        return self.mturk.reject(assignment.provider_assignment_id, feedback)

    def add_assignments(self, hit: Hit, count: int, unique_token: str) -> None:
        self.mturk.add_assignments(hit.provider_id, count, unique_token)

    def expire(self, hit: Hit) -> None:
        self.mturk.expire_hit(hit.provider_id)

    blocks_remotely = True

    def block_worker(self, external_id: str, reason: str) -> None:
        """CreateWorkerBlock: the worker sees none of this requester's HITs (and ``reason``)."""
        self.mturk.block_worker(external_id, reason)


@register("prolific")
class ProlificProvider(CrowdProvider):
    """Prolific: one study per batch; participants do their HIT groups on this site.

    The study's URL brings a participant to ``annotation:prolific-start`` with their
    Prolific id, the study id and their session id; the site hands them a HIT through
    the same hand-out as in-house annotators and, once they submit, sends them back to
    Prolific with the completion code. Answers are therefore stored as they come
    (``answers_on_site``); ``annotation.services.prolific`` reconciles the study's
    submissions with them when the batch is synced.
    """

    answers_on_site = True

    def __init__(self, client=None) -> None:
        if client is None:
            from .prolific import Prolific

            client = Prolific(settings.PROLIFIC_API_URL, settings.PROLIFIC_API_TOKEN)
        self.client = client
        self._stopped: set[str] = set()

    @staticmethod
    def internal_name(batch: Batch) -> str:
        """How the study is found again on Prolific: unique per batch ever made on this site."""
        return f"{batch.name} ({batch.pk}, {batch.created:%Y%m%dT%H%M%S})"

    def prepare(self, batch: Batch) -> str:
        """Create the batch's study (as a draft) and return its id; publish_batch saves it at once.

        ``batch.prepare_attempted`` is the time of an earlier attempt (publish_batch records
        it before calling): after one, the study is first looked up by its internal name,
        because a lost answer to ``POST /studies/`` may hide a study that exists.
        """
        from .services.prolific import study_fields

        project = settings.PROLIFIC_PROJECT_ID
        if batch.prepare_attempted is not None:
            found = self.client.find_study(project, self.internal_name(batch))
            if found is not None:
                return found["id"]
        return self.client.create_study(study_fields(batch, self))["id"]

    def launch(self, batch: Batch) -> None:
        """Publish the study unless it already is (a repeated publish after a lost answer is skipped)."""
        self._transition(batch.hit_type_id, "PUBLISH", when=("UNPUBLISHED",))

    def _transition(self, study_id: str, action: str, *, when: tuple[str, ...]) -> bool:
        """Transition the study if its status is one of ``when``; after a lost answer, look again.

        Returns whether this call made the transition (False: it was not needed).
        """
        from .prolific import ProlificError, ProlificUnknownOutcome

        for _ in range(3):
            if self.client.get_study(study_id).get("status") not in when:
                return False
            try:
                self.client.transition_study(study_id, action)
                return True
            except ProlificUnknownOutcome:
                continue  # it may have happened: the status says
        if self.client.get_study(study_id).get("status") not in when:
            return True  # the last lost answer hid a success
        # Not done: returning quietly would let a cancel report a study stopped that still runs.
        raise ProlificError(
            f"Prolific did not {action} study {study_id}: three attempts lost their answer", upstream=True
        )

    def stop_study(self, study_id: str) -> bool:
        """Stop the study (once, and only if it is running); whether this call stopped it."""
        if study_id in self._stopped:
            return False
        stopped = self._transition(study_id, "STOP", when=("ACTIVE", "PAUSED"))
        self._stopped.add(study_id)
        return stopped

    def publish_hit(self, hit: Hit, question_html: str) -> str:
        return f"prolific-{hit.unique_token}"

    def fetch_assignments(self, hit: Hit) -> Iterator[RemoteAssignment]:
        return iter(())  # answers arrive on the site; submissions are reconciled per study

    def approve(self, assignment: Assignment, feedback: str = "") -> bool:
        self.client.approve(assignment.provider_assignment_id)
        return True

    def reject(self, assignment: Assignment, feedback: str) -> bool:
        from .services.prolific import rejection_for

        category, message = rejection_for(assignment, feedback)
        self.client.reject(assignment.provider_assignment_id, category, message)
        return True

    def add_assignments(self, hit: Hit, count: int, unique_token: str) -> None:
        """Make sure the study has places for every free place of the batch's HITs.

        Callers raise ``hit.max_assignments`` first (as escalation does); the study's place
        count is then set to a total computed from the state, not increased by ``count``,
        so a repeated call (same ``unique_token`` or not) never adds places twice.
        """
        from .services.prolific import ensure_places

        ensure_places(hit.batch, self)

    def expire(self, hit: Hit) -> None:
        """Stop the study (once per batch, and only if it is running)."""
        if hit.batch.hit_type_id:
            self.stop_study(hit.batch.hit_type_id)

    blocks_remotely = True

    def block_worker(self, external_id: str, reason: str) -> None:
        """Add the participant to the workspace's blocked group, which every study of this site excludes."""
        from .services.prolific import BLOCKED_GROUP, _group

        self.client.add_to_group(_group(self, BLOCKED_GROUP), [external_id])
