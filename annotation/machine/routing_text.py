"""The routing's words: a plan and the blind sample's wait in sentences, the guarantee stated once, so
the page, the API, ``manage.py route`` and the refusals say the same. Formatting only, no Django.
"""

from __future__ import annotations

from typing import Any

from annotation.crowd.team_text import team_needs

#: HITs named one by one in the wait's sentences (the API lists them all).
_WAITS_SHOWN = 10


def sample_waits_text(waits: list[dict[str, Any]], awaiting: int) -> list[str]:
    """The sample's wait in sentences: ``awaiting`` sample queries, on which HITs (``waits``), and why."""
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
    for batch in dict.fromkeys(w["batch"] for w in waits if w["needed"]):  # who is needed, per batch of the chain
        stuck = [w for w in waits if w["batch"] == batch and w["needed"]]
        needs = team_needs(
            sum(w["needed"] for w in stuck),
            [w["hit"] for w in stuck],
            max(w.get("team", 0) for w in stuck),
            max(w["needed"] for w in stuck),
            sum(w.get("escalated", 0) for w in stuck),
        )
        lines.append(f"The team cannot finish the sample: {needs} of {batch}.")
    return lines


def plan_summary(plan: Any) -> list[str]:
    """The plan in sentences: what the sample waits for, then where every query goes."""
    lines = sample_waits_text(plan.waiting, plan.awaiting_votes)
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
    if getattr(plan, "echo", None):
        lines.append(plan.echo["text"])
    return lines


def _advice_lines(plan: Any) -> list[str]:
    """When nothing is certified: whether the target is in reach with this crowd, and the first draw that would certify it."""
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
    """The guarantee in one clause, as the command, the page and the docs state it."""
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
