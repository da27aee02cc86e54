"""In-house annotators: a provider with nothing to call, answers stored as they come on this site."""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from typing import TYPE_CHECKING

from annotation.crowd.costs import Cost, no_fees
from annotation.crowd.providers.base import CrowdProvider, RemoteAssignment, register

if TYPE_CHECKING:
    from annotation.models import Assignment, Batch, Hit


@register("local")
class LocalProvider(CrowdProvider):
    """In-house annotators working on this site: nothing to call, answers are stored as they come."""

    label = "In-house annotators (this site)"
    short_label = "In-house"
    answers_on_site = True
    rejects_invalid = False  # nothing is paid or approved by itself: kept for a person to look at
    takes_fees = False
    bonus_charges = "at_once"
    trains_workers = True  # the training step runs on this site (annotation.quality.services.training)

    @classmethod
    def work_cost(cls, reward: Decimal, count: int, **_: object) -> Cost:
        """The rewards only: no crowd platform takes a fee."""
        return no_fees(reward, count)

    @classmethod
    def bonus_fees(cls, paid: list[Decimal], **_: object) -> tuple[Decimal, Decimal]:
        return Decimal("0"), Decimal("0.00")

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
