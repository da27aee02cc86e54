"""Routing: accept the machine's labels where it is sure enough, send the rest to the crowd.

From the blind calibration sample (:mod:`.calibration`), :func:`plan_routing` chooses the
lowest confidence threshold at which the machine-accepted labels meet a target accuracy
(:func:`annotation.routing.choose_threshold`: the stratum-weighted estimate, or with
``conservative`` the lower bound of its Wilson interval). The queries below it, lowest
confidence first, go to the crowd as far as ``budget`` pays for them; the plan says how many
go, what they cost and what is saved against sending every query to the crowd. Nothing is
written until :func:`route_batch`, which records the decision (:class:`Routing`: the
accepted qids are frozen there) and makes the routed queries a derived batch with the
parent's settings. The sample's queries go nowhere: the crowd labelled them already.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from decimal import Decimal
from typing import Any

from django.db import transaction

from core.errors import ServiceError, StateError

from ..models import Batch, Routing
from .batches import estimate_cost
from .calibration import create_derived_batch, part_name, read_sample, settings_of


@dataclass
class RoutingPlan:
    """What routing would do, before anything is created or paid for."""

    batch: str
    labeller: str
    model: str
    prompt_version: str
    target_accuracy: float
    conservative: bool
    threshold: float | None
    estimated_accuracy: float | None
    accuracy_ci: list[float] | None
    sample_accepted: int
    queries: int  #: the batch's queries (gold left out)
    sampled: int  #: queries in the calibration sample
    calibrated: int  #: of them, labelled by the crowd (the others go nowhere: disputed or unanswered)
    accepted: list[str] = field(repr=False)
    to_humans: list[str] = field(repr=False)
    over_budget: list[str] = field(repr=False)
    budget: Decimal | None = None
    cost: Decimal = Decimal("0")  #: the routed queries on the crowd
    cost_all: Decimal = Decimal("0")  #: every query of the batch on the crowd
    calibration_cost: Decimal = Decimal("0")
    candidates: list[dict] = field(default_factory=list, repr=False)

    @property
    def saving(self) -> Decimal:
        return self.cost_all - self.cost - self.calibration_cost

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        for key in ("accepted", "to_humans", "over_budget"):
            data[f"{key}_count"] = len(data[key])
        data["saving"] = self.saving
        return {k: str(v) if isinstance(v, Decimal) else v for k, v in data.items()}


def _cost(batch: Batch, queries: int) -> Decimal:
    if queries == 0:
        return Decimal("0")
    return Decimal(estimate_cost(settings_of(batch), queries)["total"])


def _affordable(batch: Batch, budget: Decimal, wanted: int) -> int:
    """The most queries (of ``wanted``) whose crowd cost is within ``budget`` (cost grows with the count)."""
    low, high = 0, wanted
    while low < high:
        middle = (low + high + 1) // 2
        if _cost(batch, middle) <= budget:
            low = middle
        else:
            high = middle - 1
    return low


def plan_routing(
    batch: Batch,
    target_accuracy: float,
    *,
    budget: Decimal | str | None = None,
    conservative: bool = False,
    labeller: str | None = None,
) -> RoutingPlan:
    """Choose the threshold and split the batch; see the module docstring. Writes nothing."""
    from ..routing import choose_threshold, split_by_threshold

    if not 0 < target_accuracy <= 1:
        raise ServiceError(f"the target accuracy must be in (0, 1], got {target_accuracy}")
    budget = None if budget in (None, "") else Decimal(str(budget))
    if budget is not None and budget < 0:
        raise ServiceError("the budget cannot be negative")
    sample = read_sample(batch, labeller)
    if not sample.qids:
        raise StateError(f"the calibration sample {sample.sample_batch.name!r} has no crowd label yet")
    correct = [m == h for m, h in zip(sample.machine, sample.human, strict=True)]
    choice = choose_threshold(
        sample.confidence, correct, sample.weights, target=target_accuracy, conservative=conservative
    )
    confidence = {qid: m.confidence for qid, m in sample.rest.items()}
    split = split_by_threshold(confidence, choice.threshold)
    to_humans, over_budget = split.to_humans, []
    if budget is not None:
        fits = _affordable(batch, budget, len(to_humans))
        to_humans, over_budget = to_humans[:fits], to_humans[fits:]
    sample_size = sample.sample_batch.queries.filter(is_gold=False).count()
    queries = batch.queries.filter(is_gold=False).count()
    return RoutingPlan(
        batch=batch.name,
        **sample.identity.as_dict(),
        target_accuracy=target_accuracy,
        conservative=conservative,
        threshold=choice.threshold,
        estimated_accuracy=choice.estimated_accuracy,
        accuracy_ci=list(choice.ci) if choice.ci else None,
        sample_accepted=choice.sample_accepted,
        queries=queries,
        sampled=sample_size,
        calibrated=len(sample.qids),
        accepted=split.accepted,
        to_humans=to_humans,
        over_budget=over_budget,
        budget=budget,
        cost=_cost(batch, len(to_humans)),
        cost_all=_cost(batch, queries),
        calibration_cost=_cost(batch, sample_size),
        candidates=choice.candidates,
    )


def _check_routable(batch: Batch) -> None:
    if batch.status != Batch.Status.DRAFT:
        raise StateError(f"batch {batch.name!r} is {batch.status}; routing is for a machine-labelled draft")
    if batch.routings.filter(routed_batch__isnull=False).exclude(routed_batch__status=Batch.Status.CANCELLED).exists():
        raise StateError(f"batch {batch.name!r} was routed already; cancel its routed batch to route again")


def route_batch(
    batch: Batch,
    target_accuracy: float,
    *,
    budget: Decimal | str | None = None,
    conservative: bool = False,
    labeller: str | None = None,
    name: str = "",
    seed: int = 0,
    plan: RoutingPlan | None = None,
) -> Routing:
    """Record the plan's decision and make its crowd queries a derived batch (not yet published).

    ``plan`` is the one shown and confirmed (the command's); without it the plan is made here.
    The batch's row is locked while it is checked and routed, so two requests at once cannot
    both route it (and pay the crowd twice).
    """
    _check_routable(batch)
    plan = plan or plan_routing(batch, target_accuracy, budget=budget, conservative=conservative, labeller=labeller)
    with transaction.atomic():
        _check_routable(Batch.objects.select_for_update().get(pk=batch.pk))
        routed = None
        if plan.to_humans:
            routed = create_derived_batch(
                batch,
                name or part_name(batch),
                plan.to_humans,
                purpose=Batch.Purpose.ROUTED,
                derivation={
                    "labeller": plan.labeller,
                    "model": plan.model,
                    "prompt_version": plan.prompt_version,
                    "threshold": plan.threshold,
                    "seed": seed,
                },
                seed=seed,
            )
        return Routing.objects.create(
            batch=batch,
            routed_batch=routed,
            labeller=plan.labeller,
            model=plan.model,
            prompt_version=plan.prompt_version,
            target_accuracy=target_accuracy,
            conservative=conservative,
            threshold=plan.threshold,
            estimated_accuracy=plan.estimated_accuracy,
            accuracy_ci=plan.accuracy_ci or [],
            accepted=plan.accepted,
            to_humans=len(plan.to_humans),
            over_budget=len(plan.over_budget),
            cost=plan.cost,
            saving=plan.saving,
        )
