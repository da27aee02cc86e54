"""Reads of annotation state that other apps rely on (no writes, no heavy imports at module level).

Pure reads: what label sensitivity (``metrics``) and the exports need to know about a batch
beyond its usable judgments (``annotation.results.services.answers_summary.judgments_frame``).
"""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING, Any

from django.db.models import Avg, Count, Max, Sum

from annotation.labels import LABELS
from annotation.models import Adjudication, Assignment, Batch, Bonus, Escalation, Judgment, PreLabel

if TYPE_CHECKING:
    import pandas as pd


def adjudicated_labels(batch: Batch) -> dict[str, str]:
    """``qid -> label`` of every query of ``batch`` a researcher has settled (see :class:`Adjudication`).

    Label sensitivity's ``adjudicated`` policy reads adjudications through this function alone.
    """
    from annotation.results.services.answers_summary import crowd_batch_ids

    return dict(
        Adjudication.objects.filter(batch_query__batch__in=crowd_batch_ids(batch))
        .order_by("batch_query__position")
        .values_list("batch_query__qid", "label")
    )


def gold_labels(batch: Batch) -> dict[str, str]:
    """qid → known label of the batch's gold questions."""
    return dict(batch.queries.filter(is_gold=True).values_list("qid", "gold_label"))


def gold_judgments(batch: Batch) -> pd.DataFrame:
    """Answers to the batch's gold questions (``item``, ``worker`` pseudonym, ``label``), from
    assignments that were submitted or approved — including those that failed their gold
    questions: a wrong answer on a gold item is exactly what seeds a worker's confusion matrix."""
    import pandas as pd

    from annotation.results.services.answers_summary import crowd_batch_ids

    rows = Judgment.objects.filter(
        batch_query__batch__in=crowd_batch_ids(batch),
        batch_query__is_gold=True,
        label__isnull=False,
        assignment__status__in=[Assignment.Status.SUBMITTED, Assignment.Status.APPROVED],
    ).values_list("batch_query__qid", "assignment__worker__pseudonym", "label")
    return pd.DataFrame(list(rows), columns=["item", "worker", "label"], dtype=object)


# --- batches and their judgments, for other apps (label sensitivity reads the crowd here) ---


def batches():
    """Every batch, for other apps' shells to look one up (``get_object_or_404(batches(), name=...)``)."""
    return Batch.objects.all()


def batch_by_name(name: str) -> Batch | None:
    """The batch named ``name``, or None."""
    return Batch.objects.filter(name=name).first()


def judgments_frame(batch: Batch) -> pd.DataFrame:
    """One row per usable judgment of ``batch``: ``item`` (qid), ``worker`` (pseudonym), ``label``;
    the frame agreement and the exports count (:func:`annotation.results.services.answers_summary.judgments_frame`)."""
    from annotation.results.services.answers_summary import judgments_frame as usable_judgments_frame

    return usable_judgments_frame(batch)


def non_gendered_by_source(batch: Batch) -> dict[str, list[str]]:
    """For a batch with machine labels: its non-gendered qids by where the labels come from.

    ``crowd only`` (the crowd's labels, rulings first), ``machine only`` (the machine routing
    used, else the latest, for every query), ``hybrid`` (the crowd where it labelled, else an
    accepted machine label: :func:`annotation.results.services.answers_summary.labels_with_sources`). Empty for
    a batch no machine labelled. Keys as :data:`metrics.defaults.LABEL_SOURCES`.
    """
    from annotation.machine.services.calibration import Identity, identities, machine_labels
    from annotation.machine.services.label_sources import latest_routing, machine_accepted
    from annotation.results.services.answers_summary import crowd_labels

    found = identities(batch)
    if not found:
        return {}
    routing = latest_routing(batch)
    identity = Identity(routing.labeller, routing.model, routing.prompt_version) if routing else found[0]
    machine = machine_labels(batch, identity)

    def non_gendered(labels) -> list[str]:
        return sorted(qid for qid, source in labels.items() if source.label == "n")

    crowd = crowd_labels(batch)
    return {
        "crowd only": non_gendered(crowd),
        "machine only": sorted(qid for qid, m in machine.items() if m.label == "n"),
        "hybrid": non_gendered(machine_accepted(batch) | crowd),  # as labels_with_sources: the crowd first
    }


def min_votes(batch: Batch) -> int:
    """The fewest votes a query of ``batch`` needs for a majority label, as the export counts them."""
    from annotation.results.services.answers_summary import min_votes as export_min_votes

    return export_min_votes(batch)


# --- the review queue (annotation.results.review) and the researchers' dashboard ---


def escalated_qids(batch: Batch) -> set[str]:
    """qids that were among the disputed queries of any escalation of ``batch``."""
    return {
        str(qid)
        for disputed in Escalation.objects.filter(batch=batch).values_list("disputed", flat=True)
        for qid in disputed
    }


def gold_failed_qids(batch: Batch) -> set[str]:
    """qids of real queries with answers from assignments that failed their gold questions (not counted)."""
    return set(
        Judgment.objects.filter(batch_query__batch=batch, batch_query__is_gold=False, assignment__gold_passed=False)
        .values_list("batch_query__qid", flat=True)
        .distinct()
    )


def spent(batch: Batch, answered: int) -> Decimal:
    """USD spent on ``batch`` so far: ``answered`` (submitted or approved) assignments at the price per
    assignment of the estimate recorded when it was created (reward + fee), plus bonuses recorded.
    Rejected work is not paid; extra assignments (escalations, re-offers) count once answered."""
    cost = batch.cost or {}
    assignments = int(cost.get("assignments_total") or 0)
    price = Decimal(cost["total"]) / assignments if assignments and cost.get("total") else Decimal(batch.reward)
    bonuses = Bonus.objects.filter(assignment__hit__batch=batch).aggregate(total=Sum("amount"))["total"] or 0
    return (price * answered + Decimal(bonuses)).quantize(Decimal("0.01"))


def is_machine_labelled(batch: Batch) -> bool:
    """Whether ``batch`` is labelled by a machine first: its crowd work goes through derived batches
    (a calibration sample, routed queries) or a routing decided which machine labels stand.

    Such a batch is never published itself (``services.publishing.check_publishable``) and
    its own cost estimate (every query to the crowd) is never spent.
    """
    return batch.parent_id is None and (batch.derived.exists() or batch.routings.exists())


def batch_state(batch: Batch, progress: dict | None = None) -> dict[str, Any]:
    """What ``batch`` is and where it stands: the one reading behind the batch page, the batch list
    and the dashboard, so the three never disagree.

    Keys: ``kind`` (``crowd``; ``machine``: :func:`is_machine_labelled`; ``calibration`` or
    ``routed``: a derived batch), ``status`` (the status shown: "machine-labelled" for a
    machine-labelled batch), ``progress`` (``services.batch_progress``), ``answered`` and
    ``expected`` assignments, ``fraction`` (of the bar), ``spent`` (USD), ``estimate`` (USD,
    None for a machine-labelled batch: what its own HITs would cost is never spent nor
    committed). A machine-labelled batch adds ``machine``: ``queries``, ``accepted``
    (labels the machine gave that stand), ``crowd`` (labelled by the crowd or a ruling),
    ``sample`` and ``routed`` (queries sent to the crowd in its calibration sample and
    routed batches), ``unlabelled``; ``parts`` (its crowd batches, each with its own
    state); ``spent`` (theirs, bonuses included), ``committed`` (what their published
    HITs may still cost) and ``planned`` (their drafts' estimates).
    """
    from annotation.crowd.services.batches import batch_progress

    progress = progress if progress is not None else batch_progress(batch)
    answered = progress["submitted"] + progress["approved"]
    kind = batch.purpose or "crowd"
    if kind == "crowd" and is_machine_labelled(batch):
        return _machine_state(batch, progress)
    return {
        "kind": kind,
        "status": batch.status,
        "progress": progress,
        "answered": answered,
        "expected": progress["assignments_expected"],
        "fraction": progress["fraction"],
        "spent": spent(batch, answered),
        "estimate": (batch.cost or {}).get("total"),
        "machine": None,
    }


def _machine_state(batch: Batch, progress: dict) -> dict[str, Any]:
    from annotation.machine.services.label_sources import MACHINE
    from annotation.results.services.answers_summary import source_counts

    parts = []
    for part in batch.derived.order_by("created", "pk"):
        state = batch_state(part)
        estimate = Decimal(state["estimate"] or 0)
        live = part.status == Batch.Status.PUBLISHED
        state |= {
            "batch": part,
            "queries": state["progress"]["queries"],
            "committed": max(Decimal("0.00"), estimate - state["spent"]) if live else Decimal("0.00"),
            "planned": estimate if part.status == Batch.Status.DRAFT else Decimal("0.00"),
        }
        parts.append(state)
    counted = [p for p in parts if p["batch"].status != Batch.Status.CANCELLED]
    sources = source_counts(batch)
    queries = progress["queries"]
    labelled = sum(sources.values())
    machine = {
        "queries": queries,
        "accepted": sources.get(MACHINE, 0),
        "crowd": labelled - sources.get(MACHINE, 0),
        "sample": sum(p["queries"] for p in counted if p["kind"] == Batch.Purpose.CALIBRATION),
        "routed": sum(p["queries"] for p in counted if p["kind"] == Batch.Purpose.ROUTED),
        "unlabelled": queries - labelled,
    }
    answered = sum(p["answered"] for p in parts)
    return {
        "kind": "machine",
        "status": "machine-labelled",
        "progress": progress,
        "answered": answered,
        "expected": sum(p["expected"] for p in counted),
        "fraction": labelled / queries if queries else None,
        "spent": sum((p["spent"] for p in parts), Decimal("0.00")),
        "committed": sum((p["committed"] for p in parts), Decimal("0.00")),
        "planned": sum((p["planned"] for p in parts), Decimal("0.00")),
        "estimate": None,
        "all_crowd_estimate": (batch.cost or {}).get("total"),
        "machine": machine,
        "parts": parts,
    }


def batch_overview(limit: int | None = None) -> list[dict]:
    """Batches, newest first, each with ``batch`` and its :func:`batch_state`."""
    return [
        {"batch": batch} | batch_state(batch)
        for batch in Batch.objects.select_related("query_set", "pool").order_by("-created", "-pk")[:limit]
    ]


# --- machine pre-labelling ---


def prelabel_runs(batch: Batch) -> list[dict[str, Any]]:
    """Each stored run of ``batch`` (one per labeller, model and prompt version), the latest first:
    counts per label, labelled queries, mean confidence, the trained labeller's cross-validated
    accuracy (from ``PreLabel.detail``) and when it was stored."""
    rows = (
        PreLabel.objects.filter(batch_query__batch=batch)
        .values("labeller", "model", "prompt_version", "label")
        .annotate(count=Count("id"), mean=Avg("confidence"), latest=Max("created"))
        .order_by()
    )
    runs: dict[tuple[str, str, str], dict[str, Any]] = {}
    for row in rows:
        key = (row["labeller"], row["model"], row["prompt_version"])
        run = runs.setdefault(
            key,
            {
                "labeller": key[0],
                "model": key[1],
                "prompt_version": key[2],
                "counts": dict.fromkeys(LABELS, 0),
                "labelled": 0,
                "mean_confidence": 0.0,
                "cv_accuracy": None,
                "created": row["latest"],
            },
        )
        run["counts"][row["label"]] = row["count"]
        run["labelled"] += row["count"]
        run["mean_confidence"] += row["mean"] * row["count"]
        run["created"] = max(run["created"], row["latest"])
    for (labeller, model, prompt_version), run in runs.items():
        run["mean_confidence"] = run["mean_confidence"] / run["labelled"] if run["labelled"] else None
        cv = (
            PreLabel.objects.filter(
                batch_query__batch=batch, labeller=labeller, model=model, prompt_version=prompt_version
            )
            .filter(detail__cv_accuracy__isnull=False)
            .values_list("detail__cv_accuracy", flat=True)
            .first()
        )
        run["cv_accuracy"] = cv
    return sorted(runs.values(), key=lambda run: run["created"], reverse=True)
