"""A study plan before the crowd is paid: how many non-gendered queries, pooled queries and dollars a comparison
of two runs needs (:func:`plan_study`; the computation is :mod:`genderbias.stats.power`; docs/metrics.md,
"Planning a study"). Reads only, in four steps: the pilot's per-query differences (:func:`~metrics.services.pilot.
find_pilot`); the pool's non-gendered share (:func:`non_gendered_share`); the cost on each provider by the batch
form's own estimate, and the crowd's share after machine pre-labelling (:func:`costs`, :func:`crowd_share`); the
expert audit sample (:func:`audit_plan`). The test sized is the pilot report's: the paired t-test, or for a report
on a batch's labels its combined test, to first order the t-test at Δ/r (:func:`label_factor`).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from django.db.models import Q

from annotation import selectors as annotation_selectors
from annotation import services as annotation_services
from annotation.models import Batch, Export, Provider
from core.errors import ServiceError
from genderbias.crowd.audit_size import suggested_audit_size
from genderbias.labels import LABELS, NON_GENDERED
from genderbias.stats import plan_inputs, power
from pooling.models import Pool

from ..models import Report
from .pilot import DEFAULT_CUTOFF, Pilot, find_pilot

if TYPE_CHECKING:
    from collections.abc import Callable


#: The defaults of a plan (the command's, the API's and the panel's).
DEFAULT_POWER = 0.8
DEFAULT_ALPHA = 0.05
#: Seconds an expert takes to label one audited query (one at a time, blind to the crowd), for the audit's
#: cost in the researcher's time (the command's ``--audit-seconds``, the API's ``audit_seconds``).
DEFAULT_AUDIT_SECONDS = 20.0
#: Most simulated studies a command may ask for (the API and the page: at most power.DEFAULT_DRAWS).
MAX_DRAWS = 20000


@dataclass(frozen=True)
class Share:
    """A proportion with its Wilson 95% interval and where it was estimated."""

    share: float
    ci_low: float
    ci_high: float
    count: int
    total: int
    source: str


def _share(count: int, total: int, source: str) -> Share:
    share, low, high = plan_inputs.share_interval(count, total)
    return Share(share, low, high, count, total, source)


@dataclass(frozen=True)
class CostSettings:
    """The batch settings a plan prices (the batch form's defaults unless given)."""

    reward: Decimal = Decimal("0.05")
    assignments_per_query: int = 3
    queries_per_hit: int = 10
    providers: tuple[str, ...] = field(default_factory=lambda: tuple(Provider.values))


def _pool_batches(pool: Pool) -> list[Batch]:
    """The pool's own batches: made on the pool, or on its pooled queries' query set (a batch made with
    ``--query-set POOL-queries`` has no pool of its own but labels this pool's queries, and no other's)."""
    return list(
        Batch.objects.filter(Q(pool=pool) | Q(query_set=pool.queries_id), parent__isnull=True)
        .exclude(status=Batch.Status.CANCELLED)
        .order_by("created", "pk")
    )


def non_gendered_share(pool: Pool, pilot_query_set: str | None = None) -> Share:
    """The share of ``pool``'s queries that are non-gendered, with its Wilson 95% interval: from the pool's batches
    labelled so far (every label source), else the export of this pool's labels that made the pilot's query set,
    else the SIGIR 2020 annotated set, said so. Never another pool's share."""
    labels: dict[str, str] = {}
    names = []
    for batch in _pool_batches(pool):
        found = annotation_selectors.labels_with_sources(batch)
        if found:
            names.append(batch.name)
            labels |= {qid: source.label for qid, source in found.items()}
    if labels:
        count = sum(label == NON_GENDERED for label in labels.values())
        return _share(count, len(labels), f"labelled so far in batch(es) {', '.join(names)} of pool {pool.name}")
    if pilot_query_set:
        # Only an export of this pool's labels: another pool's share is not this pool's (issue 58).
        export = (
            Export.objects.filter(query_set__name=pilot_query_set)
            .filter(Q(batch__pool=pool) | Q(batch__query_set=pool.queries_id))
            .select_related("batch")
            .order_by("-created")
            .first()
        )
        if export is not None:
            counts = {label: int(export.counts.get(label, 0)) for label in LABELS}
            total = sum(counts.values())
            if total:
                return _share(
                    counts[NON_GENDERED],
                    total,
                    f"the labels of batch {export.batch.name}, whose export is the pilot's query set {pilot_query_set}",
                )
    count, total = plan_inputs.SIGIR2020_NON_GENDERED
    return _share(
        count, total, "assumed: the SIGIR 2020 annotated queries (Rekabsaz & Schedl 2020), no labels of this pool yet"
    )


def crowd_share(pool: Pool) -> Share | None:
    """The share of a routed batch's queries the crowd labels (no accepted machine label); None if none routed."""
    queries = crowd = 0
    names = []
    for batch in _pool_batches(pool):
        routing = annotation_selectors.latest_routing(batch)
        if routing is None:
            continue
        size = batch.queries.filter(is_gold=False).count()
        if not size:
            continue
        names.append(batch.name)
        queries += size
        crowd += size - len(set(routing.accepted))
    if not queries:
        return None
    return _share(crowd, queries, f"routing of batch(es) {', '.join(names)}")


def costs(queries: int, settings: CostSettings = CostSettings()) -> dict[str, float]:
    """USD to annotate ``queries`` queries on each provider: the batch form's own estimate."""
    result = {}
    for provider in settings.providers:
        batch_settings = annotation_services.BatchSettings(
            provider=provider,
            reward=Decimal(settings.reward),
            assignments_per_query=settings.assignments_per_query,
            queries_per_hit=settings.queries_per_hit,
        )
        result[provider] = float(Decimal(annotation_services.estimate_cost(batch_settings, queries)["total"]))
    return result


def plan_study(
    run_a: str,
    run_b: str,
    metric: str,
    delta: float,
    *,
    cutoff: int = DEFAULT_CUTOFF,
    variant: str | None = None,
    query_set: str | None = None,
    report: str | None = None,
    pool: str | None = None,
    power_target: float = DEFAULT_POWER,
    alpha: float = DEFAULT_ALPHA,
    draws: int = power.DEFAULT_DRAWS,
    seed: int = 0,
    cost_settings: CostSettings = CostSettings(),
    audit_width: float | None = None,
    audit_seconds: float = DEFAULT_AUDIT_SECONDS,
    on_step: Callable[[str, int, float], None] | None = None,
    bar: bool = False,
    compute: bool = True,
) -> dict[str, Any]:
    """The study plan as a JSON-ready dict (keys in docs/metrics.md, "Planning a study").

    ``compute=False`` (the page and the API): the pilot must be a stored report."""

    if not (isinstance(delta, (int, float)) and math.isfinite(delta) and delta > 0):
        raise ServiceError(f"Δ must be a positive number, got {delta!r}")
    if not 0 < power_target < 1:
        raise ServiceError(f"the power must be in (0, 1), got {power_target}")
    if not 0 < alpha < 1:
        raise ServiceError(f"α must be in (0, 1), got {alpha}")
    if power_target <= alpha:
        raise ServiceError(f"the power ({power_target}) must exceed α ({alpha})")
    if not 100 <= draws <= MAX_DRAWS:
        raise ServiceError(f"draws must be between 100 and {MAX_DRAWS}, got {draws}")
    if audit_width is not None and not (math.isfinite(audit_width) and audit_width > 0):
        raise ServiceError(f"the audit's target width must be a positive number, got {audit_width!r}")
    if not (math.isfinite(audit_seconds) and audit_seconds > 0):
        raise ServiceError(f"the seconds per audited query must be a positive number, got {audit_seconds!r}")
    pool_obj = None
    if pool:
        pool_obj = Pool.objects.filter(name=pool).first()
        if pool_obj is None:
            raise ServiceError(f"no pool named {pool!r}")
    pilot = find_pilot(
        run_a,
        run_b,
        metric,
        cutoff=cutoff,
        variant=variant,
        query_set=query_set,
        report=report,
        bar=bar,
        compute=compute,
    )
    d = pilot.differences
    mean_difference, sd = plan_inputs.pilot_moments(d)
    current = len(d)
    labels = label_factor(pilot, pilot.stored)
    r = labels.factor if labels else 1.0
    tested = plan_inputs.tested_difference(delta, r)  # a report on a batch's labels: the t-test at Δ/r
    found = power.sample_size(d, tested, alpha, power_target, draws, seed, on_step=on_step)
    plan: dict[str, Any] = {
        "pilot": {
            "source": pilot.source,
            "report": pilot.report,
            "query_set": pilot.query_set,
            "runs": [run_a, run_b],
            "metric": metric,
            "variant": pilot.variant,
            "cutoff": pilot.cutoff,
            "queries": current,
            "mean_difference": mean_difference,
            "sd_difference": sd,
        },
        "test": _test(labels),
        "note": _test_note(pilot.stored, labels),
        "label_width_factor": labels.factor if labels else None,
        "label_width_factor_source": labels.source if labels else None,
        "delta": float(delta),
        "power": power_target,
        "alpha": alpha,
        "draws": draws,
        "seed": seed,
        "monte_carlo_se": power.monte_carlo_se(power_target, draws),
        "n_queries": found.n,
        "simulated_power_at_n": found.power,
        "simulated_power_at_n_se": found.power_se,
        "power_statement": power_statement(found.power, found.power_se, draws),
        "search": {"n": found.search_n, "power": found.search_power, "steps": [list(s) for s in found.steps]},
        "n_queries_normal": found.normal_n,
        "current_n": current,
        "minimum_detectable_difference": _finite(
            r * power.minimum_detectable_difference(d, current, alpha, power_target, draws, seed)
        ),
        "minimum_detectable_difference_normal": r * power.normal_mdd(sd, current, alpha, power_target),
        "power_at_current_n": power.simulated_power(d, tested, current, alpha, draws, seed),
        "power_at_current_n_normal": power.normal_power(tested, sd, current, alpha),
    }
    if pool_obj is not None:
        plan |= _pool_plan(pool_obj, pilot, found.n, cost_settings)
    plan["audit"] = audit_plan(
        plan, sd, delta if audit_width is None else audit_width, audit_width is None, audit_seconds
    )
    return plan


def audit_plan(plan: dict[str, Any], sd: float, width: float, width_is_delta: bool, seconds: float) -> dict[str, Any]:
    """The audit sample of the planned batch: its size for a 95% interval of full ``width`` of the label-corrected
    difference (σ: ``sd``), at least the site's default audit and at most the batch, and an expert's hours for it."""
    if "non_gendered_share" in plan:
        share, share_source = plan["non_gendered_share"]["share"], f"pool {plan['pool']}"
    else:
        count, total = plan_inputs.SIGIR2020_NON_GENDERED
        share, share_source = count / total, f"assumed: SIGIR 2020's {count:,} of {total:,} (no pool given)"
    batch = plan.get("pooled_to_annotate")
    if batch is None and plan["n_queries"] is not None:
        batch = plan_inputs.pooled_to_annotate(plan["n_queries"], share)
    for_width = plan_inputs.audit_size_for_width(sd, share, width)
    minimum = suggested_audit_size(share) if batch is None else min(batch, suggested_audit_size(share))
    size = max(for_width, minimum)
    return {
        "size": size,
        "size_for_width": for_width,
        "minimum": minimum,
        "target_width": float(width),
        "target_width_source": "Δ (default)" if width_is_delta else "given",
        "sd": sd,
        "non_gendered_share": share,
        "non_gendered_share_source": share_source,
        "batch_queries": batch,
        "whole_batch": batch is not None and size >= batch,
        "seconds_per_query": float(seconds),
        "hours": plan_inputs.audit_hours(size, seconds),
        "method": (
            "a random sample of the batch's queries labelled by an expert blind to the crowd's labels; every "
            "label-corrected figure then gets its prediction-powered (PPI++) interval, which rests on no crowd "
            "model. Size: ⌈(2 z σ / w)² / share⌉ (the sample alone's interval, which PPI++ is not wider than), "
            "at least the site's default audit, ⌈25 / share⌉ (about 25 non-gendered queries) and 50, at most the batch"
        ),
    }


def power_statement(value: float | None, se: float | None, draws: int) -> str | None:
    """The plan's power at its n, re-estimated on independent draws, to its s.e.'s first significant digit."""
    if value is None or se is None:
        return None
    decimals = max(2, -math.floor(math.log10(se))) if se > 0 else 3
    return f"power {value:.{decimals}f} ± {se:.{decimals}f} (Monte-Carlo s.e., {draws:,} draws)"


@dataclass(frozen=True)
class LabelFactor:
    """How much wider a report on a batch's labels makes the planned difference's interval, and which rows say so."""

    factor: float
    source: str


def label_factor(pilot: Pilot, report: Report | None) -> LabelFactor | None:
    """r from the pilot's stored ``report`` on a batch's labels: the planned pair's own row when one run is the
    baseline, else the median over its runs (said so); None for a report on a query set or without intervals.
    r below 1 is kept: the report's test then needs fewer queries than the t-test."""
    if report is None or not report.on_batch or report.baseline is None:
        return None
    rows = list(
        report.results.select_related("run").filter(
            metric=pilot.metric, variant=pilot.variant, cutoff=pilot.cutoff,
            difference_low__isnull=False, difference_high__isnull=False,
            difference_combined_low__isnull=False, difference_combined_high__isnull=False,
        )
    )  # fmt: skip
    baseline = report.baseline.name
    planned = {pilot.run_a, pilot.run_b}
    if baseline in planned:
        other = (planned - {baseline}).pop()
        chosen = [row for row in rows if row.run.name == other]
        where = f"{other} against {baseline}"
    else:
        chosen = rows
        where = (
            f"the median over its {len(rows)} runs against {baseline}: neither planned run is its baseline, "
            "so the report does not test this pair"
        )
    factor = plan_inputs.label_width_factor(
        [row.difference_high - row.difference_low for row in chosen],
        [row.difference_combined_high - row.difference_combined_low for row in chosen],
    )
    if factor is None:
        return None
    return LabelFactor(factor, f"report {report.name}, {pilot.metric}[{pilot.variant}]@{pilot.cutoff}: {where}")


def _test(labels: LabelFactor | None) -> str:
    """The test the plan sizes, in words."""
    if labels is None:
        return "two-sided paired t-test of A against B (genderbias.stats.significance.paired_t_test), a family of one"
    return (
        "the combined test of a report on a batch's labels (queries and labels, genderbias.crowd.label_uncertainty), "
        f"a family of one: to first order the paired t-test at Δ/r, r = {labels.factor:.2f} the combined "
        f"interval's width over the query-only one's ({labels.source})"
    )


def _test_note(report: Report | None, labels: LabelFactor | None) -> str | None:
    """Where the pilot's own report tests otherwise than the plan assumes, say so."""
    if report is not None and report.on_batch and labels is None:
        return (
            f"report {report.name} is on a batch's labels: it marks significance by the combined test "
            "(labels' uncertainty too, Holm over every run against the baseline), which needs more "
            "queries than this plan for the paired t-test; it has no difference against a baseline to size it by"
        )
    return None


def _finite(value: float) -> float | None:
    """JSON has no infinity: an unreachable figure is null."""
    return value if math.isfinite(value) else None


def _pool_plan(pool: Pool, pilot: Pilot, needed: int | None, settings: CostSettings) -> dict[str, Any]:
    share = non_gendered_share(pool, pilot.query_set)
    if share.count == 0:
        raise ServiceError(f"no query labelled so far in pool {pool.name} is non-gendered: no share to plan with")
    part: dict[str, Any] = {
        "pool": pool.name,
        "non_gendered_share": asdict(share),
        "pooled_to_annotate": None,
        "pooled_to_annotate_range": None,
        "cost": None,
        "cost_settings": {
            "reward": str(settings.reward),
            "assignments_per_query": settings.assignments_per_query,
            "queries_per_hit": settings.queries_per_hit,
        },
        "machine": None,
    }
    if needed is None:
        return part
    pooled = plan_inputs.pooled_to_annotate(needed, share.share)
    part["pooled_to_annotate"] = pooled
    part["pooled_to_annotate_range"] = [
        plan_inputs.pooled_to_annotate(needed, share.ci_high),
        plan_inputs.pooled_to_annotate(needed, share.ci_low) if share.ci_low > 0 else None,
    ]
    part["pool_queries"] = pool.queries.queries.count()
    part["cost"] = costs(pooled, settings)
    routed = crowd_share(pool)
    if routed is not None:
        to_crowd = math.ceil(pooled * routed.share - 1e-9)
        part["machine"] = {
            "crowd_share": asdict(routed),
            "crowd_queries": to_crowd,
            "cost": costs(to_crowd, settings) if to_crowd else dict.fromkeys(settings.providers, 0.0),
        }
    return part
