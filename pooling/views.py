"""Pages of the pooling app: thin shells over services and models."""

from __future__ import annotations

import csv

from core.models import Job
from core.serializers import JobSerializer
from django.db.models import Count
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render

from core.permissions import researcher_required

from . import services
from .forms import PoolForm
from .models import Collection, Pool, QuerySet, Run


def home(request: HttpRequest) -> HttpResponse:
    """Researchers get the overview; annotators and visitors a page pointing to their work.

    Pools, query sets and reports reveal the crowd's labels and the rankers' lists, so
    everything but the annotation pages is for staff (researchers) only.
    """
    if not request.user.is_staff:
        return render(request, "welcome.html")
    context = {
        "collections": Collection.objects.all(),
        "query_sets": QuerySet.objects.annotate(size=Count("queries")),
        "runs": Run.objects.select_related("collection"),
        "pools": Pool.objects.annotate(size=Count("queries__queries")),
    }
    return render(request, "home.html", context)


@researcher_required
def pool_detail(request: HttpRequest, name: str) -> HttpResponse:
    pool = get_object_or_404(Pool, name=name)
    runs, rows = services.pool_table(pool)
    summary = services.summarise_pool(runs, rows)
    overlap = [  # shade at most half-strength so the dark figures stay readable
        {
            "run": run,
            "cells": [
                (other, value, round(value / 2, 2)) for other, value in zip(summary["runs"], values, strict=True)
            ],
        }
        for run, values in zip(summary["runs"], summary["overlap"], strict=True)
    ]
    for row in rows:
        row["rab_list"] = [row["rab"].get(run) for run in runs]
    return render(
        request,
        "pooling/pool_detail.html",
        {"pool": pool, "runs": runs, "rows": rows, "summary": summary, "overlap": overlap},
    )


@researcher_required
def pool_download(request: HttpRequest, name: str, fmt: str) -> HttpResponse:
    """The pooled queries: ``tsv`` is ``qid<TAB>query``; ``csv`` adds each run's RaB and the lists."""
    if fmt not in ("tsv", "csv"):
        raise Http404("download formats: tsv, csv")
    pool = get_object_or_404(Pool, name=name)
    runs, rows = services.pool_table(pool)
    if fmt == "tsv":
        body = "".join(f"{r['qid']}\t{' '.join(r['query'].split())}\n" for r in rows)
        response = HttpResponse(body, content_type="text/tab-separated-values; charset=utf-8")
    else:
        response = HttpResponse(content_type="text/csv; charset=utf-8")
        writer = csv.writer(response)
        writer.writerow(["qid", "query", *[f"RaB@{pool.rank_cutoff}:{run}" for run in runs], "lists"])
        for r in rows:
            writer.writerow([r["qid"], r["query"], *[r["rab"].get(run, "") for run in runs], " ".join(r["lists"])])
    response["Content-Disposition"] = f'attachment; filename="{pool.name}.{fmt}"'
    return response


@researcher_required
def pool_create(request: HttpRequest) -> HttpResponse:
    """Form to build a pool; the work runs as a Celery task (inline without a broker)."""
    form = PoolForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        settings = services.PoolSettings(data["rank_cutoff"], data["depth"], data["magnitude"], data["tokenizer"])
        job = services.start_pool(data["name"], data["queries"], list(data["runs"]), settings)
        return redirect("core:job-detail", pk=job.pk)
    return render(request, "pooling/pool_form.html", {"form": form})


@researcher_required
def job_detail(request: HttpRequest, pk: int) -> HttpResponse:
    return render(request, "core/job_detail.html", {"job": get_object_or_404(Job, pk=pk)})


@researcher_required
def job_progress(request: HttpRequest, pk: int) -> JsonResponse:
    """Progress record of a long job, polled by pages (the REST API's representation)."""
    return JsonResponse(JobSerializer(get_object_or_404(Job, pk=pk)).data)
