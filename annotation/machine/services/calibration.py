"""Blind calibration of a machine's labels: a sample of the batch goes to the crowd, unseen.

:func:`create_calibration_sample` draws a simple random sample of the machine-labelled queries (what
routing's guarantee rests on) and makes it a derived batch with the parent's settings, gold and training
queries; ``extend`` continues it with the next queries of the same permutation (a chain:
:func:`annotation.machine.selectors.sample_chain`). The annotators see a HIT like any other: the machine's
label and confidence are nowhere on it. Reads of the sample: :mod:`annotation.machine.selectors`.
"""

from __future__ import annotations

from collections import Counter
from decimal import Decimal
from typing import Any

from django.db import IntegrityError, transaction

from annotation.crowd.providers.base import provider_class
from annotation.crowd.services.batch_settings import NOT_STORED, OFFERED, BatchSettings, GoldQuery
from annotation.crowd.services.batches import create_batch
from annotation.machine.selectors import (
    PERMUTATION_DRAW,
    RANDOM_DESIGN,
    Identity,
    calibration_batch,
    drawn_order,
    identity_for,
    machine_labels,
    population_key,
    same_population,
    sample_chain,
)
from annotation.models import Batch, BatchQuery, Routing
from annotation.quality.services.budget import extra_assignment_price, set_extra_budget
from annotation.quality.services.escalation import parse_until, set_auto_escalation
from core.errors import ServiceError, StateError
from core.services.names import validate_name
from core.services.once import claim
from genderbias.labels import LABELS

#: The sample size when none is given: enough for kappa within about +-0.1.
DEFAULT_SAMPLE = 200


def reference_record(batch: Batch, escalation_cap: int | None, until: str = "majority") -> dict[str, Any]:
    """The reference rule a new sample records (``derivation["reference"]``): ``votes`` (the batch's
    assignments per query), ``cap`` (default ``DEFAULT_CAP``, never below ``votes``; equal: no escalation),
    ``until`` and its ``posterior`` (None: a strict majority); a ``ServiceError`` naming a bad setting."""
    from genderbias.crowd.simulation.escalation import DEFAULT_CAP

    votes = batch.assignments_per_query
    cap = max(DEFAULT_CAP, votes) if escalation_cap is None else escalation_cap
    if cap < votes:
        raise ServiceError(f"the escalation cap ({cap}) is below the batch's {votes} assignments per HIT")
    refusal = provider_class(batch.provider).extension_refusal(votes, cap)
    if refusal:
        raise ServiceError(refusal)
    posterior = parse_until(until)
    return {
        "votes": votes,
        "cap": cap,
        "until": "majority" if posterior is None else f"posterior:{posterior:g}",
        "posterior": posterior,
    }


def escalation_limit(batch: Batch, queries: int, reference: dict[str, Any]) -> Decimal:
    """The most the reference rule's escalation can add to a batch of ``queries``: every HIT to the cap."""
    hits = -(-queries // batch.queries_per_hit)
    return (hits * (reference["cap"] - reference["votes"]) * extra_assignment_price(batch)).quantize(Decimal("0.01"))


def follow_reference(child: Batch, reference: dict[str, Any]) -> None:
    """Let every sync of ``child`` escalate its undecided queries by the reference rule, within
    :func:`escalation_limit` (added to the batch's extra budget)."""
    if reference["cap"] <= reference["votes"]:
        return
    limit = escalation_limit(child, child.queries.filter(is_gold=False).count(), reference)
    set_extra_budget(child, limit + (child.extra_budget or Decimal("0")))  # on top of the re-offers' budget
    set_auto_escalation(child, reference["until"], max_assignments=reference["cap"])


def settings_of(batch: Batch) -> BatchSettings:
    """The settings ``batch`` was created with, for a batch derived from it (not Prolific's completion
    code: every study gets its own)."""
    values = {field: getattr(batch, field) for field in OFFERED if field not in NOT_STORED}
    values["provider_options"] = {k: v for k, v in batch.provider_options.items() if k != "completion_code"}
    return BatchSettings(**values)


def create_derived_batch(
    parent: Batch, name: str, qids: list[str], *, purpose: str, derivation: dict[str, Any], seed: int
) -> Batch:
    """A batch of ``qids`` of ``parent`` with its settings, gold, training queries and team."""
    gold = [
        GoldQuery(q.qid, q.text, q.gold_label)
        for q in BatchQuery.objects.filter(batch=parent, is_gold=True).order_by("position")
    ]
    training = [GoldQuery(t.qid, t.text, t.label) for t in parent.training_queries.order_by("position")]
    settings = settings_of(parent)
    settings.seed = seed
    with transaction.atomic():
        child = create_batch(
            name, settings, query_set=parent.query_set, pool=parent.pool, gold=gold, training=training, only_qids=qids
        )
        child.parent = parent
        child.purpose = purpose
        child.derivation = derivation
        child.save(update_fields=["parent", "purpose", "derivation"])
        child.team.set(parent.team.all())
    return child


def part_name(parent: Batch) -> str:
    """The next free ``<parent>-part-<n>``: neutral on purpose, as annotators see the batch's name and
    "calibration" would tell them their answers are checking a machine."""
    number = parent.derived.count() + 1
    while Batch.objects.filter(name=f"{parent.name}-part-{number}").exists():
        number += 1
    return f"{parent.name}-part-{number}"


def _locked_parent(batch: Batch) -> Batch:
    locked = Batch.objects.select_for_update().get(pk=batch.pk)
    if locked.parent_id is not None:
        raise StateError(f"batch {locked.name!r} is itself derived from {locked.parent.name!r}; use that one")
    if locked.status != Batch.Status.DRAFT:
        raise StateError(
            f"batch {locked.name!r} is {locked.status}: machine labels with a calibration sample are for a batch "
            "that has not gone to the crowd (its crowd work goes through derived batches)"
        )
    return locked


def create_calibration_sample(
    batch: Batch,
    sample: int = DEFAULT_SAMPLE,
    *,
    labeller: str | None = None,
    seed: int = 0,
    name: str = "",
    extend: bool = False,
    extendable: bool = False,
    escalation_cap: int | None = None,
    until: str = "majority",
) -> Batch:
    """Draw a blind simple random sample of ``batch``'s machine-labelled queries as a batch (not published).

    ``extend``: the next ``sample`` queries of the first draw's permutation, still one simple random
    sample (refused when the population changed since). Under the parent's row lock, so two requests make
    one sample or extension (:func:`_live_sample`). ``extendable``: routing then splits δ with a betting
    test; by default all of δ goes to the exact test (which keeps more) and an extension is refused.
    ``escalation_cap``, ``until``: the reference rule (:func:`reference_record`)."""
    from genderbias.machine.calibration_sample import random_sample

    if sample < 1:
        raise ServiceError(f"the calibration sample needs at least one query, got {sample}")
    if seed < 0:
        raise ServiceError(f"the seed must be a non-negative integer, got {seed}")
    if name:
        validate_name(name, "batch")
    reference = None if extend else reference_record(batch, escalation_cap, until)
    with transaction.atomic():
        parent = _locked_parent(batch)
        current = calibration_batch(parent)
        claim(parent, lambda: _live_sample(parent, current, extend))  # paid work exactly once
        if current is None and extend:
            raise StateError(f"batch {parent.name!r} has no calibration sample to extend; draw one first")
        if extend and not sample_chain(current)[0].derivation.get("extendable", True):
            raise StateError(
                f"the calibration sample of {parent.name!r} was drawn whole (not extendable): all of the risk went to "
                "the exact test of its one draw, so an extension could not be tested. Cancel it and draw a larger "
                "sample (calibrate --sample N; routing's plan sizes it), or draw with --extendable"
            )
        if extend and routed_in_force(parent) is not None:
            raise StateError(
                f"batch {parent.name!r} was routed on its sample: cancel the routed batch before extending the sample"
            )
        chain = sample_chain(current) if current is not None else []
        if chain:
            first = chain[0].derivation
            identity = Identity(first["labeller"], first["model"], first["prompt_version"])
            if labeller not in (None, "", identity.labeller):
                raise ServiceError(f"the sample in force was drawn by {identity}; extend it with the same labeller")
        else:
            identity = identity_for(parent, labeller)
        machine = {qid: m.label for qid, m in machine_labels(parent, identity).items() if not m.in_training}
        if not machine:
            raise StateError(f"no query of batch {parent.name!r} has a machine label from {identity}")
        taken = drawn_order(chain)
        # One permutation for the whole sample: an extension continues the first draw's (its seed).
        draw_seed = int(chain[0].derivation.get("seed", seed)) if chain else seed
        _check_population(chain, machine)
        try:
            qids = random_sample(machine, sample, seed=draw_seed, exclude=taken)
        except ValueError:
            raise StateError(
                f"every machine-labelled query of batch {parent.name!r} is in its sample already"
            ) from None
        population = Counter(machine.values())
        drawn = Counter(machine[q] for q in qids)
        derivation = identity.as_dict() | {
            "design": RANDOM_DESIGN,
            "draw": PERMUTATION_DRAW,
            "seed": draw_seed,
            "seed_given": seed,
            "population_size": len(machine),
            "population_key": population_key(machine),
            "requested": sample,
            "planned": chain[0].derivation.get("planned", chain[0].derivation["requested"]) if chain else sample,
            "extendable": chain[0].derivation.get("extendable", True) if chain else extendable,
            "reference": (chain[0].derivation.get("reference") if chain else reference),
            "extends": chain[-1].pk if chain else None,
            "look": len(chain) + 1,
            "order": qids,
            "strata": [
                {"label": label, "population": population[label], "sampled": drawn[label]}
                for label in LABELS
                if population[label]
            ],
            "stratum_of": {qid: machine[qid] for qid in qids},
        }
        name = name or part_name(parent)
        if Batch.objects.filter(name=name).exists():
            raise ServiceError(f"a batch named {name!r} exists already")
        try:
            with transaction.atomic():
                child = create_derived_batch(
                    parent, name, qids, purpose=Batch.Purpose.CALIBRATION, derivation=derivation, seed=seed
                )
                if derivation["reference"]:
                    follow_reference(child, derivation["reference"])
                return child
        except IntegrityError as exc:  # a name taken by a request outside this lock (e.g. a plain batch)
            raise StateError(f"batch {name!r} could not be created ({exc}); try again") from None


def _live_sample(parent: Batch, current: Batch | None, extend: bool) -> str | None:
    """Why a new draw of ``parent``'s sample is a duplicate (:func:`core.services.once.claim`), or None:
    a first draw while a sample is in force; an extension while an earlier one is live (the next look
    at the sample comes with its answers)."""
    if current is None:
        return None
    if not extend:
        return (
            f"batch {parent.name!r} has a calibration sample already ({current.name}); extend it "
            "(calibrate --extend, or extend=true) or cancel it first"
        )
    live = [part for part in sample_chain(current)[1:] if part.status in (Batch.Status.DRAFT, Batch.Status.PUBLISHED)]
    if live:
        return (
            f"the calibration sample of {parent.name!r} is being extended already (batch {live[-1].name}, "
            f"{live[-1].status}); extend again once its answers are in (completed), or cancel it"
        )
    return None


def _check_population(chain: list[Batch], machine: dict[str, str]) -> None:
    """An extension draws from the population of the first draw, or the union is no random sample."""
    if chain and not same_population(chain[0].derivation, machine):
        raise StateError(
            f"the machine-labelled queries of the batch are not those the sample {chain[0].name!r} was drawn "
            "from (labels were added or removed since): an extension would not continue one random sample; "
            "cancel the sample and draw a new one"
        )


def routed_in_force(batch: Batch) -> Routing | None:
    """The routing of ``batch`` whose routed batch is in force (not cancelled), or None."""
    return (
        batch.routings.filter(routed_batch__isnull=False)
        .exclude(routed_batch__status=Batch.Status.CANCELLED)
        .select_related("routed_batch")
        .first()
    )
