"""A toy crowd platform, defined in the tests: what a kernel test needs from "some platform".

It is no real service: its rules are chosen to exercise every branch point of the provider
interface with figures a test can compute by hand -- a commission of 10% per assignment (at least
$0.02, rounded per assignment), a 50% share on bonuses rounded once, a HIT never extended past
4 assignments, a comparison price (twice the reward, "on a rival platform"), re-offers of rejected
places, its own ``tier`` option. Register it with the ``toy_platform`` fixture
(tests/annotation/conftest.py); it talks to no one: its HITs live in :attr:`ToyProvider.hits`.
"""

from __future__ import annotations

import itertools
from decimal import ROUND_HALF_UP, Decimal

from annotation.crowd.costs import CENT, Cost, per_assignment_fees
from annotation.crowd.providers.base import CrowdProvider, RemoteAssignment, extra_count
from annotation.crowd.providers.options import BatchOption

NAME = "toy"
RATE = Decimal("0.10")
MINIMUM = Decimal("0.02")
BONUS_SHARE = Decimal("0.50")
#: A HIT is never extended past this many assignments.
MOST_ASSIGNMENTS = 4


class ToyProvider(CrowdProvider):
    label = "Toy platform"
    short_label = "Toy"
    batch_options = (
        *CrowdProvider.batch_options,
        BatchOption(
            "tier", "choice", "which workers.", choices=(("any", "any"), ("gold", "gold")), into="provider_options"
        ),
    )
    reoffers_rejected = True
    bonus_charges = "at_once"

    @classmethod
    def work_cost(cls, reward: Decimal, count: int, *, options=None, **_: object) -> Cost:
        rate = RATE * (2 if (options or {}).get("tier") == "gold" else 1)
        return per_assignment_fees(reward, rate, count, MINIMUM)

    @classmethod
    def bonus_fees(cls, paid: list[Decimal], **_: object) -> tuple[Decimal, Decimal]:
        return BONUS_SHARE, (sum(paid, Decimal("0")) * BONUS_SHARE).quantize(CENT, rounding=ROUND_HALF_UP)

    @classmethod
    def extension_limit(cls, assignments_per_hit: int) -> int | None:
        return MOST_ASSIGNMENTS

    @classmethod
    def extra_assignments_cost(cls, reward, extra_per_hit, assignments_per_hit, *, options=None, **_: object) -> Cost:
        if isinstance(extra_per_hit, dict) and any(
            assignments_per_hit + n > MOST_ASSIGNMENTS for n in extra_per_hit.values()
        ):
            raise ValueError(f"the toy platform never extends a HIT past {MOST_ASSIGNMENTS} assignments")
        return cls.work_cost(reward, extra_count(extra_per_hit), options=options)

    @classmethod
    def comparison(cls, reward: Decimal, assignments_per_query: int, hits: int):
        count = assignments_per_query * hits
        return "on a rival platform", per_assignment_fees(reward, Decimal("1"), count)

    def __init__(self) -> None:
        self.hits: dict[str, int] = {}
        self._ids = itertools.count(1)

    def prepare(self, batch) -> str:
        return f"toy-type-{batch.pk}"

    def publish_hit(self, hit, question_html: str) -> str:
        provider_id = f"toy-{hit.unique_token}"
        self.hits.setdefault(provider_id, hit.max_assignments)
        return provider_id

    def fetch_assignments(self, hit):
        return iter(())

    def approve(self, assignment, feedback: str = "") -> bool:
        return assignment.status != assignment.Status.APPROVED

    def reject(self, assignment, feedback: str) -> bool:
        return assignment.status != assignment.Status.REJECTED

    def add_assignments(self, hit, count: int, unique_token: str) -> None:
        self.hits[hit.provider_id] = self.hits.get(hit.provider_id, hit.max_assignments) + count

    def expire(self, hit) -> None:
        self.hits.pop(hit.provider_id, None)


__all__ = ["NAME", "RemoteAssignment", "ToyProvider"]
