"""What the platform knows of how a batch's labels were made: the study's facts, read once.

Every published description of a batch states these facts: the dataset card beside an export
(:mod:`annotation.exports.services`), the Hugging Face dataset card and the Croissant
Responsible-AI fields of a published dataset folder, and the methods paragraph of a paper
bundle (``metrics``). They all read them here, so a figure (an agreement interval, a count of
rulings, the non-gendered share) is the same in each.

:func:`study_facts` is a selector: it reads, never writes. Its values are plain JSON-friendly
Python (strings, numbers, lists, dicts; dates as ISO strings, money as strings of USD), so a
writer of any format can use them without knowing the models.
"""

from __future__ import annotations

from typing import Any

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
    usable_judgments,
)
from annotation.results.selectors.state import batch_state
from core.errors import ServiceError
from genderbias.labels import LABEL_NAMES, LABELS
from genderbias.ranking.defaults import LEVEL
from pooling.selectors import named_set_facts

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


def source_query_set(batch: Batch) -> str:
    """The query set the batch's queries were taken from (a pool's source, not the pool), with its origin.

    The query text is the source's: its terms of use are the ones a card names for the text.
    """
    query_set = batch.pool.source if batch.pool else batch.query_set
    if query_set is None:
        return source_of(batch)
    origin = query_set.dataset_source
    return f"{query_set.name} (queries from {origin})" if origin else query_set.name


def queries_from(batch: Batch) -> dict[str, Any] | None:
    """The named data set the batch's queries come from (:mod:`genderbias.datasets`): its name, title,
    source, licence and citation as its query set records them; None for other queries."""
    return named_set_facts(batch.pool.source if batch.pool else batch.query_set)


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
        # What it spent, fees and bonuses included (its crowd batches' for a machine-labelled one), and the
        # assignments answered of those asked for (theirs too): the figures of the dashboard, the batch
        # list and page (annotation.results.selectors.state.batch_state).
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
    from genderbias.stats.intervals import wilson_interval

    if total <= 0:
        return {"count": count, "total": total, "estimate": None, "ci": [None, None], "method": "Wilson score"}
    low, high = wilson_interval(count / total, total, level=LEVEL)
    return {
        "count": count,
        "total": total,
        "estimate": round(count / total, 4),
        "ci": [round(float(low), 4), round(float(high), 4)],
        "method": "Wilson score",
    }


#: Who a label is attributed to (the dataset's ``labelled_by`` column, Croissant's
#: ``prov:wasAttributedTo``): a crowd majority, a majority of the site's own annotators, a
#: researcher's ruling, or a machine labeller.
AGENTS = ("crowd", "in-house", "adjudicator", "machine")


def label_agents(batch: Batch, results: list[dict[str, Any]], machine: dict[str, Any] | None) -> dict[str, dict]:
    """Who made each labelled query's label (qid -> agent), from the platform's records.

    ``labelled_by`` is one of :data:`AGENTS`: the source of the label
    (:func:`annotation.results.selectors.labels.query_results`' ``label_source``) and, for a majority,
    the providers of the batches its usable votes were given in (all on the site's own
    annotators: in-house; any on MTurk or Prolific: the crowd). A
    machine-accepted label names the labeller, model and prompt version of the routing stage
    that accepted it (one stage unless a cascade) and the routing's guarantee
    (``machine``: :func:`routing_facts`).
    """
    stages: dict[str, dict[str, Any]] = {}
    routing = latest_routing(batch)
    if routing is not None:
        for stage in routing.stages or [
            {
                "labeller": routing.labeller,
                "model": routing.model,
                "prompt_version": routing.prompt_version,
                "accepted": routing.accepted,
            }
        ]:
            for qid in stage.get("accepted") or []:
                stages.setdefault(str(qid), stage)
    # A majority is the in-house annotators' when every usable vote on the query came from a batch on
    # the site's own annotators, else the crowd's (a machine-first batch's votes are in its derived batches).
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
    """Each machine labeller of the routing in force (every stage of a cascade): how many of the data's
    labels it made (``labels``, 0 when none was kept) and whether it is a language model
    (:func:`annotation.machine.prelabellers.interface.is_language_model`, its class's declaration)."""
    routing = latest_routing(batch)
    if routing is None:
        return {}
    names = [stage["labeller"] for stage in routing.stages or []] or [routing.labeller]
    kept: dict[str, int] = {}
    for agent in agents.values():
        if agent["labelled_by"] == "machine":
            kept[agent["machine_labeller"]] = kept.get(agent["machine_labeller"], 0) + 1
    return {
        name: {"labels": kept.get(name, 0), "language_model": is_language_model(name)}
        for name in dict.fromkeys([*names, *kept])
    }


def people_facts(batch: Batch) -> dict[str, Any]:
    """Who saw which query, from the answers recorded: ``queries``, how many queries people answered
    (any answer, in the batch or its crowd batches; gold questions left out), and ``annotators``,
    the distribution {distinct annotators: queries} over those queries. A query no one answered
    (a machine-accepted label) was shown to no one."""
    from django.db.models import Count

    rows = (
        Judgment.objects.filter(batch_query__batch__in=crowd_batch_ids(batch), batch_query__is_gold=False)
        .values("batch_query__qid")
        .annotate(people=Count("assignment__worker", distinct=True))
    )
    distribution: dict[int, int] = {}
    for row in rows:
        distribution[row["people"]] = distribution.get(row["people"], 0) + 1
    return {"queries": sum(distribution.values()), "annotators": dict(sorted(distribution.items()))}


def study_facts(batch: Batch, answers: BatchAnswers | None = None) -> dict[str, Any]:
    """Everything a published description of ``batch`` states, from one read of its answers.

    Keys: ``batch`` (settings, :func:`batch_facts`, made JSON-friendly), ``pool``
    (:func:`pool_facts`), ``quality`` (:func:`quality_facts`), ``prolific`` (the study's
    screeners and options, Prolific batches only), ``agreement`` (the agreement report's figures
    with their interval), ``labels`` (queries, labelled, per-label counts, label sources,
    rulings, set-aside queries and why, votes per query), ``non_gendered_share`` (among
    labelled queries, :func:`share_interval`), ``source_dataset`` (:func:`source_dataset`),
    ``machine`` (:func:`routing_facts`), ``audit`` (:func:`annotation.audit.selectors.audit_facts`),
    ``results`` (the per-query rows of :func:`annotation.results.selectors.labels.query_results`) and
    ``label_agents`` (who made each label, :func:`label_agents`).
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
            # Who made the labels (:data:`AGENTS`, every one listed): the card's and methods' shares.
            "labelled_by": labelled_by,
            # Each machine labeller, its labels kept and whether it is a language model (the checklists' LLM use).
            "machine_labellers": labellers,
            "language_model_labels": sum(m["labels"] for m in labellers.values() if m["language_model"]),
            # The queries people answered, and by how many each: what "shown to N annotators" may say.
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
        "audit": audit_facts(batch),  # the expert audit sample, if one was drawn (annotation.audit)
        "results": results,
        "label_agents": agents,
    }
