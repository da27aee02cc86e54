"""Pre-labelling and the calibration report as background jobs, declared once here beside their services.

The calibration report (``annotation.calibration_report``): a bootstrap, the crowd model
refitted in each of its draws, the alt-test and PPI++ take seconds to minutes, too long for a
request. The job computes it with its two figures, says which step it is at (``job.result["step"]``,
``job.done`` of ``job.total``) and keeps it in the results cache under the batch's
:func:`~annotation.machine.report.selectors.report_version`, where the page reads it
(:func:`~annotation.machine.report.selectors.kept_report`). It is started by the page's first view of a
new version (researchers only: a viewer waits) and by every sync of the calibration sample
(:func:`annotation.machine.services.after_sync.report_after_sync`, a sync step), so the first view after new answers finds it done or
under way. One job per batch and version at a time (:func:`core.services.once.live_job`).

Pre-labelling is a job because a chat model may take minutes; a redelivery reruns it, which costs
nothing: the chat model's answers are cached and the labels of the same labeller are replaced,
not added. The job's kind and Celery task name are stored in ``Job.kind`` and ``Job.task`` and
never change (they were declared in ``annotation.crowd.services.background`` before machine
declared its own jobs).
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.urls import reverse

from annotation.machine.report.selectors import (
    REPORT_STEPS,
    calibration_report,
    kept_report,
    report_generation,
    report_key,
    report_version,
)
from annotation.machine.services.prelabels import PRELABEL_JOB_KIND, live_prelabel, prelabel_batch
from annotation.models import Batch
from annotation.results.selectors.cache import remembered
from core import methods
from core.errors import ServiceError
from core.jobs import background_job
from core.models import Job
from core.progress import Progress
from core.services.once import claim, live_job
from genderbias.errors import InputError


def _machine_url(batch: Batch) -> str:
    return reverse("annotation:batch-machine", args=[batch.name])


# ValueError: an unknown labeller, or samples given to one that takes none (bad input, no retry).
@background_job(
    PRELABEL_JOB_KIND, task="annotation.tasks.prelabel_task", failures=(ServiceError, InputError, ValueError)
)
def prelabel_job(job: Job, batch_id: int, labeller: str, samples: int | None = None, train: str | None = None) -> dict:
    batch = Batch.objects.get(pk=batch_id)
    # ``train`` only when given: only the trained labeller takes it.
    extra = {} if train is None else {"train": train}
    summary = prelabel_batch(batch, labeller, samples=samples, **extra)
    usage = summary.usage
    cv_accuracy = getattr(summary, "cv_accuracy", None)
    job.result = {
        "batch": batch.name,
        "labeller": summary.labeller,
        "model": summary.model,
        "prompt_version": summary.prompt_version,
        "counts": summary.counts,
        "labelled": summary.labelled,
        "unlabelled": summary.unlabelled,
        "mean_confidence": summary.mean_confidence,
        "usage": {
            "requests": usage.requests,
            "prompt_tokens": usage.prompt_tokens,
            "completion_tokens": usage.completion_tokens,
            "cost": str(usage.cost),
            "cached_queries": usage.cached_queries,
            "sampled_queries": usage.sampled_queries,
            "unparseable": usage.unparseable,
            "answers": usage.answers,
            "logprob_answers": usage.logprob_answers,
        },
        "cv_accuracy": cv_accuracy,
        "url": _machine_url(batch),
    }
    mean = "-" if summary.mean_confidence is None else f"{summary.mean_confidence:.3f}"
    job.message = (
        f"{summary.labelled} quer{'y' if summary.labelled == 1 else 'ies'} labelled by {summary.labeller} "
        f"({summary.model}, {summary.prompt_version}), {summary.unlabelled} without a label; mean confidence {mean}"
        + (f"; cross-validated accuracy {cv_accuracy:.3f}" if cv_accuracy is not None else "")
        + (f"; {summary.cv_note}" if getattr(summary, "cv_note", "") else "")
        + (f"; {usage.requests} request(s), ${usage.cost}" if usage.requests else "")
    )
    return job.result


def start_prelabel(batch: Batch, labeller: str, *, samples: int | None = None, train: str | None = None) -> Job:
    """Pre-label ``batch`` in the background; input no run could accept is refused at once (a
    message on the page, a 400 in the API) rather than queued as a job that can only fail."""
    from annotation.machine.prelabellers import prelabeller_names

    if labeller not in prelabeller_names():
        raise ServiceError(f"unknown pre-labeller {labeller!r}; known: {', '.join(prelabeller_names())}")
    if samples is not None and (labeller != "openai" or samples < 1):
        raise ServiceError("samples: only the openai pre-labeller takes samples, at least 1")
    from core.selectors import chat_settings

    if labeller == "openai" and not chat_settings().configured:
        raise ServiceError(
            "the openai pre-labeller needs PRELABEL_API_URL and PRELABEL_MODEL (the environment or the Connections page)"
        )
    args: list = [batch.pk, labeller, samples]
    if train is not None:
        args.append(train)
    with transaction.atomic():  # one job per batch and machine at a time (decided under the batch's row lock)
        claim(batch, lambda: live_prelabel(batch, labeller, train))
        return prelabel_job.start(f"Pre-label {batch.name} with {labeller}", *args, of=batch)


# --- the calibration report -------------------------------------------------------------------

CALIBRATION_REPORT_KIND = "annotation.calibration_report"
#: Why a viewer finds no report (no job of the sample's state yet).
NOT_COMPUTED = "the report of the latest answers is not computed yet; a researcher's view or the next sync starts it"
#: The job's last step, after :data:`~annotation.machine.report.selectors.REPORT_STEPS`.
DRAWING = "drawing the figures"


def report_with_figures(batch: Batch, progress=None) -> dict[str, Any]:
    """The calibration report of ``batch`` and its two SVG figures (computed, not read)."""
    from annotation.machine import calibration_plots

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


class _Steps:
    """A job's progress through named steps, each shown by the project's one progress writer
    (:class:`core.progress.Progress`: ``job.result["step"]`` and ``done`` of ``total``); a step that
    refits the crowd model says how many of its bootstrap draws are refitted."""

    def __init__(self, job: Job, names: tuple[str, ...]) -> None:
        self.job, self.names = job, names

    def __call__(self, name: str, refitted: int | None = None, bootstrap: int | None = None) -> None:
        done, total = self.names.index(name), len(self.names)
        said = name if refitted is None else f"{name}: {refitted:,} of {bootstrap:,} refits"
        Progress(f"{said} (step {done + 1} of {total})", total, job=self.job, bar=False, done=done)


# StateError (a ServiceError): too few crowd labels yet; the page shows the job's message as why.
@background_job(CALIBRATION_REPORT_KIND, task="annotation.tasks.calibration_report_task", failures=(ServiceError,))
def calibration_report_job(job: Job, batch_id: int, version: str) -> dict:
    """Compute ``batch``'s calibration report and keep it under ``version``, the state the job was
    started for; what was kept for it already (a redelivery, a second job) is not computed again."""
    batch = Batch.objects.get(pk=batch_id)
    remembered(
        report_key(batch, version),
        lambda: report_with_figures(batch, _Steps(job, (*REPORT_STEPS, DRAWING))),
        generation=report_generation(batch, version),
    )
    url = reverse("annotation:batch-calibration", args=[batch.name])
    job.result = {"batch": batch.name, "version": version, "url": url}
    job.message = f"Calibration report of {batch.name} computed"
    return job.result


def live_report_job(batch: Batch, version: str) -> Job | None:
    """The queued or running report job of ``batch`` at ``version``, if any."""
    return live_job(CALIBRATION_REPORT_KIND, [batch.pk, version])


def last_report_job(batch: Batch, version: str) -> Job | None:
    """The latest report job of ``batch`` at ``version`` (live, done or failed), if any."""
    return (
        Job._base_manager.filter(kind=CALIBRATION_REPORT_KIND, arguments__0=batch.pk, arguments__1=version)
        .order_by("-pk")
        .first()
    )


def start_calibration_report(batch: Batch, version: str | None = None) -> Job | None:
    """Compute ``batch``'s calibration report in the background for its state now (``version``:
    :func:`report_version`, read here when not given); the live job for that state if one is under
    way (decided under the batch's row lock: two first views start one job); None without a sample."""
    version = version or report_version(batch)
    if version is None:
        return None
    with transaction.atomic():
        claim(batch, lambda: None)  # the lock: a concurrent start commits its Job before this reads
        live = live_report_job(batch, version)
        if live is not None:
            return live
        return calibration_report_job.start(f"Calibration report of {batch.name}", batch.pk, version, of=batch)


def report_or_job(batch: Batch, *, may_start: bool) -> tuple[dict[str, Any] | None, Job | None]:
    """What the page and the API show of ``batch``'s calibration report: ``(figures, None)`` as the
    job kept them for the sample's state now, else ``(None, job)``: the job computing it (started here
    when ``may_start``, the asking user may act on the batch: a viewer only waits for one) or the job
    that refused it (``failed``: too few crowd labels, its message says), or ``(None, None)``.

    No long work in a request: the report is computed by :func:`calibration_report_job`. With the
    results cache off (``RESULTS_CACHE_SECONDS=0``) nothing can be kept: computed here, as asked.
    No sample: :func:`~annotation.machine.report.selectors.calibration_report`'s refusal (``StateError``).
    """
    from django.conf import settings

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
    return None, job
