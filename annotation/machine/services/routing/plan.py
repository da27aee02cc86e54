"""The routing plan: the one check of a request (:func:`check_routing`) and :func:`plan_routing`. Writes nothing.

The threshold is chosen on the blind sample with a finite-sample guarantee
(:func:`genderbias.machine.certification.certify_threshold`, stated by
:func:`~annotation.machine.routing_text.guarantee_text`), or by the point estimate (``risk=None``, "no
guarantee" wherever shown). Every query ends somewhere the plan names: gold, the sample, machine-accepted,
to the crowd (as far as ``budget`` pays) or over budget. The rules and why: docs/prelabelling.md, "Routing".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from decimal import Decimal
from typing import Any

from django.conf import settings

from annotation.machine.routing_text import sample_waits_text
from annotation.machine.selectors import (
    RANDOM_DESIGN,
    CalibrationSample,
    identity_for,
    machine_labels,
    read_sample,
    rule_record,
)
from annotation.machine.services.prelabels import _sha
from annotation.machine.services.routing.choice import (
    advice_when_uncertified,
    affordable_queries,
    choose_threshold_on,
    crowd_cost,
    earlier_guarantee,
    reference_state,
    reuse_refusal,
    sizing_rows,
)
from annotation.models import Batch, PreLabelAnswer
from core.errors import FieldError, StateError
from genderbias.numbers import NumberError, parse_decimal

#: The risk δ when none is given.
DEFAULT_RISK = 0.05
GUARANTEE = "guarantee"
ESTIMATE = "point estimate (no guarantee)"


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


#: The plan's query id lists (a preview through the API leaves them out unless ``?qids=1``).
QID_LISTS = ("accepted", "to_humans", "over_budget", "in_training", "no_machine_label")
#: A routing request's fields, named alike by the page's form, the API and the services' keywords.
ROUTING_FIELDS = ("target_accuracy", "risk", "no_guarantee", "budget", "cascade")


def routing_request(data: Mapping[str, Any]) -> dict[str, Any]:
    """A routing request's fields out of a shell's ``cleaned_data`` or validated data, unchecked, as
    :func:`plan_routing` and the acts take them (:func:`check_routing` checks them)."""
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
    """Every rule of a routing request, checked once: the page, the API and ``manage.py route`` only hand
    the values on, so each refuses bad input with the same :class:`~core.errors.FieldError`.
    ``no_guarantee`` (or ``risk=None``) chooses the point estimate; a cascade needs the guarantee."""
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
    #: share right among the sample queries at or above the threshold (weighted for the estimate rule)
    estimated_accuracy: float | None
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
    ceiling_best: dict = field(default_factory=dict)  #: the label the crowd gets most right: label, ceiling
    in_reach: list[dict] = field(default_factory=list)  #: what would bring an out-of-reach target in reach
    sizing: list[dict] = field(default_factory=list)  #: first-draw sizes at the observed profile
    stages: list[dict] = field(default_factory=list)  #: a cascade's labellers, each with its threshold and kept
    reference_rule: dict = field(default_factory=dict)  #: votes, cap, until, posterior, text (recorded by routing)
    #: the HITs the sample waits on (:func:`reference_state`)
    waiting: list[dict] = field(default_factory=list)
    #: the echo check of the sample (``SampleEcho.as_dict``)
    echo: dict = field(default_factory=dict)

    @property
    def ready(self) -> bool:
        """The blind sample is in (no sample query may still change its label): only then can it be routed."""
        return not self.awaiting_votes

    @property
    def saving(self) -> Decimal:
        """Against labelling every query that ends up labelled on the crowd: less the routed queries and the
        sample, its escalations included."""
        return self.cost_all - self.cost - self.calibration_cost - self.escalation_spent

    @property
    def labelled(self) -> int:
        """Queries that end up with a label: the sample, the machine-accepted and the routed ones."""
        return self.sampled + len(self.accepted) + len(self.to_humans)

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        for key in QID_LISTS:
            data[f"{key}_count"] = len(data[key])
        data |= {"saving": self.saving, "labelled": self.labelled, "ready": self.ready}
        data["unlabelled"] = len(self.over_budget)
        return {k: str(v) if isinstance(v, Decimal) else v for k, v in data.items()}


#: The plan's figures taken from the threshold's choice as they are (its accepted and waits are the plan's own).
_CHOSEN = frozenset(RoutingPlan.__dataclass_fields__) - {"accepted", "awaiting_votes", "undecided"}


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
    """Choose the threshold and split the batch (see the module docstring). ``cascade``: labellers in
    order (:func:`parse_cascade`), each keeping what it certifies (:mod:`genderbias.machine.cascade_statistics`)."""
    from genderbias.machine.routing_statistics import split_by_threshold

    request = check_routing(
        target_accuracy=target_accuracy, risk=risk, no_guarantee=no_guarantee, budget=budget, cascade=cascade
    )
    risk, budget, stages = request.risk, request.budget, request.stages
    sample = read_sample(batch, labeller, sample_batch=sample_batch)
    state = reference_state(sample)  # what the sample still waits for: routing publishes nothing until it is in
    if not sample.qids:
        waits = " ".join(line.strip() for line in sample_waits_text(state["waits"], len(state["pending"])))
        raise StateError(f"the calibration sample {sample.sample_batch.name!r} has no crowd label yet. {waits}".strip())
    chosen = _choose_cascade(batch, sample, target_accuracy, risk, stages, state) if stages else None
    chosen = chosen or choose_threshold_on(sample, target_accuracy, risk, state)
    advice = {}
    if risk is not None and not chosen["certified"] and not chosen.get("awaiting_votes") and "observed" in chosen:
        advice = advice_when_uncertified(batch, sample, target_accuracy, risk, *chosen["observed"])
    split = split_by_threshold({qid: m.confidence for qid, m in sample.rest.items()}, chosen["threshold"])
    if stages:  # (a cascade on a sample still awaiting votes keeps nothing yet: the plan says why)
        kept = set(chosen.get("accepted", []))
        rest = {qid: m.confidence for qid, m in sample.rest.items() if qid not in kept}
        split = replace(split_by_threshold(rest, None), accepted=sorted(kept))
    sampled = set(sample.drawn) | set(sample.stratum_of)
    queries = dict(batch.queries.values_list("qid", "is_gold"))
    routable = set(sample.population) | set(sample.in_training)
    no_label = sorted(q for q, is_gold in queries.items() if not is_gold and q not in routable and q not in sampled)
    training = [q for q in sample.in_training if q not in sampled]
    # The machine's label cannot be trusted on these: they go to the crowd first, then the least sure.
    wanted = training + no_label + split.to_humans
    fits = len(wanted) if budget is None else affordable_queries(batch, budget, len(wanted))
    to_humans, over_budget = wanted[:fits], wanted[fits:]
    plan = RoutingPlan(
        batch=batch.name,
        **sample.identity.as_dict(),
        target_accuracy=target_accuracy,
        risk=risk,
        rule=GUARANTEE if risk is not None else ESTIMATE,
        **{key: value for key, value in chosen.items() if key in _CHOSEN},
        queries=len(queries),
        gold=sum(queries.values()),
        sampled=len(sampled),
        calibrated=len(sample.qids),
        sample_batch=sample.sample_batch.name,
        accepted=split.accepted,
        to_humans=to_humans,
        over_budget=over_budget,
        in_training=training,
        no_machine_label=no_label,
        budget=budget,
        cost=crowd_cost(batch, len(to_humans)),
        calibration_cost=crowd_cost(batch, len(sampled)),
        reference=sample.reference.describe(),
        undecided=len(sample.undecided),
        awaiting_votes=len(state["pending"]),  # whatever the rule: nothing is routed while the sample waits
        waiting=state["waits"],
        extendable=sample.extendable,
        reference_rule=rule_record(sample.reference),
        echo=sample.echo.as_dict() if sample.echo is not None else {},
        **advice,
    )
    plan.cost_all = crowd_cost(batch, plan.labelled)
    return plan


def parse_cascade(names: list[str]) -> list[tuple[str, float | None]]:
    """``["rules:0.9", "trained"]`` -> ``[("rules", 0.9), ("trained", None)]``: each labeller with its floor
    (the lowest confidence it may keep); a :class:`~core.errors.FieldError` of ``cascade`` naming a bad item."""
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

    from genderbias.machine.cascade_statistics import certify_cascade

    # The sample's checks (design, population, pending) and its state.
    plain = choose_threshold_on(sample, target, risk, state)
    if plain.get("awaiting_votes") or sample.design != RANDOM_DESIGN:
        return None
    qids = list(sample.population)
    index = {q: i for i, q in enumerate(qids)}
    identities = [identity_for(batch, name) for name, _ in stages]
    labels = []
    confidence = np.full((len(stages), len(qids)), np.nan)
    correct = np.zeros_like(confidence, dtype=bool)
    for i, identity in enumerate(identities):
        mine = {q: m for q, m in machine_labels(batch, identity).items() if not m.in_training and q in index}
        labels.append({q: m.label for q, m in mine.items()})
        for q, m in mine.items():
            confidence[i, index[q]] = m.confidence
        for q in sample.drawn:
            correct[i, index[q]] = sample.crowd.get(q) is not None and labels[i].get(q) == sample.crowd[q]
    drawn = [index[q] for q in sample.drawn]
    result = certify_cascade(
        confidence,
        correct,
        drawn,
        target=target,
        risk=risk,
        planned=min(sample.planned or len(drawn), len(drawn)),
        floors=[floor for _, floor in stages],
    )
    earlier = earlier_guarantee(sample)
    kept_any = any(len(stage.kept) for stage in result.stages)
    if kept_any and earlier is not None and earlier != (target, risk):
        return plain | {
            "threshold": None,
            "certified": False,
            "accepted": [],
            "stages": [],
            "more_reason": reuse_refusal(earlier),
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
    """What ``identity``'s cached answers on ``qids`` cost at the configured prices (rules and trained:
    nothing): a cascade's stage pays for the queries earlier stages passed on."""
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
    """Before drawing: per first-draw size, the share of draws that certify ``target``, the labels kept
    and the crowd cost, assuming the machine's confidence is its agreement with the reference (the plan
    after the sample uses the observed profile instead)."""
    from genderbias.machine.routing_forecast import size_first_draw

    check_target_accuracy(target)
    check_risk(risk)
    identity = identity_for(batch, labeller)
    population = [m.confidence for m in machine_labels(batch, identity).values() if not m.in_training]
    if not population:
        raise StateError(f"no query of batch {batch.name!r} has a machine label from {identity}")
    rows = size_first_draw(population, population, target=target, risk=risk, redraws=redraws)
    return sizing_rows(batch, rows, len(population))
