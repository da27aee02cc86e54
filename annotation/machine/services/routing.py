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

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from decimal import Decimal
from typing import Any

from django.db import transaction

from annotation.crowd.services.background import start_publish
from annotation.crowd.services.batches import estimate_cost
from annotation.crowd.services.locking import reading_answers
from annotation.crowd.services.publishing import publish_batch
from annotation.machine.selectors import (
    RANDOM_DESIGN,
    CalibrationSample,
    calibration_batch,
    read_sample,
    same_population,
)
from annotation.machine.services.calibration import (
    DEFAULT_SAMPLE,
    create_derived_batch,
    follow_reference,
    part_name,
    settings_of,
)
from annotation.models import Batch, Routing
from core.errors import FieldError, ServiceError, StateError
from core.numbers import NumberError, parse_decimal
from core.services.once import claim

#: The risk δ when none is given.
DEFAULT_RISK = 0.05
GUARANTEE = "guarantee"
ESTIMATE = "point estimate (no guarantee)"


# --- the one check of a routing request (the page, the API and the commands only translate) -----------


def check_target_accuracy(value: float) -> float:
    """The target accuracy's rule, checked here only (routing, its audit, sizing a sample)."""
    if not 0 < value <= 1:
        raise FieldError("target_accuracy", f"the target accuracy must be in (0, 1], e.g. 0.95, got {value:g}")
    return value


def check_risk(value: float) -> float:
    """The guarantee's δ: a probability strictly between 0 and 1 (0 would need an infinite sample)."""
    if not 0 < value < 1:
        raise FieldError("risk", f"the risk must be between 0 and 1, e.g. 0.05, got {value:g}")
    return value


#: A routing request's fields, named alike by the page's form, the API and the services' keywords.
ROUTING_FIELDS = ("target_accuracy", "risk", "no_guarantee", "budget", "cascade")


def routing_request(data: Mapping[str, Any]) -> dict[str, Any]:
    """A routing request's fields out of what a shell read (a form's ``cleaned_data``, a serializer's
    validated data), as :func:`plan_routing`, :func:`route_batch` and :func:`route_and_publish` take
    them: the shells pass the values on unchecked, and :func:`check_routing` checks them."""
    return {"target_accuracy": data.get("target_accuracy")} | {
        name: data[name] for name in ROUTING_FIELDS[1:] if data.get(name) is not None
    }


@dataclass(frozen=True)
class RoutingRequest:
    """A routing request once its rules are checked (:func:`check_routing`)."""

    target_accuracy: float
    #: The guarantee's δ; ``None``: the point estimate, no guarantee.
    risk: float | None
    budget: Decimal | None
    #: The cascade's labellers with their floors (empty: the sample's labeller alone).
    stages: list[tuple[str, float | None]]


def check_routing(
    *,
    target_accuracy: float,
    risk: float | None = DEFAULT_RISK,
    no_guarantee: bool = False,
    budget: Decimal | str | None = None,
    cascade: list[str] | None = None,
) -> RoutingRequest:
    """Every rule of a routing request, checked once: the page's form, the API's serializer and
    ``manage.py route`` only read the values and hand them here (through :func:`plan_routing`,
    :func:`route_batch` or :func:`route_and_publish`), so each refuses bad input with the same
    :class:`~core.errors.FieldError`, which each shows in its own words.

    ``no_guarantee`` (or ``risk=None``) chooses the point estimate, with no guarantee; a risk
    given is checked either way. A cascade needs the guarantee: each labeller keeps only what
    it certifies."""
    if target_accuracy is None:
        raise FieldError("target_accuracy", "the target accuracy is required, e.g. 0.95")
    check_target_accuracy(target_accuracy)
    if risk is not None:
        check_risk(risk)
    budget = None if budget in (None, "") else Decimal(str(budget))
    if budget is not None and budget < 0:
        raise FieldError("budget", f"the budget cannot be negative, got {budget}")
    stages = parse_cascade(cascade) if cascade else []
    risk = None if no_guarantee else risk
    if stages and risk is None:
        raise FieldError(
            "cascade", "a cascade needs the guarantee (a risk): each labeller keeps only what it certifies"
        )
    return RoutingRequest(target_accuracy=target_accuracy, risk=risk, budget=budget, stages=stages)


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
    reference: str = ""  #: what "right" means: the sample's reference rule in words
    undecided: int = 0  #: sample queries with their votes in but no decisive crowd label
    awaiting_votes: int = 0  #: sample queries whose HIT still gets votes (escalation, open places)
    escalation_spent: Decimal = Decimal("0")  #: what the sample's escalations cost so far
    escalation_next: Decimal = Decimal("0")  #: the next escalation round of the sample (at the next sync)
    escalation_limit: Decimal = Decimal("0")  #: the most the sample's escalation may still add (to the cap)
    extendable: bool = True  #: the sample may be extended (δ split); False: drawn whole
    ceiling: float | None = None  #: best agreement with the reference any machine can expect, as routing counts it
    ceiling_best: dict = field(
        default_factory=dict
    )  #: the label whose queries the crowd gets most right: label, ceiling
    in_reach: list[dict] = field(default_factory=list)  #: what would bring an out-of-reach target in reach
    sizing: list[dict] = field(default_factory=list)  #: first-draw sizes at the observed profile
    stages: list[dict] = field(default_factory=list)  #: a cascade's labellers, each with its threshold and kept
    reference_rule: dict = field(default_factory=dict)  #: votes, cap, until, posterior, text (recorded by routing)
    #: the HITs the sample waits on (:func:`reference_state`): batch, hit (its position), queries, qids, reason,
    #: needed (annotators the team lacks for it)
    waiting: list[dict] = field(default_factory=list)

    @property
    def ready(self) -> bool:
        """The blind sample is in (no sample query may still change its label): only then can it be routed."""
        return not self.awaiting_votes

    @property
    def saving(self) -> Decimal:
        """Against labelling on the crowd every query that ends up labelled (over-budget ones end unlabelled):
        the routed queries and the sample, its escalations included."""
        return self.cost_all - self.cost - self.calibration_cost - self.escalation_spent

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
        data["ready"] = self.ready
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


def _choose(
    sample: CalibrationSample, target: float, risk: float | None, state: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The threshold by the guarantee (``risk``) or by the point estimate (``risk`` None); ``state``: the
    sample's :func:`reference_state`, when the caller has it."""
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
    state = state or reference_state(sample)
    result = certify_threshold(
        confidence,
        correct,
        population,
        target=target,
        risk=risk,
        planned=sample.planned or len(drawn),
        pending=len(state["pending"]),
        extendable=sample.extendable,
    )
    if state["escalating"]:
        result = replace(result, more_reason=_pending_reason(state))
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
    reference = {
        "undecided": len(sample.undecided),
        "awaiting_votes": len(state["pending"]),
        "escalation_spent": state["spent"],
        "escalation_next": state["next"],
        "escalation_limit": state["limit"],
    }
    return reference | {
        "threshold": result.threshold,
        "estimated_accuracy": estimate,
        "accuracy_ci": list(ci) if ci else None,
        "sample_accepted": accepted,
        "certified": result.threshold is not None,
        "more_needed": result.more_needed if result.threshold is None else None,
        "more_reason": result.more_reason if result.threshold is None else "",
        "failed_threshold": (
            result.first_failure["threshold"] if result.first_failure and not state["pending"] else None
        ),
        "candidates": result.candidates,
        "observed": (confidence, correct, population),
    }


def reference_state(sample: CalibrationSample) -> dict[str, Any]:
    """Where the sample's reference labels stand: ``pending`` (qids whose label may still change: no
    decisive label and fewer votes than a majority needs, or in a HIT that still gets votes: open
    places, or an undecided query the next sync escalates), ``escalating`` (undecided ones the next
    sync gives one more assignment), ``next`` (that round's cost), ``spent`` (the sample's escalations
    so far), ``limit`` (what they may still add) and ``waits`` (each HIT the
    sample waits on, and why). An undecided query that can get no more votes (its HIT at the cap, the
    limit spent, or a team batch's HIT every member did) keeps no label: an error for any machine."""
    from django.db.models import Count, Q

    from annotation.crowd.selectors import place_takers
    from annotation.models import FREES_PLACE, Assignment, Hit
    from annotation.quality.services.budget import affordable, budget_left, extra_assignment_price, extra_spent

    drawn, undecided = set(sample.drawn), set(sample.undecided)
    pending = {q for q in drawn if q not in sample.crowd and q not in undecided}
    escalating: set[str] = set()
    waits: list[dict[str, Any]] = []
    on_hits: set[str] = set()
    spent = next_round = limit = Decimal("0")
    done = Q(assignments__status__in=[Assignment.Status.SUBMITTED, Assignment.Status.APPROVED])
    for link in sample.chain or [sample.sample_batch]:
        spent += extra_spent(link)
        left = budget_left(link)
        limit += left if left is not None and link.escalate_until else Decimal("0")
        hits = list(
            Hit.objects.filter(batch=link)
            .exclude(status=Hit.Status.EXPIRED)
            .annotate(
                answered=Count("assignments", filter=done),
                held=Count("assignments", filter=~Q(assignments__status__in=FREES_PLACE)),
            )
            .prefetch_related("hit_queries__batch_query")
        )
        takers = place_takers(link, [hit.pk for hit in hits]) if hits else None
        fresh = place_takers(link, [hit.pk for hit in hits], retakes=False) if hits else None  # no retakes
        price = extra_assignment_price(link) if link.escalate_until else Decimal("0")
        for hit in hits:
            qids = {hq.batch_query.qid for hq in hit.hit_queries.all()} & drawn
            on_hits |= qids
            free = max(0, hit.max_assignments - hit.held)
            can_take = None if takers is None else takers[hit.pk]
            if hit.status == Hit.Status.PENDING:
                if qids & pending:
                    waits.append(_wait(link, hit, qids & pending, "not published yet: publish the sample"))
            elif hit.answered < hit.max_assignments:
                pending |= qids
                retake = 0 if fresh is None else max(0, min(free, can_take) - fresh[hit.pk])
                waits.append(_open_wait(link, hit, qids, free, hit.held - hit.answered, can_take, retake))
            elif (
                qids & undecided
                and link.escalate_until
                and hit.max_assignments < link.escalation_cap
                and affordable(link, 1) > 0
                and (can_take is None or can_take > 0)  # a team escalates only where a member can answer
            ):
                escalating |= qids & undecided
                pending |= qids
                next_round += price
                waits.append(
                    _wait(
                        link,
                        hit,
                        qids,
                        f"{len(qids & undecided)} without a decisive label: the HIT gets one more assignment at the "
                        f"next sync of {link.name} (${price:.2f})",
                    )
                )
    lost = sorted(pending - on_hits)
    if lost:
        waits.append(
            {
                "batch": (sample.chain or [sample.sample_batch])[-1].name,
                "hit": None,
                "queries": len(lost),
                "qids": lost,
                "reason": "on no live HIT (the sample is not published, or its HIT expired): publish or extend it",
                "needed": 0,
            }
        )
    return {
        "pending": pending,
        "escalating": escalating,
        "next": next_round,
        "spent": spent,
        "limit": limit,
        "waits": waits,
    }


def _wait(link: Batch, hit, qids: set[str], reason: str, needed: int = 0) -> dict[str, Any]:
    return {
        "batch": link.name,
        "hit": hit.position,
        "queries": len(qids),
        "qids": sorted(qids),
        "reason": reason,
        "needed": needed,
    }


def _open_wait(
    link: Batch, hit, qids: set[str], free: int, out: int, can_take: int | None, retake: int = 0
) -> dict[str, Any]:
    """A HIT of the sample that still gets votes: its places handed out, open, or that nobody can take."""
    parts = []
    if out > 0:
        parts.append(f"{out} handed out, awaiting the answers")
    stuck = 0 if can_take is None else max(0, free - can_take)
    open_ = free - stuck
    if open_ > 0:
        who = f"{can_take} member(s) of the team can take them" if can_take is not None else f"on {link.provider}"
        parts.append(f"{open_} place(s) open, {who}")
        if retake:
            parts.append(
                f"{retake} of them only by the member(s) whose work on it failed its gold check, taking it again "
                "(no other member can)"
            )
    if stuck:
        parts.append(
            f"{stuck} place(s) NO member of the team can take (every active member did this HIT: a place freed by a "
            f"failed gold check or a returned HIT, or added by escalation): add {stuck} annotator(s) to the team of "
            f"{link.name}"
        )
    if not parts:  # answers submitted, not yet synced
        parts.append("answers in, awaiting the next sync")
    return _wait(link, hit, qids, "; ".join(parts), needed=stuck)


def sample_waits_text(plan_or_state: Any) -> list[str]:
    """The sample's wait in sentences: how many sample queries, on which HITs, and why (the plan's
    summary, the refusal of :func:`route_batch`)."""
    waits = plan_or_state["waits"] if isinstance(plan_or_state, dict) else plan_or_state.waiting
    awaiting = len(plan_or_state["pending"]) if isinstance(plan_or_state, dict) else plan_or_state.awaiting_votes
    if not awaiting:
        return []
    hits = [w for w in waits if w["hit"] is not None]
    lines = [
        f"Routing publishes nothing while the blind sample waits: {awaiting} sample "
        f"{'query' if awaiting == 1 else 'queries'} on {len(hits)} HIT(s) may still change their crowd label."
    ]
    for wait in waits[:_WAITS_SHOWN]:
        where = f"HIT {wait['hit']} of {wait['batch']}" if wait["hit"] is not None else wait["batch"]
        lines.append(f"  {where} ({wait['queries']} sample queries: {_some(wait['qids'], 3)}): {wait['reason']}.")
    if len(waits) > _WAITS_SHOWN:
        lines.append(f"  ... and {len(waits) - _WAITS_SHOWN} more HIT(s).")
    needed = max((w["needed"] for w in waits), default=0)
    if needed:
        lines.append(
            f"The team cannot finish the sample: {needed} more annotator(s) who have not done those HITs are needed "
            "(add them to the batch's team)."
        )
    return lines


#: HITs named one by one in the wait's sentences (the API lists them all).
_WAITS_SHOWN = 10


def _pending_reason(state: dict[str, Any]) -> str:
    waiting = len(state["pending"])
    text = f"{waiting} sample {'query' if waiting == 1 else 'queries'} still awaiting votes"
    if state["escalating"]:
        text += (
            f" ({len(state['escalating'])} without a decisive crowd label get more votes at the next sync of the "
            f"sample, ${state['next']:.2f})"
        )
    return text + ": nothing is certified until the sample's reference labels are final"


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
    no_guarantee: bool = False,
    labeller: str | None = None,
    sample_batch: Batch | None = None,
    cascade: list[str] | None = None,
) -> RoutingPlan:
    """Choose the threshold and split the batch; see the module docstring. Writes nothing.

    The request is checked first (:func:`check_routing`). ``cascade``: labellers in order (``name``
    or ``name:floor``, :func:`parse_cascade`), each keeping what it certifies at the target
    (:mod:`annotation.machine.cascade_statistics`); the guarantee only (``risk`` set)."""
    from annotation.machine.routing_statistics import split_by_threshold

    request = check_routing(
        target_accuracy=target_accuracy, risk=risk, no_guarantee=no_guarantee, budget=budget, cascade=cascade
    )
    risk, budget, stages = request.risk, request.budget, request.stages
    sample = read_sample(batch, labeller, sample_batch=sample_batch)
    if not sample.qids:
        waits = " ".join(line.strip() for line in sample_waits_text(reference_state(sample)))
        raise StateError(f"the calibration sample {sample.sample_batch.name!r} has no crowd label yet. {waits}".strip())
    state = reference_state(sample)  # what the sample still waits for: routing publishes nothing until it is in
    chosen = _choose_cascade(batch, sample, target_accuracy, risk, stages, state) if stages else None
    chosen = chosen or _choose(sample, target_accuracy, risk, state)
    advice = {}
    if risk is not None and not chosen["certified"] and not chosen.get("awaiting_votes") and "observed" in chosen:
        advice = _advice(batch, sample, target_accuracy, risk, *chosen["observed"])
    split = split_by_threshold({qid: m.confidence for qid, m in sample.rest.items()}, chosen["threshold"])
    if stages:  # (a cascade on a sample still awaiting votes keeps nothing yet: the plan says why)
        kept = set(chosen.get("accepted", []))
        rest = {qid: m.confidence for qid, m in sample.rest.items() if qid not in kept}
        split = replace(split_by_threshold(rest, None), accepted=sorted(kept))
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
        reference=sample.reference.describe(),
        undecided=chosen.get("undecided", len(sample.undecided)),
        awaiting_votes=len(state["pending"]),  # whatever the rule: nothing is routed while the sample waits
        waiting=state["waits"],
        escalation_spent=chosen.get("escalation_spent", Decimal("0")),
        escalation_next=chosen.get("escalation_next", Decimal("0")),
        escalation_limit=chosen.get("escalation_limit", Decimal("0")),
        extendable=sample.extendable,
        reference_rule=_rule_record(sample.reference),
        stages=chosen.get("stages", []),
        **advice,
    )
    plan.cost_all = _cost(batch, plan.labelled)
    return plan


def _rule_record(rule) -> dict[str, Any]:
    return {
        "votes": rule.votes,
        "cap": rule.cap,
        "until": rule.until,
        "posterior": rule.posterior,
        "text": rule.describe(),
    }


def parse_cascade(names: list[str]) -> list[tuple[str, float | None]]:
    """``["rules:0.9", "trained", "openai"]`` -> ``[("rules", 0.9), ("trained", None), ("openai", None)]``:
    each labeller with its floor (the lowest confidence it may keep; below it, queries go on unread).
    A :class:`~core.errors.FieldError` of ``cascade`` naming the bad item."""
    stages = []
    for item in names:
        name, _, floor = str(item).strip().partition(":")
        if not name:
            raise FieldError("cascade", f"{item!r} names no labeller")
        try:  # a plain ASCII decimal (core.numbers): float() took "٠.٥" and "nan"
            value = parse_decimal(floor, "cascade", minimum=0, maximum=1) if floor else None
        except NumberError:
            raise FieldError(
                "cascade", f"the floor of {item!r} must be a confidence in [0, 1], e.g. rules:0.8"
            ) from None
        stages.append((name, value))
    if len({name for name, _ in stages}) != len(stages):
        raise FieldError("cascade", "a labeller appears twice in the cascade")
    return stages


def _choose_cascade(
    batch: Batch,
    sample: CalibrationSample,
    target: float,
    risk: float,
    stages: list[tuple[str, float | None]],
    state: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The cascade certified on the sample's first draw (:func:`annotation.machine.cascade_statistics.certify_cascade`)."""
    import numpy as np

    from annotation.machine.cascade_statistics import certify_cascade
    from annotation.machine.selectors import identity_for, machine_labels

    plain = _choose(sample, target, risk, state)  # the sample's checks (design, population, pending) and its state
    if plain.get("awaiting_votes") or sample.design != RANDOM_DESIGN:
        return None
    qids = list(sample.population)
    index = {q: i for i, q in enumerate(qids)}
    identities = [identity_for(batch, name) for name, _ in stages]
    labels = []
    confidence = np.full((len(stages), len(qids)), np.nan)
    for i, identity in enumerate(identities):
        mine = {q: m for q, m in machine_labels(batch, identity).items() if not m.in_training and q in index}
        labels.append({q: m.label for q, m in mine.items()})
        for q, m in mine.items():
            confidence[i, index[q]] = m.confidence
    drawn = [index[q] for q in sample.drawn]
    correct = np.zeros_like(confidence, dtype=bool)
    for i in range(len(stages)):
        for q in sample.drawn:
            correct[i, index[q]] = sample.crowd.get(q) is not None and labels[i].get(q) == sample.crowd[q]
    result = certify_cascade(
        confidence,
        correct,
        drawn,
        target=target,
        risk=risk,
        planned=min(sample.planned or len(drawn), len(drawn)),
        floors=[floor for _, floor in stages],
    )
    earlier = _earlier_guarantee(sample)
    kept_any = any(len(stage.kept) for stage in result.stages)
    if kept_any and earlier is not None and earlier != (target, risk):
        return plain | {
            "threshold": None,
            "certified": False,
            "accepted": [],
            "stages": [],
            "more_reason": (
                f"the sample's labels were used already for a guaranteed routing at target {earlier[0]:g} and risk "
                f"{earlier[1]:g}: another target or risk on the same sample has no guarantee (target changed after "
                "seeing the labels)"
            ),
        }
    sampled = set(sample.drawn)
    described, accepted = [], []
    kept_items = right_items = 0
    for (_, floor), identity, stage in zip(stages, identities, result.stages, strict=True):
        kept = [qids[j] for j in stage.kept]
        outside = sorted(q for q in kept if q not in sampled)
        accepted += outside
        items = [q for q in kept if q in sampled]
        kept_items += len(items)
        right_items += sum(1 for q in items if labels[stage.index].get(q) == sample.crowd.get(q))
        described.append(
            identity.as_dict()
            | {
                "floor": floor,
                "risk": stage.risk,
                "population": stage.population,
                "sample_items": stage.sample_items,
                "threshold": stage.threshold,
                "kept": len(outside),
                "looked_at": len(stage.looked_at),
                "passed_on": stage.passed_on,
                "machine_cost": str(_machine_cost(batch, identity, [qids[j] for j in stage.decided])),
                "accepted": outside,
            }
        )
    return plain | {
        "threshold": None,
        "estimated_accuracy": right_items / kept_items if kept_items else None,
        "accuracy_ci": None,
        "sample_accepted": kept_items,
        "certified": kept_any,
        "more_needed": None,
        "more_reason": "" if kept_any else "no labeller of the cascade could certify any threshold",
        "failed_threshold": None,
        "accepted": sorted(accepted),
        "stages": described,
    }


def _machine_cost(batch: Batch, identity, qids: list[str]) -> Decimal:
    """What ``identity``'s answers on ``qids`` cost at the configured prices (its cached tokens; a
    labeller without answers to pay for, rules or trained, costs nothing): what a cascade's stage
    must pay for, the queries earlier stages passed on."""
    from django.conf import settings

    from annotation.machine.services.prelabels import _sha
    from annotation.models import PreLabelAnswer

    texts = dict(batch.queries.filter(qid__in=qids).values_list("qid", "text"))
    hashes = [_sha(text) for text in texts.values()]
    rows = PreLabelAnswer.objects.filter(
        model=identity.model, prompt_version=identity.prompt_version, text_sha256__in=hashes
    ).values_list("prompt_tokens", "completion_tokens")
    per_token = Decimal(settings.PRELABEL_PROMPT_PRICE) / Decimal(1_000_000)
    per_completion = Decimal(settings.PRELABEL_COMPLETION_PRICE) / Decimal(1_000_000)
    total = sum((prompt * per_token + completion * per_completion for prompt, completion in rows), Decimal("0"))
    return total.quantize(Decimal("0.0001"))


def size_sample(
    batch: Batch, target: float, *, risk: float = DEFAULT_RISK, labeller: str | None = None, redraws: int = 200
) -> list[dict[str, Any]]:
    """Before drawing: for each first-draw size (drawn whole), the share of draws that certify ``target``
    and the machine labels kept, at an *assumed* accuracy profile: the machine's confidence taken as
    its agreement with the reference (a calibrated machine, a reliable reference; the plan after the
    sample uses the observed profile instead), with each size's crowd cost (escalations not included)."""
    from annotation.machine.routing_forecast import size_first_draw
    from annotation.machine.selectors import identity_for, machine_labels

    check_target_accuracy(target)
    check_risk(risk)
    identity = identity_for(batch, labeller)
    population = [m.confidence for m in machine_labels(batch, identity).values() if not m.in_training]
    if not population:
        raise StateError(f"no query of batch {batch.name!r} has a machine label from {identity}")
    rows = size_first_draw(population, population, target=target, risk=risk, redraws=redraws)
    return [
        {
            "sample": row.sample,
            "certified_rate": row.certified_rate,
            "kept_share": row.kept_share,
            "kept": round(row.kept_share * len(population)),
            "cost": str(_cost(batch, row.sample)),
        }
        for row in rows
    ]


#: Escalation caps the plan tries when a target is out of reach with the sample's crowd.
CAPS_TRIED = (5, 7, 9, 11)


def _advice(batch: Batch, sample: CalibrationSample, target: float, risk: float, confidence, correct, population):
    """When nothing is certified: the ceiling as routing counts it (from the crowd model fitted to the
    sample's votes) and what would bring an out-of-reach target in reach; the first draw a sample
    drawn whole would need at the observed accuracy profile, with its cost."""
    from dataclasses import replace as with_cap

    from annotation.machine.crowd_simulation import ceiling_by_label, crowd_from_figures
    from annotation.machine.routing_forecast import observed_profile, profile_at, size_first_draw
    from annotation.machine.selectors import fitted_crowd

    advice: dict[str, Any] = {}
    try:
        model = crowd_from_figures(fitted_crowd(batch, sample))
    except (ValueError, StateError):
        model = None
    rule = sample.reference
    if model is not None:
        per_hit = batch.queries_per_hit
        shares = model.priors()
        by_label = ceiling_by_label(model, rule, queries_per_hit=per_hit)
        advice["ceiling"] = float(shares @ by_label)
        best = int(by_label.argmax())
        advice["ceiling_best"] = {"label": model.labels[best], "ceiling": float(by_label[best])}
        if by_label[best] < target:  # no kept set, however chosen, can reach it
            for cap in sorted({c for c in CAPS_TRIED if c > rule.cap}):
                if batch.provider == "mturk" and rule.votes < 10 <= cap:
                    break
                more = ceiling_by_label(model, with_cap(rule, cap=cap), queries_per_hit=per_hit)
                advice["in_reach"] = [*advice.get("in_reach", []), {"cap": cap, "ceiling": float(more.max())}]
                if more.max() >= target:
                    break
    levels, agreement = observed_profile(confidence, correct)
    rows = size_first_draw(population, profile_at(levels, agreement, population), target=target, risk=risk, redraws=100)
    advice["sizing"] = [
        {
            "sample": row.sample,
            "certified_rate": row.certified_rate,
            "kept_share": row.kept_share,
            "kept": round(row.kept_share * len(population)),
            "cost": str(_cost(batch, row.sample)),
        }
        for row in rows
    ]
    return advice


def plan_summary(plan: RoutingPlan) -> list[str]:
    """The plan in sentences, the same on the command line and the page: where every query goes. While
    the blind sample waits, first what it waits for (routing publishes nothing until it is in)."""
    lines = sample_waits_text(plan)
    for stage in plan.stages:
        floor = "" if stage["floor"] is None else f", floor {stage['floor']:g}"
        at = "keeps nothing" if stage["threshold"] is None else f"threshold {stage['threshold']:.3f}"
        lines.append(
            f"  {stage['labeller']} ({stage['model']}{floor}, δ = {stage['risk']:.3g}): decided on {stage['population']}"
            f" queries ({stage['sample_items']} sample), {at}, keeps {stage['kept']} outside the sample; "
            f"{stage['passed_on']} passed on; its labels cost ${stage['machine_cost']}."
        )
    if plan.threshold is None and not (plan.stages and plan.certified):
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
            lines += _advice_lines(plan)
    elif plan.stages:
        lines.append(
            f"Cascade of {len(plan.stages)} labellers, each certified at target {plan.target_accuracy:.3g} with risk "
            f"δ/{len(plan.stages)}: {guarantee_text(plan.risk, plan.target_accuracy, cascade=True)}."
        )
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
    escalated = f" and ${plan.escalation_spent} its escalations" if plan.escalation_spent else ""
    lines.append(
        f"Cost: ${plan.cost} for the routed queries (+ ${plan.calibration_cost} the sample cost{escalated}); the "
        f"{plan.labelled} queries that end up labelled, all on the crowd: ${plan.cost_all}; saving ${plan.saving}."
    )
    if plan.reference:
        undecided = (
            f" {plan.undecided} sample {'query has' if plan.undecided == 1 else 'queries have'} no decisive label"
            if plan.undecided
            else ""
        )
        if plan.awaiting_votes:
            undecided += f"{',' if undecided else ''} {plan.awaiting_votes} still awaiting votes"
        undecided += "." if undecided else ""
        more = f" Escalation may add at most ${plan.escalation_limit} more." if plan.escalation_limit else ""
        lines.append(f"Right means agreeing with {plan.reference}.{undecided}{more}")
    return lines


def _advice_lines(plan: RoutingPlan) -> list[str]:
    """When nothing is certified: whether the target is in reach with this crowd, and how large a
    first draw would certify it at the observed accuracy profile."""
    lines = []
    best = plan.ceiling_best or {}
    if best and best["ceiling"] < plan.target_accuracy:
        reach = next((row for row in plan.in_reach if row["ceiling"] >= plan.target_accuracy), None)
        remedy = (
            f"escalating the undecided queries up to {reach['cap']} assignments would raise it to "
            f"{reach['ceiling']:.3f}"
            if reach
            else "no escalation cap tried brings it there: a better crowd (qualifications, gold questions)"
        )
        lines.append(
            f"Target {plan.target_accuracy:.3g} is OUT OF REACH with this crowd: the best agreement with its reference "
            f"label any machine can expect, counted as routing counts it (a query without a decisive label is an "
            f"error), is {plan.ceiling:.3f} on a set like the batch and {best['ceiling']:.3f} even on its "
            f"{best['label']} queries alone. To bring it in reach: {remedy}, or a target of at most "
            f"{best['ceiling']:.3f}."
        )
    elif plan.ceiling is not None and plan.ceiling < plan.target_accuracy:
        lines.append(
            f"Target {plan.target_accuracy:.3g} is out of reach on a set like the batch with this crowd (the best "
            f"agreement any machine can expect with its reference label, as routing counts it: {plan.ceiling:.3f}); "
            f"only a kept set rich in {best['label']} queries (up to {best['ceiling']:.3f}) can reach it."
        )
    elif plan.ceiling is not None:
        lines.append(
            f"In reach with this crowd: the best agreement any machine can expect with its reference label is "
            f"{plan.ceiling:.3f} (as routing counts it)."
        )
    best = max(plan.sizing, key=lambda row: (row["kept_share"], -row["sample"]), default=None)
    if best is not None and best["kept_share"] > 0:
        lines.append(
            f"At the machine's accuracy profile observed on the sample, a first draw of {best['sample']} queries "
            f"(${best['cost']}) drawn whole would certify in {best['certified_rate']:.0%} of draws and keep about "
            f"{best['kept']} machine labels ({best['kept_share']:.0%} of the batch). A new sample is a new look: "
            "state the two risks added."
        )
    elif plan.sizing:
        lines.append(
            "At the machine's accuracy profile observed on the sample, no first draw of up to "
            f"{plan.sizing[-1]['sample']} queries certifies the target: a larger sample cannot help this machine."
        )
    if not plan.extendable and plan.risk is not None:
        lines.append(
            "Extending this sample cannot help: it was drawn whole, all of the risk went to the exact test of its one "
            "draw."
        )
    return lines


def guarantee_text(risk: float, target: float, *, cascade: bool = False) -> str:
    """The guarantee in one clause, as the command, the page and the docs state it ("right": the
    reference label, which the plan's and the page's next sentence states)."""
    kept = (
        "the labels each labeller keeps (and so all the machines keep together)"
        if cascade
        else "the machine's labels of the queries at or above the threshold"
    )
    return (
        f"with probability at least {1 - risk:.3g} over the draw of the blind sample, {kept} agree with the "
        f"reference label (the sample's final crowd label) on at least {target:.3g} of them"
    )


def _some(qids: list[str], shown: int = 5) -> str:
    return ", ".join(qids[:shown]) + (f" and {len(qids) - shown} more" if len(qids) > shown else "")


def _check_routable(batch: Batch) -> None:
    if batch.status != Batch.Status.DRAFT:
        raise StateError(f"batch {batch.name!r} is {batch.status}; routing is for a machine-labelled draft")
    refusal = _live_routing(batch)
    if refusal:
        raise StateError(refusal)


def _live_routing(batch: Batch) -> str | None:
    """Why routing ``batch`` again is a duplicate (:func:`core.services.once.claim`): a routed batch in force."""
    live = (
        batch.routings.filter(routed_batch__isnull=False)
        .exclude(routed_batch__status=Batch.Status.CANCELLED)
        .select_related("routed_batch")
        .first()
    )
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
    """The one check that routing never spends blind: while a sample query may still change its crowd label, nothing is
    routed or published, whatever the rule (no flag overrides it); the refusal says what the sample waits for."""
    if awaiting:
        lines = sample_waits_text({"waits": waits, "pending": range(awaiting)})
        raise StateError(" ".join(line.strip() for line in lines))


def route_batch(batch: Batch, target_accuracy: float, **options) -> Routing:
    """:func:`_route_batch`, reading the batch's answers as a use: a correction after it is refused
    (``annotation.crowd.services.locking.reading_answers``, issue 53)."""
    with reading_answers(batch, "A routing"):
        return _route_batch(batch, target_accuracy, **options)


def _route_batch(
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

    ``plan`` is the one shown and confirmed (the command's); without it the plan is made here.
    The batch's row is locked while it is checked and routed (:mod:`core.services.once`), so two
    requests at once cannot both route it (and pay the crowd twice). A routing that sent nothing to the crowd is
    superseded by the new one (the latest routing is the one in force).

    The plan is made before the lock, so under it the sample the plan was made on must still
    be the sample in force (an extension or a cancellation since, e.g. in another tab, makes
    it a plan on a sample nobody uses any more): else a ``StateError``, nothing recorded.
    """
    if plan is None:  # bad input is refused as such, before the batch's state
        check_routing(
            target_accuracy=target_accuracy, risk=risk, no_guarantee=no_guarantee, budget=budget, cascade=cascade
        )
    _check_routable(batch)
    plan = plan or plan_routing(
        batch,
        target_accuracy,
        budget=budget,
        risk=risk,
        no_guarantee=no_guarantee,
        labeller=labeller,
        cascade=cascade,
    )
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
            if plan.reference_rule:  # the crowd that labels the routed queries is the one the machine was measured on
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
            reference=plan.reference_rule,
            stages=plan.stages,
        )


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
    """Route the batch (:func:`route_batch`, its keyword arguments in ``routing``) and publish the
    routed queries: the one action behind the routing page's "Route", ``POST
    /api/annotation/batches/<name>/routing/`` and ``manage.py route``.

    By default publishing is a background job started in the routing's transaction, so a job
    that cannot start leaves no routing behind (the page and the API). ``now``: published here,
    after the routing is committed, with a progress ``bar`` (the command, which reports the
    HITs published); a failure then leaves the routed batch a draft, to publish again.
    ``publish=False``: the routed batch is left a draft."""
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
    crowd: str | None = None,
    escalation_cap: int | None = None,
    until: str = "majority",
    extendable: bool = False,
    cascade: list[str] | None = None,
) -> dict[str, Any]:
    """Forecast routing on ``batch``'s own machine labels before paying a crowd: redraw the blind
    sample ``redraws`` times as ``calibrate`` would (redraw r is ``calibrate --seed r``'s draw), certify
    on each and compare with ``labels_file``'s labels, read as the true labels. Reads only.

    ``crowd``: who labels the sample and the routed queries. ``"none"``: nobody errs, the file's labels
    are the crowd's (the vectorised :func:`annotation.machine.routing_statistics.audit`); ``"fitted"``:
    the crowd model fitted to the batch's calibration sample; a path: a crowd model in JSON
    (:func:`annotation.machine.crowd_simulation.crowd_from_dict`). Default: fitted when the batch has
    a sample with votes, else none. With a crowd, each redraw simulates it labelling the sample (with
    the reference rule: the sample's own, else ``escalation_cap`` and ``until``), the rest and a
    crowd-only labelling (:func:`annotation.machine.routing_forecast.simulate_path`): the forecast
    the real path is measured against. ``extendable``: the sample's design (default: drawn whole, as
    ``calibrate`` draws it). ``cascade``: labellers in sequence as ``route --cascade``.

    Shares are fractions of the batch's queries (gold left out). The file must label every
    machine-labelled query the routing is made on (the trained-on ones left out).
    """

    import numpy as np

    from annotation.crowd.services.batches import read_labelled
    from annotation.labels import LABELS
    from annotation.machine.calibration_statistics import random_sample
    from annotation.machine.routing_forecast import simulate_path
    from annotation.machine.routing_statistics import audit
    from annotation.machine.selectors import identity_for, machine_labels
    from core.errors import InputError

    check_target_accuracy(target_accuracy)
    check_risk(risk)
    if sample < 1:
        raise FieldError("sample", f"the sample needs at least one query, got {sample}")
    if redraws < 1:
        raise FieldError("redraws", f"at least one redraw is needed, got {redraws}")
    stages = parse_cascade(cascade) if cascade else []
    identity = identity_for(batch, stages[0][0] if stages else labeller)
    population = {q: m for q, m in machine_labels(batch, identity).items() if not m.in_training}
    truth = {q.qid: q.label for q in read_labelled(labels_file)}  # a file or queries:NAME
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
    samples = [[index[q] for q in random_sample(qids, sample, seed=r)] for r in range(redraws)]
    batch_size = batch.queries.filter(is_gold=False).count()
    model, crowd_used, rule = _audit_crowd(batch, crowd, escalation_cap, until)
    base = identity.as_dict() | {
        "batch": batch.name,
        "labels": str(labels_file),
        "sample": min(sample, len(qids)),
        "population": len(qids),
        "true_accuracy": sum(population[q].label == truth[q] for q in qids) / len(qids),
        "crowd": crowd_used,
        "reference": rule.describe(),
        "extendable": extendable,
        "cascade": [name for name, _ in stages],
    }
    if model is None and not stages:
        confidence = [population[q].confidence for q in qids]
        correct = [population[q].label == truth[q] for q in qids]
        result = audit(
            confidence,
            correct,
            samples,
            target=target_accuracy,
            risk=risk,
            batch_size=batch_size,
            planned=sample,
            progress=progress,
            extendable=extendable,
        )
        return base | result.as_dict()
    names = [name for name, _ in stages] or [identity.labeller]
    labels = np.full((len(names), len(qids)), -1)
    confidence = np.full((len(names), len(qids)), np.nan)
    for i, name in enumerate(names):
        mine = machine_labels(batch, identity if i == 0 else identity_for(batch, name))
        for q, m in mine.items():
            if q in index and not m.in_training:
                labels[i, index[q]] = LABELS.index(m.label)
                confidence[i, index[q]] = m.confidence
    forecast = simulate_path(
        np.array([LABELS.index(truth[q]) for q in qids]),
        labels,
        confidence,
        crowd=model,
        rule=rule,
        sample_of=lambda r: samples[r],
        redraws=redraws,
        target=target_accuracy,
        risk=risk,
        extendable=extendable and not stages,
        queries_per_hit=batch.queries_per_hit,
        progress=progress,
        floors=[floor for _, floor in stages] or None,
    )
    scale = len(qids) / batch_size if batch_size else 1.0
    figures = forecast.as_dict()
    for key in ("kept_share", "kept_share_se", "kept_with_sample"):
        figures[key] *= scale
    figures["per_stage_kept"] = [share * scale for share in figures["per_stage_kept"]]
    figures["machine_labelled_share"] = figures["kept_share"]
    figures["kept_share"] = figures.pop("kept_with_sample")
    return base | figures


def _audit_crowd(batch: Batch, crowd: str | None, escalation_cap: int | None, until: str):
    """(crowd model or None, what it is in words, the reference rule) for :func:`audit_routing`."""
    import json
    from pathlib import Path

    from annotation.labels import LABELS
    from annotation.machine.crowd_simulation import ReferenceRule, crowd_from_dict, crowd_from_figures
    from annotation.machine.selectors import fitted_crowd
    from annotation.machine.services.calibration import reference_record
    from core.errors import InputError

    sample = None
    if calibration_batch(batch) is not None:
        sample = read_sample(batch)
    if sample is not None and sample.reference is not None and escalation_cap is None and until == "majority":
        rule = sample.reference
    else:
        record = reference_record(batch, escalation_cap, until)
        rule = ReferenceRule(votes=record["votes"], cap=record["cap"], posterior=record["posterior"])
    if crowd is None:
        crowd = "fitted" if sample is not None and sample.votes is not None and len(sample.votes) else "none"
    if crowd == "none":
        return None, "none: the labels file is the crowd's (no crowd error, no escalation)", rule
    if crowd == "fitted":
        if sample is None:
            raise StateError(
                f"batch {batch.name!r} has no calibration sample to fit a crowd model to; give --crowd FILE"
            )
        return crowd_from_figures(fitted_crowd(batch, sample)), "fitted to the calibration sample's votes", rule
    path = Path(crowd)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        model = crowd_from_dict(data if isinstance(data, dict) else {}, tuple(LABELS))
    except OSError as exc:
        raise InputError(str(path), None, f"cannot read the crowd model ({exc.strerror})") from None
    except ValueError as exc:
        raise InputError(str(path), None, f"not a crowd model: {exc}") from None
    return model, f"the crowd model in {path.name}", rule
