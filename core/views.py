"""Pages of long work: a job's page and the progress record it polls."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, render

from .models import Job
from .permissions import researcher_required
from .serializers import JobSerializer


@researcher_required
def job_detail(request: HttpRequest, pk: int) -> HttpResponse:
    return render(request, "core/job_detail.html", {"job": get_object_or_404(Job, pk=pk)})


@researcher_required
def job_progress(request: HttpRequest, pk: int) -> JsonResponse:
    """Progress record of a long job, polled by pages (the REST API's representation)."""
    return JsonResponse(JobSerializer(get_object_or_404(Job, pk=pk)).data)
