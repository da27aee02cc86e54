"""Pages of the pooling app: thin shells over services, selectors and models."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render

from core.errors import ServiceError
from core.models import Job
from core.paging import table_page
from core.permissions import researcher_required
from core.spreadsheet import write_csv
from core.uploads import staged_uploads

from . import selectors, services
from .forms import ImportForm, PoolForm
from .models import Pool
from .queryfiles import query_lines


@researcher_required
def pool_detail(request: HttpRequest, name: str) -> HttpResponse:
    pool = get_object_or_404(Pool, name=name)
    runs, rows = selectors.pool_table(pool)
    summary = selectors.summarise_pool(runs, rows)
    overlap = [  # shade at most half-strength so the dark figures stay readable
        {
            "run": run,
            "cells": [
                (other, value, round(value / 2, 2)) for other, value in zip(summary["runs"], values, strict=True)
            ],
        }
        for run, values in zip(summary["runs"], summary["overlap"], strict=True)
    ]
    table = table_page(request, rows, lambda row: f"{row['qid']} {row['query']}")
    for row in table.rows:
        row["rab_list"] = [row["rab"].get(run) for run in runs]
    return render(
        request,
        "pooling/pool_detail.html",
        {"pool": pool, "runs": runs, "table": table, "summary": summary, "overlap": overlap},
    )


@researcher_required
def pool_download(request: HttpRequest, name: str, fmt: str) -> HttpResponse:
    """The pooled queries: ``tsv`` is ``qid<TAB>query``; ``csv`` adds each run's RaB and the lists."""
    if fmt not in ("tsv", "csv"):
        raise Http404("download formats: tsv, csv")
    pool = get_object_or_404(Pool, name=name)
    runs, rows = selectors.pool_table(pool)
    if fmt == "tsv":
        body = "".join(query_lines((r["qid"], r["query"]) for r in rows))
        response = HttpResponse(body, content_type="text/tab-separated-values; charset=utf-8")
    else:
        response = HttpResponse(content_type="text/csv; charset=utf-8")
        header = ["qid", "query", *[f"RaB@{pool.rank_cutoff}:{run}" for run in runs], "lists"]
        write_csv(
            response,
            header,
            ([r["qid"], r["query"], *[r["rab"].get(run) for run in runs], " ".join(r["lists"])] for r in rows),
        )
    response["Content-Disposition"] = f'attachment; filename="{pool.name}.{fmt}"'
    return response


@researcher_required
def pool_create(request: HttpRequest) -> HttpResponse:
    """Form to build a pool; the work runs as a Celery task (inline without a broker)."""
    form = PoolForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        return redirect("core:job-detail", pk=form.start().pk)
    return render(request, "pooling/pool_form.html", {"form": form})


@researcher_required
def import_index(request: HttpRequest) -> HttpResponse:
    """The four imports, and the latest import jobs with their outcome."""
    jobs = Job.objects.filter(kind=services.import_job.kind).order_by("-pk")[:10]
    return render(request, "pooling/import_index.html", {"kinds": services.IMPORT_KINDS, "jobs": jobs})


@researcher_required
@staged_uploads
def import_create(request: HttpRequest, kind: str) -> HttpResponse:
    """Upload a file (streamed into the staging folder) or register a path; the import runs as a job."""
    if kind not in services.IMPORT_KINDS:
        raise Http404("import kinds: " + ", ".join(services.IMPORT_KINDS))
    if request.method == "POST":
        form = ImportForm(kind, request.POST, request.FILES, too_large=getattr(request, "upload_too_large", None))
        if form.is_valid():
            try:
                job = form.start()
            except ServiceError as exc:
                form.add_error(None, str(exc))
            else:
                return redirect("core:job-detail", pk=job.pk)
    else:
        form = ImportForm(kind)
    what = services.IMPORT_KINDS[kind]
    status = 400 if form.is_bound else 200
    return render(request, "pooling/import_form.html", {"form": form, "kind": kind, "what": what}, status=status)
