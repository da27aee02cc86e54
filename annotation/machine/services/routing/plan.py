"""Routing: accept the machine's labels where it is sure enough, send the rest to the crowd.

From the blind calibration sample (:mod:`.calibration`), :func:`plan_routing` chooses the
threshold by default with a finite-sample guarantee (:func:`genderbias.machine.certification.certify_threshold`):
with probability at least 1 − ``risk`` over the draw of the sample, the queries at or above
it are labelled by the machine at least ``target_accuracy`` as the crowd majority would
label them. ``risk=None`` uses the old point-estimate rule instead
(:func:`genderbias.machine.routing_statistics.choose_threshold`), which every place that shows it labels "no
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

from annotation.crowd.providers.base import provider_class
from annotation.crowd.services.batches import estimate_cost
from annotation.crowd.team_text import team_needs
from annotation.machine.routing_text import sample_waits_text
from annotation.machine.selectors import (
    RANDOM_DESIGN,
    CalibrationSample,
    read_sample,
    same_population,
)
from annotation.machine.services.calibration import (
    settings_of,
)
from annotation.models import Batch, Routing
from core.errors import FieldError, StateError
from genderbias.numbers import NumberError, parse_decimal

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
    #: the echo check of the sample (``annotation.machine.selectors.SampleEcho.as_dict``): who is held out and why
    echo: dict = field(default_factory=dict)

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
    from genderbias.machine.certification import certify_threshold
    from genderbias.machine.routing_statistics import accuracy_at, choose_threshold

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

    from annotation.crowd.selectors import place_takers, team_size
    from annotation.models import FREES_PLACE, Assignment, Hit
    from annotation.quality.services.budget import affordable, budget_left, extra_assignment_price, extra_spent

    drawn, undecided = set(sample.drawn), set(sample.undecided)
    # A query left without a label by the echo check's hold-out waits for nothing: it is an error.
    pending = {q for q in drawn if q not in sample.crowd and q not in undecided} - set(sample.held_undecided)
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
        members = team_size(link) if takers is not None else None
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
                waits.append(_open_wait(link, hit, qids, free, hit.held - hit.answered, can_take, retake, members or 0))
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


def _wait(
    link: Batch, hit, qids: set[str], reason: str, needed: int = 0, escalated: int = 0, team: int = 0
) -> dict[str, Any]:
    """One HIT the sample waits on; ``needed``: its places no member of the team can take (``escalated`` of
    them added by escalation; ``team``: the members who may take places), the annotators it lacks."""
    return {
        "batch": link.name,
        "hit": hit.position,
        "queries": len(qids),
        "qids": sorted(qids),
        "reason": reason,
        "needed": needed,
        "escalated": escalated,
        "team": team,
    }


def _open_wait(
    link: Batch,
    hit,
    qids: set[str],
    free: int,
    out: int,
    can_take: int | None,
    retake: int = 0,
    team: int = 0,
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
    # The places escalation added (beyond the batch's assignments) are the last to be filled: those stuck first.
    escalated = min(stuck, max(0, hit.max_assignments - link.assignments_per_query))
    if stuck:
        parts.append(team_needs(stuck, [hit.position], team, stuck, escalated))
    if not parts:  # answers submitted, not yet synced
        parts.append("answers in, awaiting the next sync")
    return _wait(link, hit, qids, "; ".join(parts), needed=stuck, escalated=escalated, team=team)


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
    (:mod:`genderbias.machine.cascade_statistics`); the guarantee only (``risk`` set)."""
    from genderbias.machine.routing_statistics import split_by_threshold

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
        echo=sample.echo.as_dict() if sample.echo is not None else {},
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
        try:  # a plain ASCII decimal (genderbias.numbers): float() took "٠.٥" and "nan"
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
    """The cascade certified on the sample's first draw (:func:`genderbias.machine.cascade_statistics.certify_cascade`)."""
    import numpy as np

    from annotation.machine.selectors import identity_for, machine_labels
    from genderbias.machine.cascade_statistics import certify_cascade

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
    from annotation.machine.selectors import identity_for, machine_labels
    from genderbias.machine.routing_forecast import size_first_draw

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

    from annotation.machine.selectors import fitted_crowd
    from genderbias.crowd.simulation.escalation import ceiling_by_label
    from genderbias.crowd.simulation.workers import crowd_from_figures
    from genderbias.machine.routing_forecast import observed_profile, profile_at, size_first_draw

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
                if provider_class(batch.provider).extension_refusal(rule.votes, cap):
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
