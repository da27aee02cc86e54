"""Routing's blind sample: its state (:func:`reference_state`, what it waits for), the threshold chosen on
it (:func:`choose_threshold_on`: the guarantee, or the point estimate), the crowd's cost of a number of
queries, and, when nothing is certified, what would bring the target in reach (:func:`advice_when_uncertified`).
:mod:`.plan` composes them into a plan; nothing here writes.
"""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal
from typing import Any

from django.db.models import Count, Q

from annotation.crowd.providers.base import provider_class
from annotation.crowd.selectors import place_takers, team_size
from annotation.crowd.services.batches import estimate_cost
from annotation.crowd.team_text import team_needs
from annotation.machine.report.selectors import fitted_crowd
from annotation.machine.selectors import RANDOM_DESIGN, CalibrationSample, same_population
from annotation.machine.services.calibration import settings_of
from annotation.models import FREES_PLACE, Assignment, Batch, Hit, Routing
from annotation.quality.services.budget import affordable, budget_left, extra_assignment_price, extra_spent
from core.errors import StateError


def crowd_cost(batch: Batch, queries: int) -> Decimal:
    if queries == 0:
        return Decimal("0")
    return Decimal(estimate_cost(settings_of(batch), queries)["total"])


def affordable_queries(batch: Batch, budget: Decimal, wanted: int) -> int:
    """The most queries (of ``wanted``) whose crowd cost is within ``budget`` (cost grows with the count)."""
    low, high = 0, wanted
    while low < high:
        middle = (low + high + 1) // 2
        if crowd_cost(batch, middle) <= budget:
            low = middle
        else:
            high = middle - 1
    return low


def choose_threshold_on(
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
    earlier = earlier_guarantee(sample)
    if result.threshold is not None and earlier is not None and earlier != (target, risk):
        return {
            "threshold": None,
            "estimated_accuracy": None,
            "accuracy_ci": None,
            "sample_accepted": 0,
            "certified": False,
            "more_reason": reuse_refusal(earlier),
            "candidates": result.candidates,
        }
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
    """Where the sample's reference labels stand: ``pending`` (qids whose label may still change: too few
    votes, a HIT that still gets votes, or escalated at the next sync), ``escalating`` (undecided ones the
    next sync escalates), ``next`` (that round's cost), ``spent`` and ``limit`` (the sample's escalations
    so far, and what they may still add) and ``waits`` (each HIT the sample waits on, and why). An
    undecided query that can get no more votes keeps no label: an error for any machine."""
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
            can_take = None if takers is None else takers[hit.pk]
            if hit.status == Hit.Status.PENDING:
                if qids & pending:
                    waits.append(_wait(link, hit, qids & pending, "not published yet: publish the sample"))
            elif hit.answered < hit.max_assignments:
                pending |= qids
                waits.append(_open_wait(link, hit, qids, can_take, fresh, members or 0))
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
    """One HIT the sample waits on; ``needed``: its places no team member can take (``escalated`` of them
    added by escalation; ``team``: the members who may take places)."""
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


def _open_wait(link: Batch, hit, qids: set[str], can_take: int | None, fresh: dict | None, team: int) -> dict[str, Any]:
    """A HIT of the sample that still gets votes: its places handed out, open, or that nobody can take
    (``fresh``: :func:`place_takers` without retakes)."""
    out, free = hit.held - hit.answered, max(0, hit.max_assignments - hit.held)
    retake = 0 if fresh is None else max(0, min(free, can_take) - fresh[hit.pk])
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


def earlier_guarantee(sample: CalibrationSample) -> tuple[float, float] | None:
    """(A, δ) of the first guaranteed routing recorded on this sample (any link of its chain), or None:
    A and δ are chosen before the labels are seen, as another pair's risk would add to the first one's."""
    chain = sample.chain or [sample.sample_batch]
    first = (
        Routing.objects.filter(batch=sample.batch, sample_batch__in=chain, risk__isnull=False)
        .order_by("created", "pk")
        .values_list("target_accuracy", "risk")
        .first()
    )
    return None if first is None else (float(first[0]), float(first[1]))


def reuse_refusal(earlier: tuple[float, float]) -> str:
    """Why a guarantee at another (A, δ) than :func:`earlier_guarantee`'s certifies nothing."""
    return (
        f"the sample's labels were used already for a guaranteed routing at target {earlier[0]:g} and risk "
        f"{earlier[1]:g}: another target or risk on the same sample has no guarantee (target changed after "
        "seeing the labels; each extra look costs its risk). Route at that target and risk, with no guarantee, "
        "or draw a new sample"
    )


#: Escalation caps the plan tries when a target is out of reach with the sample's crowd.
CAPS_TRIED = (5, 7, 9, 11)


def advice_when_uncertified(
    batch: Batch, sample: CalibrationSample, target: float, risk: float, confidence, correct, population
):
    """When nothing is certified: the ceiling as routing counts it (the crowd model fitted to the sample's
    votes), what would bring an out-of-reach target in reach, and the first-draw sizes at the observed profile."""
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
                more = ceiling_by_label(model, replace(rule, cap=cap), queries_per_hit=per_hit)
                advice["in_reach"] = [*advice.get("in_reach", []), {"cap": cap, "ceiling": float(more.max())}]
                if more.max() >= target:
                    break
    levels, agreement = observed_profile(confidence, correct)
    rows = size_first_draw(population, profile_at(levels, agreement, population), target=target, risk=risk, redraws=100)
    advice["sizing"] = sizing_rows(batch, rows, len(population))
    return advice


def sizing_rows(batch: Batch, rows, population: int) -> list[dict[str, Any]]:
    """``size_first_draw``'s rows as the plan, the page and ``calibrate --size-for`` show them, with the
    machine labels kept of ``population`` and each size's crowd cost."""
    return [
        {
            "sample": row.sample,
            "certified_rate": row.certified_rate,
            "kept_share": row.kept_share,
            "kept": round(row.kept_share * population),
            "cost": str(crowd_cost(batch, row.sample)),
        }
        for row in rows
    ]
