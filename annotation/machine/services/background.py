"""Pre-labelling as a background job (``annotation.prelabel``), declared once here beside its service.

Pre-labelling is a job because a chat model may take minutes; a redelivery reruns it, which costs
nothing: the chat model's answers are cached and the labels of the same labeller are replaced,
not added. The job's kind and Celery task name are stored in ``Job.kind`` and ``Job.task`` and
never change (they were declared in ``annotation.crowd.services.background`` before machine
declared its own jobs).
"""

from __future__ import annotations

from django.db import transaction
from django.urls import reverse

from annotation.machine.services.prelabels import PRELABEL_JOB_KIND, live_prelabel, prelabel_batch
from annotation.models import Batch
from core.errors import InputError, ServiceError
from core.jobs import background_job
from core.models import Job
from core.services.once import claim


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
