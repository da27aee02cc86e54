"""Pre-labelling and the calibration report as background jobs, declared once here beside their services.

The calibration report (a bootstrap, the crowd model refitted in each draw) is too long for a request:
the job keeps it in the results cache under :func:`~annotation.machine.report.selectors.report_version`,
started by a researcher's first view and by every sync of the sample (:mod:`.after_sync`). Pre-labelling
may take minutes; a redelivery costs nothing (answers cached, labels replaced). The jobs' kinds and task
names are stored in ``Job`` rows: never change them.
"""

from __future__ import annotations

from dataclasses import asdict
from functools import partial
from typing import Any

from django.conf import settings
from django.db import transaction
from django.urls import reverse

from annotation.machine import calibration_plots
from annotation.machine.prelabellers import prelabeller_names
from annotation.machine.report.selectors import (
    REPORT_STEPS,
    calibration_report,
    kept_report,
    report_generation,
    report_key,
    report_version,
)
from annotation.machine.services.prelabels import (
    OPENAI_UNCONFIGURED,
    PRELABEL_JOB_KIND,
    live_prelabel,
    prelabel_batch,
)
from annotation.models import Batch
from annotation.results.selectors.cache import remembered
from core import methods
from core.errors import ServiceError, StateError
from core.jobs import background_job
from core.models import Job
from core.progress import Progress
from core.selectors import chat_settings
from core.services.once import claim, live_job
from genderbias.errors import InputError


# ValueError: an unknown labeller, or samples given to one that takes none (bad input, no retry).
@background_job(
    PRELABEL_JOB_KIND, task="annotation.tasks.prelabel_task", failures=(ServiceError, InputError, ValueError)
)
def prelabel_job(job: Job, batch_id: int, labeller: str, samples: int | None = None, train: str | None = None) -> dict:
    batch = Batch.objects.get(pk=batch_id)
    summary = prelabel_batch(batch, labeller, samples=samples, train=train)
    usage, cv_accuracy = summary.usage, summary.cv_accuracy
    job.result = {
        "batch": batch.name,
        **asdict(summary),
        "labelled": summary.labelled,
        "url": reverse("annotation:batch-machine", args=[batch.name]),
    }
    job.result["usage"] = {k: str(v) if k == "cost" else v for k, v in asdict(usage).items() if k != "separate_calls"}
    mean = "-" if summary.mean_confidence is None else f"{summary.mean_confidence:.3f}"
    job.message = (
        f"{summary.labelled} quer{'y' if summary.labelled == 1 else 'ies'} labelled by {summary.labeller} "
        f"({summary.model}, {summary.prompt_version}), {summary.unlabelled} without a label; mean confidence {mean}"
        + (f"; cross-validated accuracy {cv_accuracy:.3f}" if cv_accuracy is not None else "")
        + (f"; {summary.cv_note}" if summary.cv_note else "")
        + (f"; {usage.requests} request(s), ${usage.cost}" if usage.requests else "")
    )
    return job.result


def start_prelabel(batch: Batch, labeller: str, *, samples: int | None = None, train: str | None = None) -> Job:
    """Pre-label ``batch`` in the background; input no run could accept is refused at once rather than
    queued as a job that can only fail."""
    if labeller not in prelabeller_names():
        raise ServiceError(f"unknown pre-labeller {labeller!r}; known: {', '.join(prelabeller_names())}")
    if samples is not None and (labeller != "openai" or samples < 1):
        raise ServiceError("samples: only the openai pre-labeller takes samples, at least 1")
    if labeller == "openai" and not chat_settings().configured:
        raise ServiceError(OPENAI_UNCONFIGURED)
    args = [batch.pk, labeller, samples, *([] if train is None else [train])]  # train: the trained labeller's only
    with transaction.atomic():  # one job per batch and machine at a time (decided under the batch's row lock)
        claim(batch, lambda: live_prelabel(batch, labeller, train))
        return prelabel_job.start(f"Pre-label {batch.name} with {labeller}", *args, of=batch)


CALIBRATION_REPORT_KIND = "annotation.calibration_report"
#: Why a viewer finds no report (no job of the sample's state yet).
NOT_COMPUTED = "the report of the latest answers is not computed yet; a researcher's view or the next sync starts it"
#: The job's last step, after :data:`~annotation.machine.report.selectors.REPORT_STEPS`.
DRAWING = "drawing the figures"


def report_with_figures(batch: Batch, progress=None) -> dict[str, Any]:
    """The calibration report of ``batch`` and its two SVG figures (computed, not read)."""
    report = calibration_report(batch, progress=progress)
    if progress is not None:
        progress(DRAWING)
    return {
        "report": report,
        "reliability_svg": calibration_plots.reliability_svg(report.get("reliability") or []),
        "proportions_svg": calibration_plots.proportions_svg(report["proportions"]),
        # The methods that computed it, kept with it (core.methods).
        "methods": methods.current(),
    }


def _step(
    job: Job, names: tuple[str, ...], name: str, refitted: int | None = None, bootstrap: int | None = None
) -> None:
    """``job``'s progress at the step ``name`` of ``names`` (:class:`core.progress.Progress`); a step that
    refits the crowd model says how many of its bootstrap draws are refitted."""
    done, total = names.index(name), len(names)
    said = name if refitted is None else f"{name}: {refitted:,} of {bootstrap:,} refits"
    Progress(f"{said} (step {done + 1} of {total})", total, job=job, bar=False, done=done)


# StateError (a ServiceError): too few crowd labels yet; the page shows the job's message as why.
@background_job(CALIBRATION_REPORT_KIND, task="annotation.tasks.calibration_report_task", failures=(ServiceError,))
def calibration_report_job(job: Job, batch_id: int, version: str) -> dict:
    """Compute ``batch``'s calibration report and keep it under ``version`` (what was kept for it already
    is not computed again)."""
    batch = Batch.objects.get(pk=batch_id)
    remembered(
        report_key(batch, version),
        lambda: report_with_figures(batch, partial(_step, job, (*REPORT_STEPS, DRAWING))),
        generation=report_generation(batch, version),
    )
    url = reverse("annotation:batch-calibration", args=[batch.name])
    job.result = {"batch": batch.name, "version": version, "url": url}
    job.message = f"Calibration report of {batch.name} computed"
    return job.result


def last_report_job(batch: Batch, version: str) -> Job | None:
    """The latest report job of ``batch`` at ``version`` (live, done or failed), if any."""
    return (
        Job._base_manager.filter(kind=CALIBRATION_REPORT_KIND, arguments__0=batch.pk, arguments__1=version)
        .order_by("-pk")
        .first()
    )


def start_calibration_report(batch: Batch, version: str | None = None) -> Job | None:
    """Compute ``batch``'s calibration report in the background at ``version`` (default: now); the live
    job for that state if one is under way (under the batch's row lock); None without a sample."""
    version = version or report_version(batch)
    if version is None:
        return None
    with transaction.atomic():
        claim(batch, lambda: None)  # the lock: a concurrent start commits its Job before this reads
        return live_job(CALIBRATION_REPORT_KIND, [batch.pk, version]) or calibration_report_job.start(
            f"Calibration report of {batch.name}", batch.pk, version, of=batch
        )


def report_or_job(batch: Batch, *, may_start: bool) -> tuple[dict[str, Any] | None, Job | None]:
    """What the page and the API show of ``batch``'s calibration report: ``(figures, None)`` as kept for
    the sample's state now, else ``(None, job)``: the job computing it (started here when ``may_start``:
    a viewer only waits). With the results cache off nothing can be kept: computed here. A ``StateError``
    without a sample (``calibration_report``'s), with no job (:data:`NOT_COMPUTED`) or a failed one."""
    version = report_version(batch)
    if version is None or not settings.RESULTS_CACHE_SECONDS:
        return report_with_figures(batch), None
    figures = kept_report(batch, version)
    if figures is not None:
        return figures, None
    job = last_report_job(batch, version)
    # Done yet not kept: the bounded cache let it go; computed again.
    if (job is None or job.status == Job.Status.DONE) and may_start:
        job = start_calibration_report(batch, version)
        job.refresh_from_db()
        if job.status == Job.Status.DONE:  # run at its commit, in this thread (JOB_LOCAL_RUNNER=inline)
            figures = kept_report(batch, version)
            if figures is not None:
                return figures, None
    if job is None:
        raise StateError(NOT_COMPUTED)
    if job.status == Job.Status.FAILED:
        raise StateError(job.message or "the calibration report's computation failed")
    return None, job
