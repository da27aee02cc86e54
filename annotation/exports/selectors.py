"""What the platform knows of how a batch's labels were made, read once for every published
description (so a figure is the same in each), as plain JSON-friendly values."""

from __future__ import annotations

from collections import Counter
from typing import Any

from django.forms.models import model_to_dict

from annotation.audit.selectors import audit_facts
from annotation.crowd.selectors import crowd_batch_ids
from annotation.machine.prelabellers.interface import is_language_model
from annotation.machine.report.selectors import calibration_report
from annotation.models import Batch, Escalation, Judgment
from annotation.results.export_formats import machine_facts
from annotation.results.selectors.agreement import agreement
from annotation.results.selectors.labels import (
    ADJUDICATED,
    CROWD,
    MACHINE,
    BatchAnswers,
    latest_routing,
    min_votes,
    query_results,
    routing_stages,
    usable_judgments,
)
from annotation.results.selectors.state import batch_state
from core.errors import ServiceError
from genderbias.labels import LABEL_NAMES, LABELS
from genderbias.ranking.defaults import LEVEL
from genderbias.stats import plan_inputs
from pooling.selectors import named_set_facts

#: Who labelled the queries, by provider, as every published text names them ("by 3 ...").
ANNOTATORS = {
    "local": "in-house annotators",
    "mturk": "crowd workers recruited through Amazon Mechanical Turk",
    "prolific": "participants recruited through Prolific",
}


def _source_set(batch: Batch):
    return batch.pool.source if batch.pool else batch.query_set


def source_of(batch: Batch, *, pool_name: bool = True) -> str:
    """The pool (unless ``pool_name`` is false: its source) or query set a batch annotates, with the
    ir_datasets dataset its queries came from."""
    query_set = _source_set(batch)
    name = batch.pool.name if batch.pool and pool_name else query_set.name
    origin = query_set.dataset_source if query_set is not None else ""
    return f"{name} (queries from {origin})" if origin else name


def source_dataset(batch: Batch) -> str | None:
    """The ir_datasets collection the batch's queries came from (``ir_datasets:<id> (...)``), if known."""
    query_set = _source_set(batch)
    return (query_set.dataset_source or None) if query_set is not None else None


def source_query_set(batch: Batch) -> str:
    """The query set the batch's queries were taken from, with its origin: its terms of use are the text's."""
    return source_of(batch, pool_name=_source_set(batch) is None)


def queries_from(batch: Batch) -> dict[str, Any] | None:
    """The named data set the batch's queries come from (:mod:`genderbias.datasets`), or None."""
    return named_set_facts(_source_set(batch))


def batch_facts(batch: Batch) -> dict[str, Any]:
    """The batch's settings as a dataset card states them (dates and money as given, for the card's own layout)."""
    state = batch_state(batch)
    return {
        "name": batch.name,
        "provider_display": batch.get_provider_display(),
        "annotators": ANNOTATORS.get(batch.provider, f"annotators ({batch.get_provider_display()})"),
        "source": source_of(batch),
        "query_set": source_query_set(batch),
        "provider": batch.provider,
        "assignments_per_query": batch.assignments_per_query,
        "queries_per_hit": batch.queries_per_hit,
        "reward": batch.reward,
        "gold_per_hit": batch.gold_per_hit,
        "qualifications": batch.qualifications,
        "created": batch.created.date(),
        "published": batch.published.date() if batch.published else None,
        "cost": batch.cost or None,
        "spent": state["spent"],
        "answered": state["answered"],
        "expected": state["expected"],
        "machine_first": state["kind"] == "machine",
        "queries_from": queries_from(batch),
    }


def routing_facts(batch: Batch) -> dict[str, Any] | None:
    """The routing in force and the calibration figures of a machine-labelled batch (None for a crowd batch)."""
    routing = latest_routing(batch)
    if routing is None:
        return None
    try:
        calibration = calibration_report(batch, routing.labeller)
    except ServiceError:
        calibration = None
    decision = model_to_dict(routing) | {  # the routing's fields, its accepted qids counted
        "accepted": len(routing.accepted),
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
        **{name: getattr(pool, name) for name in ("rank_cutoff", "depth", "magnitude", "tokenizer")},
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
    estimate, ci = None, [None, None]
    if total > 0:
        estimate, *ci = (round(value, 4) for value in plan_inputs.share_interval(count, total, level=LEVEL))
    return {"count": count, "total": total, "estimate": estimate, "ci": ci, "method": "Wilson score"}


#: Who a label is attributed to (the dataset's ``labelled_by``, Croissant's ``prov:wasAttributedTo``).
AGENTS = ("crowd", "in-house", "adjudicator", "machine")


def label_agents(batch: Batch, results: list[dict[str, Any]], machine: dict[str, Any] | None) -> dict[str, dict]:
    """Who made each labelled query's label (qid -> agent): ``labelled_by`` (:data:`AGENTS`) from its
    source; a majority is in-house when every usable vote came from the site's own annotators. A
    machine label names the stage that accepted it and the routing's guarantee (``machine``)."""
    stages: dict[str, dict[str, Any]] = {}
    routing = latest_routing(batch)
    if routing is not None:
        for stage in routing_stages(routing):
            for qid in stage.get("accepted") or []:
                stages.setdefault(str(qid), stage)
    providers: dict[str, set[str]] = {}
    for qid, provider in usable_judgments(batch).values_list("batch_query__qid", "assignment__hit__batch__provider"):
        providers.setdefault(str(qid), set()).add(provider)
    agents: dict[str, dict] = {}
    for row in results:
        source, qid = row["label_source"], str(row["qid"])
        if row["label"] is None or source is None:
            continue
        majority = "in-house" if providers.get(qid, {batch.provider}) == {"local"} else "crowd"
        agent: dict[str, Any] = {
            "labelled_by": {CROWD: majority, ADJUDICATED: "adjudicator", MACHINE: "machine"}[source]
        }
        if source == MACHINE:
            stage = stages[qid]
            agent |= {
                "machine_labeller": stage["labeller"],
                "machine_model": stage["model"],
                "prompt_version": stage["prompt_version"],
                "label_guarantee": (machine or {}).get("guarantee"),
            }
        agents[qid] = agent
    return agents


def machine_labellers(batch: Batch, agents: dict[str, dict]) -> dict[str, dict[str, Any]]:
    """Each machine labeller of the routing in force: how many of the data's labels it made and whether
    it is a language model."""
    routing = latest_routing(batch)
    if routing is None:
        return {}
    names = [stage["labeller"] for stage in routing.stages or []] or [routing.labeller]
    kept = Counter(agent["machine_labeller"] for agent in agents.values() if agent["labelled_by"] == "machine")
    return {
        name: {"labels": kept.get(name, 0), "language_model": is_language_model(name)}
        for name in dict.fromkeys([*names, *kept])
    }


def people_facts(batch: Batch) -> dict[str, Any]:
    """Who saw which query: ``queries`` people answered (any answer; gold left out) and ``annotators``,
    the distribution {distinct annotators: queries} over them."""
    from django.db.models import Count

    rows = (
        Judgment.objects.filter(batch_query__batch__in=crowd_batch_ids(batch), batch_query__is_gold=False)
        .values("batch_query__qid")
        .annotate(people=Count("assignment__worker", distinct=True))
    )
    distribution = Counter(row["people"] for row in rows)
    return {"queries": sum(distribution.values()), "annotators": dict(sorted(distribution.items()))}


def study_facts(batch: Batch, answers: BatchAnswers | None = None) -> dict[str, Any]:
    """Everything a published description of ``batch`` states, from one read of its answers."""
    answers = answers or BatchAnswers(batch)
    results = query_results(batch, answers)
    report = agreement(batch, answers=answers)
    labelled = [r for r in results if r["label"] is not None]
    unlabelled = [r for r in results if r["label"] is None]
    settings = batch_facts(batch)
    options = batch.provider_options or {}
    sources = dict(Counter(row["label_source"] for row in labelled))
    counts = {label: sum(r["label"] == label for r in labelled) for label in LABELS}
    machine = routing_facts(batch)
    agents = label_agents(batch, results, machine)
    labelled_by = {agent: 0 for agent in AGENTS}
    for agent in agents.values():
        labelled_by[agent["labelled_by"]] += 1
    labellers = machine_labellers(batch, agents)
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
            {"filters": list(options.get("filters", []))}
            | {key: options.get(key) for key in ("devices", "estimated_minutes", "bonus")}
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
            "labelled_by": labelled_by,
            "machine_labellers": labellers,
            "language_model_labels": sum(m["labels"] for m in labellers.values() if m["language_model"]),
            "shown_to_people": people_facts(batch),
            "adjudicated": sum(r["adjudicated"] for r in labelled),
            "set_aside": {
                "disputed": sum(r["disputed"] and not r["too_few_votes"] for r in unlabelled),
                "too_few_votes": sum(bool(r["too_few_votes"]) for r in unlabelled),
            },
        },
        "non_gendered_share": share_interval(counts["n"], len(labelled)),
        "source_dataset": source_dataset(batch),
        "machine": machine,
        "audit": audit_facts(batch),
        "results": results,
        "label_agents": agents,
    }
