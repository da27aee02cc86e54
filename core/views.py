"""Pages of long work: a job's page and the progress record it polls."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, render

from .models import Job
from .permissions import researcher_required
from .serializers import JobSerializer


def _job_context(job: Job) -> dict:
    job.finished = job.status in (Job.Status.DONE, Job.Status.FAILED)
    fraction = job.fraction if job.fraction is not None else (1.0 if job.status == Job.Status.DONE else 0.0)
    return {"job": job, "percent": round(100 * fraction)}


@researcher_required
def job_detail(request: HttpRequest, pk: int) -> HttpResponse:
    return render(request, "core/job_detail.html", _job_context(get_object_or_404(Job, pk=pk)))


@researcher_required
def job_progress_fragment(request: HttpRequest, pk: int) -> HttpResponse:
    """The live part of the job page (htmx polls it). When a job it watched running ends
    with a result, the page leads on to the result (``HX-Redirect``)."""
    job = get_object_or_404(Job, pk=pk)
    response = render(request, "core/_job_progress.html", _job_context(job))
    if job.status == Job.Status.DONE and job.result.get("url") and request.headers.get("HX-Request"):
        response["HX-Redirect"] = job.result["url"]
    return response


@researcher_required
def job_progress(request: HttpRequest, pk: int) -> JsonResponse:
    """Progress record of a long job, polled by pages (the REST API's representation)."""
    return JsonResponse(JobSerializer(get_object_or_404(Job, pk=pk)).data)
