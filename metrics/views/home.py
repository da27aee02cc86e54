"""The home page: the researcher's dashboard (running jobs, batches, recent reports), or a welcome."""

from __future__ import annotations

from datetime import timedelta

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone

from annotation import selectors as annotation_selectors
from annotation.models import Batch
from core.models import Job
from core.selectors import jobs_for, unacknowledged_changes
from core.web.permissions import researcher_required
from pooling import selectors as pooling_selectors
from pooling.models import Qrels

from .. import selectors

#: Batches and jobs the dashboard shows; the pages of each app list them all.
BATCHES_SHOWN = 8


#: Finished jobs stay on the dashboard this long, so a job that ends while one watches is seen to end.
FINISHED_SHOWN_FOR = timedelta(hours=1)


FINISHED_SHOWN = 5


def _live(user) -> dict:
    jobs = jobs_for(user)  # a connection's test: its managers only
    active = list(jobs.filter(status__in=[Job.Status.PENDING, Job.Status.RUNNING]).order_by("created", "pk"))
    finished = list(
        jobs.filter(
            status__in=[Job.Status.DONE, Job.Status.FAILED], updated__gte=timezone.now() - FINISHED_SHOWN_FOR
        ).order_by("-updated", "-pk")[:FINISHED_SHOWN]
    )
    for job in (*active, *finished):
        fraction = job.fraction if job.fraction is not None else (1.0 if job.status == Job.Status.DONE else 0.0)
        job.percent = round(100 * fraction)
    batches = annotation_selectors.batch_overview(limit=BATCHES_SHOWN)
    # The platforms' panels (annotation.crowd.panels): Prolific's high-return-rate warnings.
    return annotation_selectors.dashboard_panels(("return_rate_warnings",)) | {
        "active_jobs": active,
        "finished_jobs": finished,
        "batch_rows": batches,
        "more_batches": Batch.objects.count() > len(batches),
        "live": bool(active) or any(row["batch"].status == Batch.Status.PUBLISHED for row in batches),
    }


def home(request: HttpRequest) -> HttpResponse:
    """Researchers get the dashboard; annotators and visitors a page pointing to their work (pools, query sets and
    reports reveal the crowd's labels and the rankers' lists: staff only)."""
    if not request.user.is_staff:
        return render(request, "welcome.html")
    context = (
        pooling_selectors.overview()
        | _live(request.user)
        | {"reports": selectors.recent_reports(), "qrels": Qrels.objects.select_related("collection", "query_set")}
        | {"changes": unacknowledged_changes(request.user)}
    )
    return render(request, "home.html", context)


@researcher_required
def home_live(request: HttpRequest) -> HttpResponse:
    """The dashboard's live part: running jobs and batches (htmx polls it)."""
    return render(request, "metrics/_dashboard_live.html", _live(request.user))
