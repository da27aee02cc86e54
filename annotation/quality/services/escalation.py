"""More assignments for HITs whose queries are disputed.

A finished HIT with an unsettled query gets one more assignment per round (one vote breaks a tie)
until it is settled (``until``: ``"majority"`` or ``"posterior:P"``, Dawid-Skene's) or the HIT
reaches the cap; a ruling is final. The plan keeps the HITs the budget pays for (:mod:`.budget`),
in batch order; a team batch adds no place no member can take. Each extension is committed before
the provider is called, with a deterministic token: an interrupted run is finished, not repeated.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from decimal import Decimal

from django.db import transaction
from django.db.models import Count, F, Q

from annotation.crowd.costs import Cost
from annotation.crowd.providers import CrowdProvider, get_provider
from annotation.crowd.providers.base import provider_class
from annotation.crowd.selectors import place_takers
from annotation.crowd.services.background import _batch_url, _require_status
from annotation.crowd.services.locking import one_per_batch
from annotation.crowd.services.statuses import settle_hit_statuses
from annotation.models import Assignment, Batch, Escalation, Hit
from annotation.models.crowd import DEFAULT_MAX_ASSIGNMENTS
from annotation.quality.services.budget import affordable, budget_left, extra_cost
from annotation.results.selectors.labels import BatchAnswers
from core.errors import ServiceError
from core.jobs import background_job
from core.models import Job
from core.services.once import start_once
from genderbias.numbers import NumberError, parse_decimal

UNTIL_CHOICES = "majority or posterior:P (0.5 < P < 1)"


def parse_until(text: str) -> float | None:
    """``"majority"`` -> ``None``; ``"posterior:0.9"`` -> ``0.9``; anything else is refused."""
    text = (text or "majority").strip().lower()
    if text == "majority":
        return None
    kind, _, value = text.partition(":")
    try:  # a plain ASCII decimal (genderbias.numbers): float() took "posterior:٠.٩"
        target = parse_decimal(value, "until")
    except NumberError:
        target = -1.0
    if kind != "posterior" or not 0.5 < target < 1:
        raise ServiceError(f"--until {text!r}: expected {UNTIL_CHOICES}")
    return target


def settled_queries(batch: Batch, until: str = "majority") -> set[str]:
    """qids that need no more votes: ruled on, or settled as ``until`` says."""
    target = parse_until(until)
    answers = BatchAnswers(batch)
    settled = set(answers.rulings)
    votes = answers.votes
    if not len(votes):
        return settled
    if target is None:
        return settled | {str(q) for q in votes.index[~votes["disputed"]]}
    posteriors = answers.dawid_skene.posteriors.max(axis=1)
    return settled | {str(qid) for qid, p in posteriors.items() if p >= target}


@dataclass
class EscalationPlan:
    batch: Batch
    hits: list[tuple[Hit, list[str]]] = field(default_factory=list)
    at_cap: list[str] = field(default_factory=list)
    cost: Cost | None = None
    until: str = "majority"
    #: HITs left out of this round because the budget does not pay for them.
    over_budget: list[tuple[Hit, list[str]]] = field(default_factory=list)
    #: What the budget still allows before this round (``None``: no budget).
    budget_left: Decimal | None = None

    @property
    def extra_assignments(self) -> int:
        return len(self.hits)

    @property
    def disputed(self) -> int:
        return sum(len(qids) for _, qids in self.hits) + len(self.at_cap)


#: An answer that fills its place for good: approved, or submitted and not failing its gold check (that
#: one is rejected at its review, maybe syncs later, and its place goes to someone else).
FILLS_PLACE = Q(assignments__status=Assignment.Status.APPROVED) | (
    Q(assignments__status=Assignment.Status.SUBMITTED) & ~Q(assignments__gold_passed=False)
)


def _filled(batch: Batch):
    """The batch's HITs on the provider, each with its places ``answered`` (:data:`FILLS_PLACE`)."""
    return batch.hits.exclude(provider_id=None).annotate(answered=Count("assignments", filter=FILLS_PLACE))


def round_in_progress(batch: Batch) -> bool:
    """Whether a HIT of ``batch`` on the provider still has a place without an answer that fills it
    (:data:`FILLS_PLACE`). A calibration sample escalates only once the round is in, so that its
    reference (and the routing certified against it) depends on the answers, not on when they came."""
    return _filled(batch).exclude(status=Hit.Status.EXPIRED).filter(answered__lt=F("max_assignments")).exists()


def plan_escalation(
    batch: Batch, max_assignments: int = DEFAULT_MAX_ASSIGNMENTS, until: str = "majority"
) -> EscalationPlan:
    """Which HITs get one more assignment, which unsettled queries are already at the cap, the cost
    and what the budget leaves out."""
    _check_cap(batch, max_assignments)
    refusal = provider_class(batch.provider).extension_refusal(batch.assignments_per_query, max_assignments)
    if refusal:
        raise ServiceError(refusal)
    resolved = settled_queries(batch, until)
    plan = EscalationPlan(batch, until=until, budget_left=budget_left(batch))
    finished = [hit for hit in _filled(batch) if hit.answered >= hit.max_assignments]
    takers = place_takers(batch, [hit.pk for hit in finished]) if finished else None
    for hit in finished:
        qids = list(
            hit.hit_queries.filter(batch_query__is_gold=False)
            .exclude(batch_query__qid__in=resolved)
            .order_by("position")
            .values_list("batch_query__qid", flat=True)
        )
        if not qids:
            continue
        if hit.max_assignments >= max_assignments or (takers is not None and not takers[hit.pk]):
            plan.at_cap += qids
        else:
            plan.hits.append((hit, qids))
    paid_for = affordable(batch, len(plan.hits)) if plan.hits else 0
    plan.hits, plan.over_budget = plan.hits[:paid_for], plan.hits[paid_for:]
    if plan.hits:
        plan.cost = extra_cost(batch, {hit.provider_id or str(hit.pk): 1 for hit, _ in plan.hits})
    return plan


def _check_cap(batch: Batch, max_assignments: int) -> None:
    if max_assignments < batch.assignments_per_query:
        raise ServiceError(
            f"the cap ({max_assignments}) is below the batch's {batch.assignments_per_query} assignments"
        )


def escalation_round(
    batch: Batch,
    max_assignments: int = DEFAULT_MAX_ASSIGNMENTS,
    provider: CrowdProvider | None = None,
    *,
    confirmed_hits: Collection[int] | None = None,
    until: str = "majority",
) -> list[Escalation]:
    """Finish interrupted extensions, then add one assignment per planned HIT; ``confirmed_hits``: the
    plan a person accepted, so that answers synced since can shrink what is paid for, never grow it."""
    if batch.status not in (Batch.Status.PUBLISHED, Batch.Status.COMPLETED):
        raise ServiceError(f"batch {batch.name!r} is {batch.status}; only published batches can be escalated")
    provider = provider or get_provider(batch.provider)
    applied = []
    for escalation in batch.escalations.filter(applied=False).select_related("hit"):
        provider.add_assignments(escalation.hit, escalation.added, escalation.unique_token)
        Escalation.objects.filter(pk=escalation.pk).update(applied=True)
        applied.append(escalation)
    plan = plan_escalation(batch, max_assignments, until)
    if confirmed_hits is not None:
        plan.hits = [(hit, qids) for hit, qids in plan.hits if hit.pk in set(confirmed_hits)]
    per_assignment = plan.cost.total / plan.cost.assignments_total if plan.cost else Decimal("0")
    for hit, qids in plan.hits:
        with transaction.atomic():
            escalation = Escalation.objects.create(
                batch=batch,
                hit=hit,
                added=1,
                assignments_before=hit.max_assignments,
                disputed=qids,
                cost=per_assignment,
            )
            Hit.objects.filter(pk=hit.pk).update(max_assignments=hit.max_assignments + 1)
        provider.add_assignments(hit, 1, escalation.unique_token)
        Escalation.objects.filter(pk=escalation.pk).update(applied=True)
        applied.append(escalation)
    settle_hit_statuses(batch)
    if applied and batch.status == Batch.Status.COMPLETED:
        Batch.objects.filter(pk=batch.pk).update(status=Batch.Status.PUBLISHED)
        batch.status = Batch.Status.PUBLISHED
    return applied


#: One round of escalation (:func:`escalation_round`), holding the batch's lease.
escalate_batch = one_per_batch("An escalation")(escalation_round)


def set_auto_escalation(batch: Batch, until: str | None, *, max_assignments: int = DEFAULT_MAX_ASSIGNMENTS) -> None:
    """Let every sync escalate round by round until ``until`` (``None`` stops it), up to ``max_assignments``;
    refused without a budget (``Batch.extra_budget``): it never spends without a limit someone chose."""
    fields: dict[str, object] = {"escalate_until": ""}
    if until is not None:
        parse_until(until)
        _check_cap(batch, max_assignments)
        if batch.extra_budget is None:
            raise ServiceError("automatic escalation needs a budget (--budget USD)")
        fields = {"escalate_until": until, "escalation_cap": max_assignments}
    Batch.objects.filter(pk=batch.pk).update(**fields)
    for name, value in fields.items():
        setattr(batch, name, value)


# -- as a background job (``annotation.escalate``): a redelivery after a crash finishes the work instead of
# repeating it. The kind and task name are stored in ``Job`` rows: they never change.
@background_job("annotation.escalate", task="annotation.tasks.escalate_batch_task")
def escalate_job(
    job: Job, batch_id: int, max_assignments: int, confirmed_hits: list[int] | None = None, until: str = "majority"
) -> int:
    batch = Batch.objects.get(pk=batch_id)
    added = len(escalate_batch(batch, max_assignments, confirmed_hits=confirmed_hits, until=until))
    job.result = {"batch": batch.name, "extra_assignments": added, "url": _batch_url(batch)}
    job.message = f"Added {added} assignment(s)"
    return added


def start_escalate(
    batch: Batch, *, max_assignments: int, confirmed_hits: list[int] | None = None, until: str = "majority"
) -> Job:
    _require_status(batch, Batch.Status.PUBLISHED, Batch.Status.COMPLETED)
    busy = f"batch {batch.name!r} is being escalated already"
    args = (batch.pk, max_assignments, confirmed_hits, until)
    return start_once(escalate_job, batch, f"Escalate {batch.name}", *args, busy=busy)
