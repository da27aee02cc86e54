"""Publishing, syncing, escalating, paying bonuses and pre-labelling as background jobs, followed through a ``core.models.Job``.

Each job is declared once here (:func:`core.jobs.background_job`): its kind, its Celery
task's name and its work; ``start_*`` check the batch and start it. The Job is sent only
once the caller's transaction has committed (so the worker sees the batch and the job), and
runs in this process when no broker is configured (``core.jobs.in_process``). Publishing,
syncing and escalating record every provider call before making it, so a redelivery after
a crash finishes the work instead of repeating it; paying bonuses records its intent before
each call and settles lost answers from Prolific's state (never paying twice). Pre-labelling is a job because a chat
model may take minutes; a redelivery reruns it, which costs nothing: the chat model's
answers are cached and the labels of the same labeller are replaced, not added.
"""

from __future__ import annotations

from dataclasses import asdict

from django.conf import settings
from django.db import transaction
from django.urls import reverse

from annotation.crowd.services import prolific_bonuses
from annotation.crowd.services.publishing import check_publishable, publish_batch
from annotation.crowd.services.sync import sync_batch
from annotation.machine.services.prelabels import PRELABEL_JOB_KIND, live_prelabel, prelabel_batch
from annotation.models import Batch
from annotation.quality.services.escalation import escalate_batch
from core.errors import InputError, ServiceError, StateError
from core.jobs import background_job
from core.models import Job
from core.services.once import claim, start_once


def _require_status(batch: Batch, *allowed: str) -> None:
    """Refuse at once (a message on the page) rather than queue a job that can only fail."""
    if batch.status not in allowed:
        raise StateError(f"batch {batch.name!r} is {batch.status}")


def _batch_url(batch: Batch) -> str:
    return reverse("annotation:batch-detail", args=[batch.name])


@background_job("annotation.publish", task="annotation.tasks.publish_batch_task")
def publish_job(job: Job, batch_id: int) -> int:
    batch = Batch.objects.get(pk=batch_id)
    published = publish_batch(batch, job=job)
    job.result = {"batch": batch.name, "published": published, "url": _batch_url(batch)}
    job.message = f"Published {published} HIT(s)"
    return published


@background_job("annotation.sync", task="annotation.tasks.sync_batch_task")
def sync_job(job: Job, batch_id: int, approve_all: bool = False) -> dict:
    batch = Batch.objects.get(pk=batch_id)
    result = asdict(sync_batch(batch, approve_all=approve_all, job=job))
    job.result = {"batch": batch.name, **result, "url": _batch_url(batch)}
    job.message = f"{result['new']} new assignment(s), {result['approved']} approved, {result['rejected']} rejected"
    return result


@background_job("annotation.escalate", task="annotation.tasks.escalate_batch_task")
def escalate_job(
    job: Job, batch_id: int, max_assignments: int, confirmed_hits: list[int] | None = None, until: str = "majority"
) -> int:
    batch = Batch.objects.get(pk=batch_id)
    added = len(escalate_batch(batch, max_assignments, confirmed_hits=confirmed_hits, until=until))
    job.result = {"batch": batch.name, "extra_assignments": added, "url": _batch_url(batch)}
    job.message = f"Added {added} assignment(s)"
    return added


#: The kind of a bonus pay's Job (one queued or running per batch at a time).
PAY_BONUSES_JOB_KIND = "annotation.pay_bonuses"


# A refusal (nothing to pay, the total moved, Prolific refused before paying, the batch busy)
# fails the Job with its message; a redelivery after a crash is safe (the pay's protocol).
@background_job(PAY_BONUSES_JOB_KIND, task="annotation.tasks.pay_bonuses_task", failures=(ServiceError,))
def pay_bonuses_job(job: Job, batch_id: int, expected_total: str | None = None) -> dict:
    batch = Batch.objects.get(pk=batch_id)
    result = prolific_bonuses.pay_bonuses(batch, expected_total=expected_total)
    job.result = {
        "batch": batch.name,
        **asdict(result),
        "amount_paid_now": str(result.amount_paid_now),
        "url": f"{_batch_url(batch)}#bonuses",
    }
    job.message = f"Paid {result.paid_now} bonus(es) now (${result.amount_paid_now})"
    if result.confirmed:
        job.message += f"; {result.confirmed} earlier payment(s) confirmed on Prolific"
    if result.unconfirmed:
        job.message += f"; {result.unconfirmed} unconfirmed: never paid again before Prolific shows them"
    if result.needs_person:
        job.message += (
            f"; {result.needs_person} still not shown on Prolific after the settle time: needs a person: "
            "check Prolific, then --confirm-paid or --confirm-unpaid"
        )
    return job.result


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


def start_publish(batch: Batch) -> Job:
    _require_status(batch, Batch.Status.DRAFT, Batch.Status.PUBLISHED)
    check_publishable(batch)
    busy = f"batch {batch.name!r} is being published already"
    return start_once(publish_job, batch, f"Publish {batch.name}", batch.pk, busy=busy)


def start_sync(batch: Batch, *, approve_all: bool = False) -> Job:
    _require_status(batch, Batch.Status.PUBLISHED, Batch.Status.COMPLETED, Batch.Status.CANCELLED)
    # A sync re-offers rejected places and escalates: paid work, one sync of a batch at a time.
    busy = f"batch {batch.name!r} is being synced already"
    return start_once(sync_job, batch, f"Sync {batch.name}", batch.pk, approve_all, busy=busy)


def start_escalate(
    batch: Batch, *, max_assignments: int, confirmed_hits: list[int] | None = None, until: str = "majority"
) -> Job:
    _require_status(batch, Batch.Status.PUBLISHED, Batch.Status.COMPLETED)
    busy = f"batch {batch.name!r} is being escalated already"
    args = (batch.pk, max_assignments, confirmed_hits, until)
    return start_once(escalate_job, batch, f"Escalate {batch.name}", *args, busy=busy)


def start_pay_bonuses(batch: Batch, *, expected_total: str | None = None) -> Job:
    """Pay the batch's bonuses in the background (its remote calls may take minutes: never in a request).

    Refused at once (a message on the page, 400/409 in the API) when the batch is not a published
    Prolific batch, a pay of it is queued or running, or the total to pay already differs from the
    previewed ``expected_total`` (the job compares it again after settling unconfirmed payments).
    """
    from annotation.crowd.selectors import check_prolific
    from annotation.crowd.services.prolific_bonuses import check_expected_total

    check_prolific(batch)
    if not batch.hit_type_id:
        raise StateError(f"batch {batch.name!r} has no Prolific study yet; publish it first")
    check_expected_total(batch, expected_total)
    if expected_total is not None:
        expected_total = str(expected_total)
    busy = f"bonuses of batch {batch.name!r} are being paid already"  # one pay job per batch at a time
    return start_once(pay_bonuses_job, batch, f"Pay bonuses of {batch.name}", batch.pk, expected_total, busy=busy)


def start_prelabel(batch: Batch, labeller: str, *, samples: int | None = None, train: str | None = None) -> Job:
    """Pre-label ``batch`` in the background; input no run could accept is refused at once (a
    message on the page, a 400 in the API) rather than queued as a job that can only fail."""
    from annotation.machine.prelabellers import prelabeller_names

    if labeller not in prelabeller_names():
        raise ServiceError(f"unknown pre-labeller {labeller!r}; known: {', '.join(prelabeller_names())}")
    if samples is not None and (labeller != "openai" or samples < 1):
        raise ServiceError("samples: only the openai pre-labeller takes samples, at least 1")
    if labeller == "openai" and not (settings.PRELABEL_API_URL and settings.PRELABEL_MODEL):
        raise ServiceError("the openai pre-labeller needs PRELABEL_API_URL and PRELABEL_MODEL in the settings")
    args: list = [batch.pk, labeller, samples]
    if train is not None:
        args.append(train)
    with transaction.atomic():  # one job per batch and machine at a time (decided under the batch's row lock)
        claim(batch, lambda: live_prelabel(batch, labeller, train))
        return prelabel_job.start(f"Pre-label {batch.name} with {labeller}", *args)
