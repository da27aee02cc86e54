"""Label sensitivity: how the way a batch's crowd labels are aggregated, and what is done with its disputed
queries, moves the runs' bias (the computation is pure: :mod:`genderbias.crowd.sensitivity`).

The page and the API never compute it in the request: they ask for it (:func:`ask_label_sensitivity`), which
returns the kept result of the same settings or a job computing it; the command computes it itself.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import asdict
from typing import TYPE_CHECKING

from django.db import transaction
from django.urls import reverse
from django.utils import timezone

from annotation import selectors
from annotation import selectors as annotation_selectors
from annotation.services import reading_answers
from core.errors import ServiceError, StateError
from core.jobs import background_job
from core.models import Job
from genderbias.numbers import NumberError, parse_decimal
from genderbias.ranking.defaults import CONFIDENCE_THRESHOLD, DEFAULT_CUTOFFS, LABEL_SOURCE
from genderbias.text.wordlists import GenderWords
from metrics.models import LabelSensitivityResult
from metrics.services.reports import StepProgress, compute_batch_report
from pooling.models import Run

from .report_settings import DEFAULT_REPORT_SETTINGS, ReportSettings
from .reports import per_query_values

if TYPE_CHECKING:
    from genderbias.crowd.sensitivity import LabelSensitivity


#: At most this many dependences in one check (each recomputes the figures), each within ±:data:`MAX_DEPENDENCE`
#: (odds tilted by exp(D·z): past 5, one standard deviation multiplies the odds of a wrong label by e⁵ ≈ 150).
MAX_DEPENDENCES = 10
MAX_DEPENDENCE = 5.0


def parse_dependences(text: str) -> tuple[float, ...]:
    """``"0,0.5,1"`` → ``(0.0, 0.5, 1.0)``, each within the bounds above; ServiceError naming the bad part."""
    parts = [part for part in text.split(",") if part.strip()]
    if not parts:
        raise ServiceError("give at least one dependence, e.g. 0,0.5,1")
    if len(parts) > MAX_DEPENDENCES:
        raise ServiceError(f"at most {MAX_DEPENDENCES} dependences (got {len(parts)})")
    values = []
    for part in parts:
        try:
            values.append(parse_decimal(part, "dependence", minimum=-MAX_DEPENDENCE, maximum=MAX_DEPENDENCE))
        except NumberError as exc:
            raise ServiceError(f"bad dependence {part.strip()!r}: {exc.problem}; give numbers, e.g. 0,0.5,1") from None
    return tuple(values)


def _checked(report_settings: ReportSettings, threshold: float, runs: Sequence[Run]) -> list[Run]:
    """The runs, once the settings and the confidence threshold pass their checks (ServiceError otherwise)."""
    report_settings.validate()
    if not 0 <= threshold <= 1:
        raise ServiceError(f"the confidence threshold must be between 0 and 1, got {threshold}")
    runs = list(runs)
    if not runs:
        raise ServiceError("give at least one run")
    return runs


def label_sensitivity(batch, runs: Sequence[Run], *args, **kwargs) -> LabelSensitivity:
    """:func:`_label_sensitivity`, reading the batch's answers as a use: a correction after it is refused."""
    with reading_answers(batch, "A label-sensitivity run"):
        return _label_sensitivity(batch, runs, *args, **kwargs)


def _label_sensitivity(
    batch,
    runs: Sequence[Run],
    report_settings: ReportSettings = DEFAULT_REPORT_SETTINGS,
    *,
    threshold: float = CONFIDENCE_THRESHOLD,
    wordlist: GenderWords | None = None,
    representative: GenderWords | None = None,
    background: Run | None = None,
    job: Job | None = None,
    bar: bool = True,
    dependence: Sequence[float] = (),
    baseline: Run | None = None,
) -> LabelSensitivity:
    """Bias of ``runs`` on the non-gendered set of ``batch`` under every aggregation × disputed policy.

    The per-query values are computed once over every candidate query, then each set is summarised as a report
    would be, so majority/drop equals ``bias_report`` on the exported set with the same settings (with no query
    adjudicated: the export applies rulings first). ``dependence``: also the check for labelling errors that depend
    on the rankings (:func:`genderbias.crowd.label_dependence.dependence_table`), against ``baseline`` (default the
    first run).
    """
    from genderbias.crowd import sensitivity
    from genderbias.ranking.ranked_counts import validate_cutoffs

    from ..formatting import order_sensitivity

    runs = _checked(report_settings, threshold, runs)
    judgments = selectors.judgments_frame(batch)
    if judgments.empty:
        raise ServiceError(f"batch {batch.name!r} has no usable judgments yet")
    labels = sensitivity.aggregated_labels(
        judgments,
        min_votes=selectors.min_votes(batch),
        gold_judgments=selectors.gold_judgments(batch),
        gold=selectors.gold_labels(batch),
    )
    sets = sensitivity.non_gendered_sets(labels, adjudicated=selectors.adjudicated_labels(batch), threshold=threshold)
    # A batch labelled by a machine first: crowd only, machine only and the routed mix as rows too.
    sets |= {(LABEL_SOURCE, source): qids for source, qids in selectors.non_gendered_by_source(batch).items()}
    candidates = sorted(set().union(*sets.values()))
    if not candidates:
        raise ServiceError(f"no query of batch {batch.name!r} is labelled non-gendered under any aggregation")
    per_query = per_query_values(
        candidates,
        runs,
        report_settings,
        wordlist=wordlist,
        representative=representative,
        background=background,
        job=job,
        bar=bar,
        source=f"the non-gendered queries of batch {batch.name!r}",
    )
    table = sensitivity.sensitivity_table(
        per_query, sets, samples=report_settings.bootstrap_samples, seed=report_settings.seed
    )
    table = order_sensitivity(table, [run.name for run in runs])
    if background is None:
        normalisation = "by the collection"
    elif report_settings.nfairr_normaliser == "exact":
        normalisation = f"by {background.name} alone (exact original definition)"
    else:
        normalisation = f"by {background.name} together with every run given"
    dependence_rows, baseline_name = None, None
    if dependence:
        from genderbias.crowd import label_dependence
        from genderbias.crowd.simulation import dependence as simulated_dependence
        from genderbias.stats import significance

        base = baseline or runs[0]
        baseline_name = base.name
        computed = compute_batch_report(
            batch, runs, report_settings, baseline=base, wordlist=wordlist, representative=representative,
            background=background, job=job, bar=bar,
        )  # fmt: skip
        dependence_rows = label_dependence.dependence_table(
            significance.wide_values(computed.per_query), computed.labels.table, computed.summary, base.name,
            [float(d) for d in dependence], simulate=simulated_dependence.dependence_simulation(computed.labels.model, report_settings.seed),
            progress=StepProgress(job, bar),
        )  # fmt: skip
    return sensitivity.LabelSensitivity(
        batch=batch.name,
        runs=[run.name for run in runs],
        cutoffs=validate_cutoffs(report_settings.cutoffs),
        threshold=threshold,
        table=table,
        rankings=sensitivity.ranking_changes(table),
        set_sizes={key: len(qids) for key, qids in sets.items()},
        nfairr_normalisation=normalisation,
        dependence=dependence_rows,
        baseline=baseline_name,
    )


@background_job("label-sensitivity", task="metrics.tasks.label_sensitivity_task")
def label_sensitivity_job(
    job: Job,
    batch_id: int,
    run_ids: list[int],
    report_settings: dict,
    threshold: float,
    background_id: int | None = None,
    kept_id: int | None = None,
) -> int:
    """Label sensitivity into its kept row (``kept_id``); a redelivery simply computes it again."""
    from ..formatting import sensitivity_result

    runs = sorted(Run.objects.filter(pk__in=run_ids), key=lambda r: run_ids.index(r.pk))
    report_settings = {**report_settings, "cutoffs": tuple(report_settings.get("cutoffs", DEFAULT_CUTOFFS))}
    result = label_sensitivity(
        annotation_selectors.batches().get(pk=batch_id),
        runs,
        ReportSettings(**report_settings),
        threshold=threshold,
        background=Run.objects.get(pk=background_id) if background_id else None,
        job=job,
        bar=False,
    )
    LabelSensitivityResult.objects.filter(pk=kept_id).update(result=sensitivity_result(result), computed=timezone.now())
    job.result = {"url": reverse("metrics:label-sensitivity") + f"?result={kept_id}", "kept": kept_id}
    job.message = f"Label sensitivity of {result.batch}: {len(result.table)} values"
    return job.pk


def sensitivity_key(
    batch, answers: str, runs: Sequence[Run], report_settings: ReportSettings, threshold: float, background: Run | None
) -> tuple[str, dict]:
    """The key of a kept label-sensitivity result and the settings it stands for: everything the figures depend on."""
    settings = {
        "runs": [run.name for run in runs],
        "background": background.name if background else None,
        "threshold": float(threshold),
        **asdict(report_settings),
    }
    settings["cutoffs"] = list(settings["cutoffs"])
    identity = {"batch": batch.pk, "answers": answers, "runs": [run.pk for run in runs], "settings": settings}
    identity["background"] = background.pk if background else None
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest(), settings


#: A viewer's answer when the settings asked for are neither computed nor being computed.
NOT_STARTED_FOR_A_VIEWER = (
    "the label sensitivity of these settings is not computed yet, and a viewer's request starts no job: "
    "a researcher or owner of the batch's group asks for it (the page's form or this request), then it is "
    "kept for everyone"
)


def ask_label_sensitivity(
    batch,
    runs: Sequence[Run],
    report_settings: ReportSettings,
    *,
    threshold: float = CONFIDENCE_THRESHOLD,
    background: Run | None = None,
    may_start: bool,
) -> LabelSensitivityResult:
    """The kept label sensitivity of these settings: computed already (``result`` filled), being computed (its
    ``job`` in flight), or asked for now (a job started once the caller's transaction commits).

    One computation per settings and state of the answers, however often and by whomever it is asked for; past the
    bound on jobs in flight, :class:`core.jobs.TooManyJobs`. ``may_start``: whether the asker may act on the batch;
    a viewer's ask where nothing is kept or under way is refused (``StateError``) and writes nothing, so a viewer's
    GET never starts a job (they would hold the group's jobs in flight)."""
    runs = _checked(report_settings, threshold, runs)
    answers = annotation_selectors.answers_version(batch)
    key, settings = sensitivity_key(batch, answers, runs, report_settings, threshold, background)
    with transaction.atomic():
        kept, _ = LabelSensitivityResult._base_manager.get_or_create(
            key=key,
            defaults={"batch": batch, "settings": settings, "answers_version": answers, "group_id": batch.group_id},
        )
        kept = (
            LabelSensitivityResult._base_manager.select_for_update(of=("self",)).select_related("job").get(pk=kept.pk)
        )
        if kept.result is not None:
            return kept
        if kept.job is not None and kept.job.status in (Job.Status.PENDING, Job.Status.RUNNING):
            return kept
        if not may_start:  # the row just made, if any, goes with the transaction
            raise StateError(NOT_STARTED_FOR_A_VIEWER)
        kept.job = label_sensitivity_job.start(
            f"Label sensitivity of {batch.name}",
            batch.pk,
            [run.pk for run in runs],
            asdict(report_settings),
            threshold,
            background.pk if background else None,
            kept.pk,
            of=batch,
        )
        kept.save(update_fields=["job"])
    return kept
