"""Amazon Mechanical Turk (or any server speaking its API): the provider and its rules. The boto3 client
(:mod:`platforms.mturk.client`) is imported when first used, so loading the app does not load boto3.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from decimal import Decimal
from typing import TYPE_CHECKING

from django.conf import settings

from annotation.crowd.costs import Cost
from annotation.crowd.providers.base import CrowdProvider, RemoteAssignment, register
from annotation.crowd.providers.options import BatchOption
from platforms.mturk import prices

if TYPE_CHECKING:
    from annotation.models import Assignment, Batch, Hit


_MTURK_STATUSES = {"Submitted": "submitted", "Approved": "approved", "Rejected": "rejected"}


@register("mturk")
class MTurkProvider(CrowdProvider):
    """Amazon Mechanical Turk (or any server speaking its API), through :class:`platforms.mturk.client.MTurk`."""

    label = "Amazon Mechanical Turk"
    short_label = "MTurk"
    #: Who may work on the HITs (MTurk's qualification requirements): the provider options of an MTurk
    #: batch, stored in ``Batch.qualifications`` as they always were (:attr:`options_field`).
    batch_options = (
        *CrowdProvider.batch_options,
        BatchOption("locales", "codes", "worker countries, e.g. US,GB.", into="provider_options", metavar="US,GB"),
        BatchOption(
            "min_approval_rate",
            "whole",
            "least share of a worker's work approved, in %.",
            minimum=0,
            maximum=100,
            into="provider_options",
        ),
        BatchOption(
            "min_approved_hits",
            "whole",
            "least number of a worker's HITs approved.",
            minimum=0,
            maximum=1_000_000_000,
            into="provider_options",
        ),
        BatchOption("masters", "flag", "Masters workers.", into="provider_options"),
    )
    options_field = "qualifications"
    #: A rejected place is not reopened by MTurk: the quality loop adds an assignment for it.
    reoffers_rejected = True

    @classmethod
    def work_cost(cls, reward: Decimal, count: int, *, assignments_per_hit: int, options=None, **_: object) -> Cost:
        """The commission per assignment (:mod:`.prices`), Masters' surcharge where the batch asks for Masters."""
        return prices.work_cost(
            reward, count, assignments_per_hit=assignments_per_hit, masters=bool((options or {}).get("masters"))
        )

    @classmethod
    def bonus_fees(cls, paid: list[Decimal], **_: object) -> tuple[Decimal, Decimal]:
        """20% of each bonus, at least $0.01, rounded per bonus."""
        return prices.bonus_fees(paid)

    #: A HIT created with fewer than 10 assignments never reaches 10.
    extension_limit = staticmethod(prices.extension_limit)

    @classmethod
    def extra_assignments_cost(
        cls, reward: Decimal, extra_per_hit, assignments_per_hit: int, *, options=None, **_: object
    ) -> Cost:
        """At the rate of the HITs extended (:func:`.prices.extra_assignments_cost`)."""
        return prices.extra_assignments_cost(
            reward, extra_per_hit, assignments_per_hit, masters=bool((options or {}).get("masters"))
        )

    @classmethod
    def check_settings(cls, batch_settings) -> None:
        """MTurk approves (and pays) what nobody reviewed: its delay must leave a sync time to reject first."""
        from core.errors import ServiceError

        keys = {option.store_key for option in cls.own_options()}
        unknown = set(batch_settings.provider_options) - keys
        if unknown:
            raise ServiceError(f"unknown qualification setting(s): {', '.join(sorted(unknown))}")
        interval = dt.timedelta(seconds=settings.MTURK_SYNC_INTERVAL_SECONDS)
        if batch_settings.auto_approval_delay <= interval:
            raise ServiceError(
                f"auto-approval delay must be longer than the sync interval ({interval}, setting "
                f"MTURK_SYNC_INTERVAL_SECONDS; got {batch_settings.auto_approval_delay}): MTurk approves and pays "
                "every assignment not reviewed by then, however invalid"
            )

    #: MTurk keeps a UniqueRequestToken for 24 hours; an hour's margin.
    token_memory = dt.timedelta(hours=23)

    def __init__(self, mturk=None) -> None:
        if mturk is None:
            from platforms.mturk.client import MTurk, make_client

            client = make_client(endpoint_url=settings.MTURK_ENDPOINT_URL or None, live=settings.MTURK_LIVE)
            mturk = MTurk(client, max_calls_per_second=settings.MTURK_MAX_CALLS_PER_SECOND)
        self.mturk = mturk

    def form_action(self) -> str:
        """MTurk's ``externalSubmit`` address of the right site (sandbox, production or the configured server)."""
        from platforms.mturk.client import submit_url

        return submit_url(
            settings.MTURK_ENDPOINT_URL or None, settings.MTURK_LIVE, override=settings.MTURK_SUBMIT_URL or None
        )

    def prepare(self, batch: Batch) -> str:
        from platforms.mturk.client import qualification_requirements

        q = self.options_of(batch)
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
        from platforms.mturk.mturk_xml import html_question

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
        from platforms.mturk.mturk_xml import parse_answers

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
