"""Acting on a routing plan (:mod:`.plan`): :func:`route_batch` records the decision (:class:`Routing`)
and makes the routed queries a derived batch; :func:`route_and_publish` also publishes it. A routing
whose routed batch is live cannot be superseded until that batch is cancelled; nothing is routed while
a sample query may still change its crowd label (:func:`refuse_while_waiting`).
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.db import transaction

from annotation.crowd.services.background import start_publish
from annotation.crowd.services.locking import reading_answers
from annotation.crowd.services.publishing import publish_batch
from annotation.machine.routing_text import sample_waits_text
from annotation.machine.selectors import calibration_batch, read_sample
from annotation.machine.services.calibration import (
    create_derived_batch,
    follow_reference,
    part_name,
    routed_in_force,
)
from annotation.machine.services.routing.choice import reference_state
from annotation.machine.services.routing.plan import (
    DEFAULT_RISK,
    RoutingPlan,
    check_routing,
    plan_routing,
)
from annotation.models import Batch, Routing
from core import methods
from core.errors import ServiceError, StateError
from core.services.once import claim


def _check_routable(batch: Batch) -> None:
    if batch.status != Batch.Status.DRAFT:
        raise StateError(f"batch {batch.name!r} is {batch.status}; routing is for a machine-labelled draft")
    refusal = _live_routing(batch)
    if refusal:
        raise StateError(refusal)


def _live_routing(batch: Batch) -> str | None:
    """Why routing ``batch`` again is a duplicate (:func:`core.services.once.claim`): a routed batch in force."""
    live = routed_in_force(batch)
    if live is None:
        return None
    return (
        f"batch {batch.name!r} was routed already: its routed batch {live.routed_batch.name} is "
        f"{live.routed_batch.status}; cancel it to route again"
    )


def _sample_in_force(batch: Batch, plan: RoutingPlan) -> Batch:
    """The calibration sample in force, if it is the one ``plan`` was made on (else ``StateError``)."""
    in_force = calibration_batch(batch)
    if in_force is None or in_force.name != plan.sample_batch:
        now = f"the sample in force is {in_force.name!r}" if in_force is not None else "no sample is in force"
        raise StateError(
            f"the plan was made on the calibration sample {plan.sample_batch!r}, but {now} "
            "(extended or cancelled since): make the plan again"
        )
    return in_force


def refuse_while_waiting(waits: list[dict], awaiting: int) -> None:
    """While a sample query may still change its crowd label, nothing is routed or published, whatever
    the rule (no flag overrides it); the refusal says what the sample waits for."""
    if awaiting:
        raise StateError(" ".join(line.strip() for line in sample_waits_text(waits, awaiting)))


def route_batch(
    batch: Batch,
    target_accuracy: float,
    *,
    budget: Decimal | str | None = None,
    risk: float | None = DEFAULT_RISK,
    no_guarantee: bool = False,
    labeller: str | None = None,
    name: str = "",
    seed: int = 0,
    plan: RoutingPlan | None = None,
    cascade: list[str] | None = None,
) -> Routing:
    """Record the plan's decision and make its crowd queries a derived batch (not yet published).

    ``plan``: the one shown and confirmed (the command's), else made here. Under the batch's row lock
    (:mod:`core.services.once`: two requests cannot both pay the crowd) the plan's sample must still be
    the one in force (not extended or cancelled since), else a ``StateError`` and nothing recorded. The
    batch's answers are read as a use: a correction after it is refused (``reading_answers``)."""
    with reading_answers(batch, "A routing"):
        request = {"budget": budget, "risk": risk, "no_guarantee": no_guarantee, "cascade": cascade}
        if plan is None:  # bad input is refused as such, before the batch's state
            check_routing(target_accuracy=target_accuracy, **request)
        _check_routable(batch)
        plan = plan or plan_routing(batch, target_accuracy, labeller=labeller, **request)
        with transaction.atomic():
            claim(batch, lambda: _live_routing(batch))  # paid work exactly once (core.services.once)
            locked = Batch.objects.get(pk=batch.pk)
            _check_routable(locked)
            sample_batch = _sample_in_force(locked, plan)
            refuse_while_waiting(plan.waiting, plan.awaiting_votes)  # a plan made on a sample that waited: no
            # Under the lock, the sample as it is now (votes, escalations and syncs since the plan was shown).
            now = reference_state(read_sample(locked, plan.labeller, sample_batch=sample_batch))
            refuse_while_waiting(now["waits"], len(now["pending"]))
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
                        "risk": plan.risk,
                        "seed": seed,
                        "reference": plan.reference_rule or None,
                    },
                    seed=seed,
                )
                # The crowd that labels the routed queries is the one the machine was measured on.
                if plan.reference_rule:
                    follow_reference(routed, plan.reference_rule)
            return Routing.objects.create(
                batch=batch,
                routed_batch=routed,
                sample_batch=sample_batch,
                labeller=plan.labeller,
                model=plan.model,
                prompt_version=plan.prompt_version,
                target_accuracy=plan.target_accuracy,
                risk=plan.risk,
                threshold=plan.threshold,
                estimated_accuracy=plan.estimated_accuracy,
                accuracy_ci=plan.accuracy_ci or [],
                accepted=plan.accepted,
                to_humans=len(plan.to_humans),
                over_budget=len(plan.over_budget),
                cost=plan.cost,
                saving=plan.saving,
                # What "right" meant, with whose answers were held out of it and why (the echo check).
                reference=plan.reference_rule | ({"echo": _echo_record(plan.echo)} if plan.echo else {}),
                stages=plan.stages,
                methods=methods.current(),
            )


def _echo_record(echo: dict) -> dict:
    """The echo check as a routing records it: who was held out, who restored, why (no per-worker table)."""
    keys = ("z", "min_answers", "held_out", "restored", "held_out_answers", "text")
    return {key: echo[key] for key in keys if key in echo} | {
        "flagged": [
            {k: w[k] for k in ("worker", "answers", "with_machine", "with_people", "z")} for w in echo["flagged"]
        ]
    }


@dataclass(frozen=True)
class Routed:
    """What :func:`route_and_publish` did."""

    routing: Routing
    #: Publishing the routed queries in the background (``None``: nothing to publish, or published here).
    job: Any = None
    #: HITs published here and now (``now=True``; else ``None``).
    published: int | None = None


def route_and_publish(
    batch: Batch,
    target_accuracy: float,
    *,
    publish: bool = True,
    now: bool = False,
    bar: bool = False,
    **routing: Any,
) -> Routed:
    """Route the batch (:func:`route_batch`'s keywords in ``routing``) and publish the routed queries:
    the one action behind the page, the API and ``manage.py route``. By default publishing is a job
    started in the routing's transaction (one that cannot start leaves no routing); ``now``: published
    here after the commit, with a progress ``bar`` (a failure leaves the routed batch a draft);
    ``publish=False``: left a draft."""
    with transaction.atomic():
        done = route_batch(batch, target_accuracy, **routing)
        routed = done.routed_batch
        # In the transaction: a publishing job that cannot start leaves no routing behind.
        job = start_publish(routed) if routed is not None and publish and not now else None
    if routed is not None and publish and now:
        try:
            published = publish_batch(routed, bar=bar)
        except ServiceError as exc:  # the routing stands: say where its queries are (the error keeps its kind)
            exc.add_note(
                f"batch {batch.name!r} was routed to {routed.name!r}, whose publishing failed: publish it again"
            )
            raise
        return Routed(done, published=published)
    return Routed(done, job=job)
