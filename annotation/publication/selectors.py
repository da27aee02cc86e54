"""What the platform knows of how a batch's labels were made: the study's facts, read once.

Every published description of a batch states these facts: the dataset card beside an export
(:mod:`annotation.publication.services.exports`), the Hugging Face dataset card and the Croissant
Responsible-AI fields of a published dataset folder, and the methods paragraph of a paper
bundle (``metrics``). They all read them here, so a figure (an agreement interval, a count of
rulings, the non-gendered share) is the same in each.

:func:`study_facts` is a selector: it reads, never writes. Its values are plain JSON-friendly
Python (strings, numbers, lists, dicts; dates as ISO strings, money as strings of USD), so a
writer of any format can use them without knowing the models.
"""

from __future__ import annotations

from typing import Any

from annotation.labels import LABEL_NAMES, LABELS
from annotation.machine.selectors import calibration_report
from annotation.models import Batch, Escalation
from annotation.results.export_formats import machine_facts
from annotation.results.selectors import BatchAnswers, agreement, batch_state, latest_routing, min_votes, query_results
from core.errors import ServiceError

#: The confidence level of every interval :func:`study_facts` states.
LEVEL = 0.95
#: Who labelled the queries, by provider, as every published text names them ("by 3 ...").
ANNOTATORS = {
    "local": "in-house annotators",
    "mturk": "crowd workers recruited through Amazon Mechanical Turk",
    "prolific": "participants recruited through Prolific",
}


def source_of(batch: Batch) -> str:
    """The pool or query set a batch annotates, with the ir_datasets dataset its queries came from."""
    query_set = batch.pool.source if batch.pool else batch.query_set
    name = batch.pool.name if batch.pool else batch.query_set.name
    origin = query_set.dataset_source if query_set is not None else ""
    return f"{name} (queries from {origin})" if origin else name


def source_dataset(batch: Batch) -> str | None:
    """The ir_datasets collection the batch's queries came from (``ir_datasets:<id> (...)``), if known."""
    query_set = batch.pool.source if batch.pool else batch.query_set
    return (query_set.dataset_source or None) if query_set is not None else None


def batch_facts(batch: Batch) -> dict[str, Any]:
    """The batch's settings as a dataset card states them (dates and money as given, for the card's own layout)."""
    return {
        "name": batch.name,
        "provider_display": batch.get_provider_display(),
        "annotators": ANNOTATORS.get(batch.provider, f"annotators ({batch.get_provider_display()})"),
        "source": source_of(batch),
        "provider": batch.provider,
        "assignments_per_query": batch.assignments_per_query,
        "queries_per_hit": batch.queries_per_hit,
        "reward": batch.reward,
        "gold_per_hit": batch.gold_per_hit,
        "qualifications": batch.qualifications,
        "created": batch.created.date(),
        "published": batch.published.date() if batch.published else None,
        "cost": batch.cost or None,
        # What it spent, fees and bonuses included (its crowd batches' for a machine-labelled one):
        # the one figure of the dashboard, the batch list and page (annotation.results.selectors.batch_state).
        "spent": batch_state(batch)["spent"],
    }


def routing_facts(batch: Batch) -> dict[str, Any] | None:
    """The routing in force and the calibration figures of a machine-labelled batch (None for a crowd batch)."""
    routing = latest_routing(batch)
    if routing is None:
        return None
    try:
        calibration = calibration_report(batch, routing.labeller)  # the interval the page and command show
    except ServiceError:
        calibration = None
    decision = {
        "labeller": routing.labeller,
        "model": routing.model,
        "prompt_version": routing.prompt_version,
        "threshold": routing.threshold,
        "target_accuracy": routing.target_accuracy,
        "risk": routing.risk,
        "conservative": routing.conservative,
        "estimated_accuracy": routing.estimated_accuracy,
        "accuracy_ci": routing.accuracy_ci,
        "accepted": len(routing.accepted),
        "reference": routing.reference,
        "stages": [{k: v for k, v in stage.items() if k != "accepted"} for stage in routing.stages],
    }
    return machine_facts(decision, calibration)


def pool_facts(batch: Batch) -> dict[str, Any] | None:
    """How the batch's queries were chosen, when they came from a pool of runs (None for a query set)."""
    pool = batch.pool
    if pool is None:
        return None
    return {
        "name": pool.name,
        "source": pool.source.name,
        "dataset": pool.source.dataset_source or None,
        "runs": sorted(pool.runs.values_list("name", flat=True)),
        "rank_cutoff": pool.rank_cutoff,
        "depth": pool.depth,
        "magnitude": pool.magnitude,
        "tokenizer": pool.tokenizer,
        "wordlist": pool.wordlist.name,
    }


def quality_facts(batch: Batch) -> dict[str, Any]:
    """The quality controls the batch ran with: gold questions, thresholds, training, escalation."""
    return {
        "gold_per_hit": batch.gold_per_hit,
        "gold_pass_fraction": batch.gold_pass_fraction,
        "warn_gold_accuracy": batch.warn_gold_accuracy,
        "block_gold_accuracy": batch.block_gold_accuracy,
        "warn_agreement": batch.warn_agreement,
        "block_agreement": batch.block_agreement,
        "training_queries": batch.training_queries.count(),
        "training_pass_fraction": batch.training_pass_fraction if batch.training_queries.exists() else None,
        "escalate_until": batch.escalate_until or None,
        "escalation_cap": batch.escalation_cap,
        "escalations": Escalation.objects.filter(batch=batch, applied=True).count(),
    }


def share_interval(count: int, total: int) -> dict[str, Any]:
    """A share with its Wilson score interval at :data:`LEVEL` (``estimate`` and ``ci`` None for no data)."""
    from annotation.machine.routing_statistics import wilson_interval

    if total <= 0:
        return {"count": count, "total": total, "estimate": None, "ci": [None, None], "method": "Wilson score"}
    low, high = wilson_interval(count / total, total, alpha=1 - LEVEL)
    return {
        "count": count,
        "total": total,
        "estimate": round(count / total, 4),
        "ci": [round(float(low), 4), round(float(high), 4)],
        "method": "Wilson score",
    }


def study_facts(batch: Batch, answers: BatchAnswers | None = None) -> dict[str, Any]:
    """Everything a published description of ``batch`` states, from one read of its answers.

    Keys: ``batch`` (settings, :func:`batch_facts`, made JSON-friendly), ``pool``
    (:func:`pool_facts`), ``quality`` (:func:`quality_facts`), ``prolific`` (the study's
    screeners and options, Prolific batches only), ``agreement`` (the agreement report's figures
    with their interval), ``labels`` (queries, labelled, per-label counts, label sources,
    rulings, set-aside queries and why, votes per query), ``non_gendered_share`` (among
    labelled queries, :func:`share_interval`), ``source_dataset`` (:func:`source_dataset`),
    ``machine`` (:func:`routing_facts`) and
    ``results`` (the per-query rows of :func:`annotation.results.selectors.query_results`).
    """
    answers = answers or BatchAnswers(batch)
    results = query_results(batch, answers)
    report = agreement(batch, answers=answers)
    labelled = [r for r in results if r["label"] is not None]
    unlabelled = [r for r in results if r["label"] is None]
    settings = batch_facts(batch)
    options = batch.provider_options or {}
    sources: dict[str, int] = {}
    for row in labelled:
        sources[row["label_source"]] = sources.get(row["label_source"], 0) + 1
    counts = {label: sum(r["label"] == label for r in labelled) for label in LABELS}
    return {
        "batch": settings
        | {
            "reward": str(settings["reward"]),
            "spent": f"{settings['spent']:.2f}",
            "created": settings["created"].isoformat(),
            "published": settings["published"].isoformat() if settings["published"] else None,
            "min_votes": min_votes(batch),
        },
        "pool": pool_facts(batch),
        "quality": quality_facts(batch),
        "prolific": (
            {
                "filters": list(options.get("filters", [])),
                "devices": options.get("devices"),
                "estimated_minutes": options.get("estimated_minutes"),
                "bonus": options.get("bonus"),
            }
            if batch.provider == "prolific"
            else None
        ),
        "agreement": {
            "method": "majority vote (ties set aside)",
            "krippendorff_alpha": report["krippendorff_alpha"],
            "alpha_ci": report["alpha_ci"],
            "level": LEVEL,
            "bootstrap_resamples": report["bootstrap_resamples"],
            "per_category_alpha": report["per_category_alpha"],
            "percent_agreement": report["percent_agreement"],
            "fleiss_kappa": report["fleiss_kappa"],
            "workers": report["workers"],
            "judgments": report["judgments"],
            "judgments_per_query": report["judgments_per_query"],
        },
        "labels": {
            "queries": len(results),
            "labelled": len(labelled),
            "counts": counts,
            "names": dict(LABEL_NAMES),
            "sources": sources,
            "adjudicated": sum(r["adjudicated"] for r in labelled),
            "set_aside": {
                "disputed": sum(r["disputed"] and not r["too_few_votes"] for r in unlabelled),
                "too_few_votes": sum(bool(r["too_few_votes"]) for r in unlabelled),
            },
        },
        "non_gendered_share": share_interval(counts["n"], len(labelled)),
        "source_dataset": source_dataset(batch),
        "machine": routing_facts(batch),
        "results": results,
    }
