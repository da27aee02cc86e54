"""Routing: accept the machine's labels where it is sure enough, send the rest to the crowd.

From the blind calibration sample (:mod:`.calibration`), :func:`plan_routing` chooses the
threshold by default with a finite-sample guarantee (:func:`annotation.machine.routing_statistics.certify_threshold`):
with probability at least 1 − ``risk`` over the draw of the sample, the queries at or above
it are labelled by the machine at least ``target_accuracy`` as the crowd majority would
label them. ``risk=None`` uses the old point-estimate rule instead
(:func:`annotation.machine.routing_statistics.choose_threshold`), which every place that shows it labels "no
guarantee". When nothing can be certified, the plan says so and how many more sample
queries the first candidate that failed would need (``calibrate --extend``). The guarantee is
refused when the routable queries are not the population the sample was drawn from; nothing
is certified while sample queries await the crowd; and the first guaranteed routing on a
sample fixes its (target, risk): another pair on the same labels certifies nothing ("target
changed after seeing the labels").

Every query of the batch ends somewhere the plan names: gold; in the sample (the crowd
labels it); machine-accepted; to the crowd (below the threshold, the queries the machine
was trained on and those it did not label, lowest confidence first, as far as ``budget``
pays); or over budget (left unlabelled). The saving is counted on the queries that end up
labelled only. Nothing is written until :func:`route_batch`, which records the decision
(:class:`Routing`: the accepted qids and the sample it was made on) and makes the routed
queries a derived batch with the parent's settings. A routing that sent nothing to the
crowd can be superseded by routing again; one whose routed batch is live cannot until that
batch is cancelled.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from decimal import Decimal
from typing import Any

from django.db import transaction

from annotation.crowd.services.batches import estimate_cost
from annotation.machine.selectors import (
    RANDOM_DESIGN,
    CalibrationSample,
    calibration_batch,
    read_sample,
    same_population,
)
from annotation.machine.services.calibration import DEFAULT_SAMPLE, create_derived_batch, part_name, settings_of
from annotation.models import Batch, Routing
from core.errors import ServiceError, StateError

#: The risk δ when none is given.
DEFAULT_RISK = 0.05
GUARANTEE = "guarantee"
ESTIMATE = "point estimate (no guarantee)"


@dataclass
class RoutingPlan:
    """What routing would do, before anything is created or paid for."""

    batch: str
    labeller: str
    model: str
    prompt_version: str
    target_accuracy: float
    risk: float | None  #: δ of the guarantee; None: the point-estimate rule (no guarantee)
    rule: str  #: :data:`GUARANTEE` or :data:`ESTIMATE`
    threshold: float | None
    estimated_accuracy: (
        float | None
    )  #: share right among the sample queries at or above the threshold (weighted for the estimate rule)
    accuracy_ci: list[float] | None  #: Wilson interval of that share (descriptive)
    sample_accepted: int
    queries: int  #: every query of the batch, gold included
    gold: int
    sampled: int  #: queries in the calibration sample (the crowd labels them)
    calibrated: int  #: of them, labelled by the crowd so far
    sample_batch: str
    accepted: list[str] = field(repr=False)
    to_humans: list[str] = field(repr=False)
    over_budget: list[str] = field(repr=False)
    in_training: list[str] = field(default_factory=list, repr=False)  #: to the crowd: the machine saw their labels
    no_machine_label: list[str] = field(default_factory=list, repr=False)  #: to the crowd: no label from this machine
    budget: Decimal | None = None
    cost: Decimal = Decimal("0")  #: the routed queries on the crowd
    cost_all: Decimal = Decimal("0")  #: every query that ends up labelled, on the crowd
    calibration_cost: Decimal = Decimal("0")
    certified: bool = False  #: a threshold passed the guarantee's test
    more_needed: int | None = None  #: more sample queries the first failing candidate needs (guarantee rule)
    more_reason: str = ""
    failed_threshold: float | None = None  #: where fixed-sequence testing stopped (guarantee rule)
    candidates: list[dict] = field(default_factory=list, repr=False)

    @property
    def saving(self) -> Decimal:
        """Against labelling on the crowd every query that ends up labelled (over-budget ones end unlabelled)."""
        return self.cost_all - self.cost - self.calibration_cost

    @property
    def labelled(self) -> int:
        """Queries that end up with a label: the sample, the machine-accepted and the routed ones."""
        return self.sampled + len(self.accepted) + len(self.to_humans)

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        for key in ("accepted", "to_humans", "over_budget", "in_training", "no_machine_label"):
            data[f"{key}_count"] = len(data[key])
        data["saving"] = self.saving
        data["labelled"] = self.labelled
        data["unlabelled"] = len(self.over_budget)
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


def _choose(sample: CalibrationSample, target: float, risk: float | None) -> dict[str, Any]:
    """The threshold by the guarantee (``risk``) or by the point estimate (``risk`` None)."""
    from annotation.machine.routing_statistics import accuracy_at, certify_threshold, choose_threshold

    if risk is None:
        correct = [m == h for m, h in zip(sample.machine, sample.human, strict=True)]
        choice = choose_threshold(sample.confidence, correct, sample.weights, target=target)
        return {
            "threshold": choice.threshold,
            "estimated_accuracy": choice.estimated_accuracy,
            "accuracy_ci": list(choice.ci) if choice.ci else None,
            "sample_accepted": choice.sample_accepted,
            "certified": False,
            "candidates": choice.candidates,
        }
    if not 0 < risk < 1:
        raise ServiceError(f"the risk must be between 0 and 1 (e.g. 0.05), got {risk}")
    if sample.design != RANDOM_DESIGN:
        raise StateError(
            f"the calibration sample {sample.sample_batch.name!r} was drawn stratified by the machine's label, "
            "which the guarantee cannot use: cancel it and draw a new one, or route with no guarantee"
        )
    first = (sample.chain or [sample.sample_batch])[0]
    if not same_population(first.derivation, sample.population):
        raise StateError(
            f"the queries routing would decide on ({len(sample.population)} with a label from "
            f"{sample.identity.labeller}, trained-on ones left out) are not the population the calibration sample "
            f"{first.name!r} was drawn from: a query outside it had no chance to be sampled, so no guarantee "
            "holds. Draw a new sample (cancel this one first), or route with no guarantee"
        )
    drawn = sample.drawn
    confidence = [sample.population[q].confidence for q in drawn]
    correct = [sample.crowd.get(q) == sample.population[q].label for q in drawn]  # no crowd label yet: not right
    population = [m.confidence for m in sample.population.values()]
    result = certify_threshold(
        confidence,
        correct,
        population,
        target=target,
        risk=risk,
        planned=sample.planned or len(drawn),
        pending=sample.unanswered,
    )
    earlier = _earlier_guarantee(sample)
    if result.threshold is not None and earlier is not None and earlier != (target, risk):
        return _no_certificate(
            result,
            f"the sample's labels were used already for a guaranteed routing at target {earlier[0]:g} and risk "
            f"{earlier[1]:g}: another target or risk on the same sample has no guarantee (target changed after "
            "seeing the labels; each extra look costs its risk). Route at that target and risk, with no guarantee, "
            "or draw a new sample",
        )
    estimate, ci, accepted = (None, None, 0)
    if result.threshold is not None:
        estimate, ci, accepted = accuracy_at(confidence, correct, None, result.threshold)
    return {
        "threshold": result.threshold,
        "estimated_accuracy": estimate,
        "accuracy_ci": list(ci) if ci else None,
        "sample_accepted": accepted,
        "certified": result.threshold is not None,
        "more_needed": result.more_needed if result.threshold is None else None,
        "more_reason": result.more_reason if result.threshold is None else "",
        "failed_threshold": (
            result.first_failure["threshold"] if result.first_failure and not sample.unanswered else None
        ),
        "candidates": result.candidates,
    }


def _earlier_guarantee(sample: CalibrationSample) -> tuple[float, float] | None:
    """(A, δ) of the first guaranteed routing recorded on this sample (any link of its chain), or None.

    A and δ must be chosen before the labels are seen: a second routing on the same labels with
    another (A, δ) would have its risk added to the first one's.
    """
    chain = sample.chain or [sample.sample_batch]
    first = (
        Routing.objects.filter(batch=sample.batch, sample_batch__in=chain, risk__isnull=False)
        .order_by("created", "pk")
        .values_list("target_accuracy", "risk")
        .first()
    )
    return None if first is None else (float(first[0]), float(first[1]))


def _no_certificate(result, reason: str) -> dict[str, Any]:
    return {
        "threshold": None,
        "estimated_accuracy": None,
        "accuracy_ci": None,
        "sample_accepted": 0,
        "certified": False,
        "more_needed": None,
        "more_reason": reason,
        "failed_threshold": None,
        "candidates": result.candidates,
    }


def plan_routing(
    batch: Batch,
    target_accuracy: float,
    *,
    budget: Decimal | str | None = None,
    risk: float | None = DEFAULT_RISK,
    labeller: str | None = None,
    sample_batch: Batch | None = None,
) -> RoutingPlan:
    """Choose the threshold and split the batch; see the module docstring. Writes nothing."""
    from annotation.machine.routing_statistics import split_by_threshold

    if not 0 < target_accuracy <= 1:
        raise ServiceError(f"the target accuracy must be in (0, 1], got {target_accuracy}")
    budget = None if budget in (None, "") else Decimal(str(budget))
    if budget is not None and budget < 0:
        raise ServiceError("the budget cannot be negative")
    sample = read_sample(batch, labeller, sample_batch=sample_batch)
    if not sample.qids:
        raise StateError(f"the calibration sample {sample.sample_batch.name!r} has no crowd label yet")
    chosen = _choose(sample, target_accuracy, risk)
    split = split_by_threshold({qid: m.confidence for qid, m in sample.rest.items()}, chosen["threshold"])
    sampled = set(sample.drawn) | {q for link in sample.chain for q in link.derivation["stratum_of"]}
    queries = dict(batch.queries.values_list("qid", "is_gold"))
    gold = sum(queries.values())
    routable = set(sample.population) | set(sample.in_training)
    no_label = sorted(q for q, is_gold in queries.items() if not is_gold and q not in routable and q not in sampled)
    training = [q for q in sample.in_training if q not in sampled]
    # The machine's label cannot be trusted on these: they go to the crowd first, then the least sure.
    wanted = training + no_label + split.to_humans
    to_humans, over_budget = wanted, []
    if budget is not None:
        fits = _affordable(batch, budget, len(wanted))
        to_humans, over_budget = wanted[:fits], wanted[fits:]
    plan = RoutingPlan(
        batch=batch.name,
        **sample.identity.as_dict(),
        target_accuracy=target_accuracy,
        risk=risk,
        rule=GUARANTEE if risk is not None else ESTIMATE,
        threshold=chosen["threshold"],
        estimated_accuracy=chosen["estimated_accuracy"],
        accuracy_ci=chosen["accuracy_ci"],
        sample_accepted=chosen["sample_accepted"],
        queries=len(queries),
        gold=gold,
        sampled=len(sampled),
        calibrated=len(sample.qids),
        sample_batch=sample.sample_batch.name,
        accepted=split.accepted,
        to_humans=to_humans,
        over_budget=over_budget,
        in_training=training,
        no_machine_label=no_label,
        budget=budget,
        cost=_cost(batch, len(to_humans)),
        calibration_cost=_cost(batch, len(sampled)),
        certified=chosen["certified"],
        more_needed=chosen.get("more_needed"),
        more_reason=chosen.get("more_reason", ""),
        failed_threshold=chosen.get("failed_threshold"),
        candidates=chosen["candidates"],
    )
    plan.cost_all = _cost(batch, plan.labelled)
    return plan


def plan_summary(plan: RoutingPlan) -> list[str]:
    """The plan in sentences, the same on the command line and the page: where every query goes."""
    lines = []
    if plan.threshold is None:
        if plan.risk is None:
            lines.append(
                f"No confidence threshold of {plan.labeller} meets {plan.target_accuracy:.3g} on the sample's point "
                "estimate (no guarantee): the machine keeps no label."
            )
        else:
            lines.append(
                f"No threshold could be certified (target {plan.target_accuracy:.3g}, risk {plan.risk:.3g}) on "
                f"{plan.calibrated} crowd-labelled sample queries: the machine keeps no label."
            )
            if plan.more_reason and plan.failed_threshold is None:
                lines.append(plan.more_reason[0].upper() + plan.more_reason[1:] + ".")
            elif plan.more_reason:
                where = f"threshold {plan.failed_threshold:.3f}"
                if plan.more_needed:
                    lines.append(
                        f"The first candidate that failed ({where}) needs {plan.more_reason}: extend the sample "
                        f"(calibrate --extend --sample {plan.more_needed}) to try again."
                    )
                else:
                    lines.append(f"The first candidate that failed ({where}): {plan.more_reason}.")
    elif plan.risk is None:
        lo, hi = plan.accuracy_ci
        lines.append(
            f"Threshold {plan.threshold:.3f} by the point estimate (NO GUARANTEE): {plan.estimated_accuracy:.3f} of "
            f"the {plan.sample_accepted} sample queries at or above it are right (95% CI {lo:.3f}-{hi:.3f}); the "
            "accepted set falls short of the target far more often than any stated risk."
        )
    else:
        ci = ""
        if plan.accuracy_ci:
            ci = f", Wilson 95% {plan.accuracy_ci[0]:.3f}-{plan.accuracy_ci[1]:.3f}"
        lines.append(
            f"Threshold {plan.threshold:.3f}, certified: {guarantee_text(plan.risk, plan.target_accuracy)}. Observed "
            f"(descriptive, after the threshold was chosen on these items): {plan.estimated_accuracy:.3f} right on "
            f"{plan.sample_accepted} sample queries{ci}."
        )
    unlabelled = (
        f", {len(plan.over_budget)} over budget (left UNLABELLED: {_some(plan.over_budget)})"
        if plan.over_budget
        else ""
    )
    reasons = []
    if plan.in_training:
        reasons.append(f"{len(plan.in_training)} the machine was trained on")
    if plan.no_machine_label:
        reasons.append(f"{len(plan.no_machine_label)} with no label from {plan.labeller}")
    why = f" (of them {' and '.join(reasons)})" if reasons else ""
    lines.append(
        f"Of {plan.queries} queries: {plan.gold} gold, {plan.sampled} in the calibration sample ({plan.calibrated} "
        f"labelled by the crowd so far), {len(plan.accepted)} machine-accepted, {len(plan.to_humans)} to the "
        f"crowd{why}{unlabelled}."
    )
    lines.append(
        f"Cost: ${plan.cost} for the routed queries (+ ${plan.calibration_cost} the sample cost); the "
        f"{plan.labelled} queries that end up labelled, all on the crowd: ${plan.cost_all}; saving ${plan.saving}."
    )
    return lines


def guarantee_text(risk: float, target: float) -> str:
    """The guarantee in one clause, as the command, the page and the docs state it."""
    return (
        f"with probability at least {1 - risk:.3g} over the draw of the blind sample, the machine's labels of the "
        f"queries at or above the threshold agree with the crowd majority on at least {target:.3g} of them"
    )


def _some(qids: list[str], shown: int = 5) -> str:
    return ", ".join(qids[:shown]) + (f" and {len(qids) - shown} more" if len(qids) > shown else "")


def _check_routable(batch: Batch) -> None:
    if batch.status != Batch.Status.DRAFT:
        raise StateError(f"batch {batch.name!r} is {batch.status}; routing is for a machine-labelled draft")
    live = (
        batch.routings.filter(routed_batch__isnull=False)
        .exclude(routed_batch__status=Batch.Status.CANCELLED)
        .select_related("routed_batch")
        .first()
    )
    if live is not None:
        raise StateError(
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


def route_batch(
    batch: Batch,
    target_accuracy: float,
    *,
    budget: Decimal | str | None = None,
    risk: float | None = DEFAULT_RISK,
    labeller: str | None = None,
    name: str = "",
    seed: int = 0,
    plan: RoutingPlan | None = None,
) -> Routing:
    """Record the plan's decision and make its crowd queries a derived batch (not yet published).

    ``plan`` is the one shown and confirmed (the command's); without it the plan is made here.
    The batch's row is locked while it is checked and routed, so two requests at once cannot
    both route it (and pay the crowd twice). A routing that sent nothing to the crowd is
    superseded by the new one (the latest routing is the one in force).

    The plan is made before the lock, so under it the sample the plan was made on must still
    be the sample in force (an extension or a cancellation since, e.g. in another tab, makes
    it a plan on a sample nobody uses any more): else a ``StateError``, nothing recorded.
    """
    _check_routable(batch)
    plan = plan or plan_routing(batch, target_accuracy, budget=budget, risk=risk, labeller=labeller)
    with transaction.atomic():
        locked = Batch.objects.select_for_update().get(pk=batch.pk)
        _check_routable(locked)
        sample_batch = _sample_in_force(locked, plan)
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
                },
                seed=seed,
            )
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
        )


def audit_routing(
    batch: Batch,
    labels_file: str,
    target_accuracy: float,
    *,
    risk: float = DEFAULT_RISK,
    sample: int = DEFAULT_SAMPLE,
    redraws: int = 1000,
    labeller: str | None = None,
    progress=None,
) -> dict[str, Any]:
    """Check the guarantee on ``batch``'s own machine labels before paying a crowd: redraw the blind
    sample ``redraws`` times as ``calibrate`` would (redraw r is ``calibrate --seed r``'s draw),
    take ``labels_file``'s labels as the crowd's, certify a threshold on each and compare its
    accepted set with the file. Reads only; see :func:`annotation.machine.routing_statistics.audit`.

    Shares are fractions of the batch's queries (gold left out). The file must label every
    machine-labelled query the routing is made on (the trained-on ones left out).
    """
    from annotation.crowd.services.batches import read_labelled_file
    from annotation.machine.calibration_statistics import random_sample
    from annotation.machine.routing_statistics import audit
    from annotation.machine.selectors import identity_for, machine_labels
    from core.errors import InputError

    if not 0 < target_accuracy <= 1:
        raise ServiceError(f"the target accuracy must be in (0, 1], got {target_accuracy}")
    if not 0 < risk < 1:
        raise ServiceError(f"the risk must be between 0 and 1 (e.g. 0.05), got {risk}")
    if sample < 1:
        raise ServiceError(f"the sample needs at least one query, got {sample}")
    if redraws < 1:
        raise ServiceError(f"at least one redraw is needed, got {redraws}")
    identity = identity_for(batch, labeller)
    population = {q: m for q, m in machine_labels(batch, identity).items() if not m.in_training}
    truth = {q.qid: q.label for q in read_labelled_file(labels_file)}
    missing = sorted(set(population) - set(truth))
    if missing:
        raise InputError(
            labels_file,
            None,
            f"no label for {len(missing)} of the {len(population)} machine-labelled queries of batch "
            f"{batch.name!r} (e.g. {_some(missing)})",
        )
    qids = sorted(population)
    index = {q: i for i, q in enumerate(qids)}
    confidence = [population[q].confidence for q in qids]
    correct = [population[q].label == truth[q] for q in qids]
    samples = [[index[q] for q in random_sample(qids, sample, seed=r)] for r in range(redraws)]
    result = audit(
        confidence,
        correct,
        samples,
        target=target_accuracy,
        risk=risk,
        batch_size=batch.queries.filter(is_gold=False).count(),
        planned=sample,
        progress=progress,
    )
    return identity.as_dict() | {
        "batch": batch.name,
        "labels": str(labels_file),
        "sample": min(sample, len(qids)),
        "population": len(qids),
        "true_accuracy": sum(correct) / len(correct),
        **result.as_dict(),
    }
