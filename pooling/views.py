"""Pages of the pooling app: thin shells over services and models."""

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, render

from .models import Collection, Job, Pool, QuerySet, Run


def home(request: HttpRequest) -> HttpResponse:
    """Overview: what is registered, and where to go next."""
    context = {
        "collections": Collection.objects.all(),
        "query_sets": QuerySet.objects.all(),
        "runs": Run.objects.select_related("collection"),
        "pools": Pool.objects.all(),
    }
    return render(request, "home.html", context)


@login_required
def job_progress(request: HttpRequest, pk: int) -> JsonResponse:
    """Progress record of a long job, polled by pages."""
    job = get_object_or_404(Job, pk=pk)
    return JsonResponse(
        {
            "id": job.pk,
            "kind": job.kind,
            "status": job.status,
            "done": job.done,
            "total": job.total,
            "fraction": job.fraction,
            "message": job.message,
            "result": job.result,
        }
    )
