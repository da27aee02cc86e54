"""Pages of the pooling app: thin shells over services, selectors and models."""

from __future__ import annotations

from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.files.uploadhandler import FileUploadHandler
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseNotAllowed
from django.shortcuts import get_object_or_404, redirect, render

from core.errors import ServiceError
from core.models import Job
from core.natural import natural_key
from core.services.uploads import check_import_path, staged_uploads, uploads_through
from core.spreadsheet import write_csv, write_tsv
from core.web.paging import table_page
from core.web.permissions import researcher_required
from genderbias.datasets import NAMED_SETS, SOURCE_PREFIX
from genderbias.errors import InputError

from . import selectors, services
from .forms import ImportForm, NamedSetForm, PoolForm, chosen_columns
from .models import Collection, Pool, Qrels, QuerySet
from .preview import MAX_PROBLEMS, PREVIEW_BYTES, docids_in_index, head_lines, preview_head, read_head


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
    table = table_page(request, rows, lambda row: f"{row['qid']} {row['query']}", sort_keys=pool_sort_keys(runs))
    for row in table.rows:
        row["rab_list"] = [(row["rab"].get(run), row["ties"].get(run)) for run in runs]
    links = table.sort_links
    run_headers = [(run, links[f"run-{index}"]) for index, run in enumerate(runs)]
    return render(
        request,
        "pooling/pool_detail.html",
        {
            "pool": pool,
            "runs": runs,
            "table": table,
            "links": links,
            "run_headers": run_headers,
            "summary": summary,
            "overlap": overlap,
        },
    )


def _notes(row: dict, runs: list[str]) -> str:
    """What is said of a pooled query's RaB per run (its tie range, the sign warning), as a report's CSV says it."""
    return "; ".join(f"{run}: {', '.join(row['ties'][run].texts())}" for run in runs if run in row["ties"])


def pool_sort_keys(runs: list[str]) -> dict:
    """The pool table's columns as ``?sort=`` keys over the whole pool: qids in natural order, texts,
    each run's RaB (``run-<i>``; queries the run lacks last going up) and the lists."""

    def rab_of(run: str):
        return lambda row: (row["rab"].get(run) is None, row["rab"].get(run) or 0.0)

    keys = {
        "qid": lambda row: natural_key(row["qid"]),
        "query": lambda row: row["query"].casefold(),
        "lists": lambda row: ", ".join(row["lists"]),
    }
    keys |= {f"run-{index}": rab_of(run) for index, run in enumerate(runs)}
    return keys


@researcher_required
def pool_download(request: HttpRequest, name: str, fmt: str) -> HttpResponse:
    """The pooled queries: ``tsv`` is ``qid<TAB>query``; ``csv`` adds each run's RaB and the lists."""
    if fmt not in ("tsv", "csv"):
        raise Http404("download formats: tsv, csv")
    pool = get_object_or_404(Pool, name=name)
    runs, rows = selectors.pool_table(pool)
    if fmt == "tsv":
        response = HttpResponse(content_type="text/tab-separated-values; charset=utf-8")
        write_tsv(response, ([r["qid"], r["query"]] for r in rows))
    else:
        response = HttpResponse(content_type="text/csv; charset=utf-8")
        header = ["qid", "query", *[f"RaB@{pool.rank_cutoff}:{run}" for run in runs], "lists", "notes"]
        write_csv(
            response,
            header,
            (
                [r["qid"], r["query"], *[r["rab"].get(run) for run in runs], " ".join(r["lists"]), _notes(r, runs)]
                for r in rows
            ),
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
    """The imports: what was imported lately, the site's import jobs with their outcome, every qrels."""
    jobs = Job.objects.filter(kind__in=[services.import_job.kind, services.named_set_job.kind]).order_by("-pk")[:10]
    context = {
        "kinds": services.IMPORT_KINDS,
        "jobs": jobs,
        "imported": selectors.recent_imports(),
        "qrels": Qrels.objects.select_related("collection", "query_set").order_by("name"),
    }
    return render(request, "pooling/import_index.html", context)


@researcher_required
@staged_uploads
def import_create(request: HttpRequest, kind: str) -> HttpResponse:
    """Upload a file (streamed into the staging folder) or register a path; the import runs as a job."""
    if kind not in services.IMPORT_KINDS:
        raise Http404("import kinds: " + ", ".join(services.IMPORT_KINDS))
    posted = (request.POST, request.FILES) if request.method == "POST" else ()
    form = ImportForm(kind, *posted, too_large=getattr(request, "upload_too_large", None))
    if form.is_bound and form.is_valid():
        try:
            return redirect("core:job-detail", pk=form.start().pk)
        except ServiceError as exc:
            form.add_error(None, str(exc))
    what = services.IMPORT_KINDS[kind]
    status = 400 if form.is_bound else 200
    context = {"form": form, "kind": kind, "what": what, "preview_bytes": PREVIEW_BYTES}
    return render(request, "pooling/import_form.html", context, status=status)


class _HeadUploadHandler(FileUploadHandler):
    """Keeps the first ``PREVIEW_BYTES + 1`` bytes of an upload in memory and drops the rest: a
    preview never stores an upload, whatever a client sends."""

    def new_file(self, *args, **kwargs) -> None:
        super().new_file(*args, **kwargs)
        self.head = bytearray()

    def receive_data_chunk(self, raw_data, start):
        room = PREVIEW_BYTES + 1 - len(self.head)
        if room > 0:
            self.head += raw_data[:room]
        return None

    def file_complete(self, file_size):
        return SimpleUploadedFile(self.file_name, bytes(self.head))


@researcher_required
@uploads_through(_HeadUploadHandler)
def import_preview(request: HttpRequest, kind: str) -> HttpResponse:
    """The first rows of a chosen file (an upload's head, or a path on the server) as the import will
    read them, with every problem of those lines (the import form fetches it)."""
    if kind not in services.IMPORT_KINDS or kind == "dataset":
        raise Http404("import kinds: " + ", ".join(services.IMPORT_KINDS))
    if request.method != "POST":
        return HttpResponseNotAllowed(["POST"])
    upload, path = request.FILES.get("file"), request.POST.get("path", "").strip()
    context: dict = {
        "kind": kind,
        "what": services.IMPORT_KINDS[kind],
        "kb": PREVIEW_BYTES // 1024,
        "max_problems": MAX_PROBLEMS,
    }
    try:
        if upload and path:
            raise ServiceError("give a file or a path on the server, not both")
        if upload:
            context["file_name"] = upload.name
            first = upload.read(PREVIEW_BYTES + 1)
            lines, whole = head_lines(first, len(first) <= PREVIEW_BYTES)
        elif path:
            checked = check_import_path(path, "path")
            context["file_name"] = checked.name
            lines, whole = read_head(checked)
        else:
            raise ServiceError("choose a file or give a path on the server to see its first rows")
        known = None
        collection = Collection.objects.filter(name=request.POST.get("collection", "")).first()
        if kind == "run" and collection is not None and not collection.by_reference:  # by reference: no docid list
            index = selectors.docid_index(collection)
            known = lambda docids: docids_in_index(index, docids)  # noqa: E731
        context["collection"] = collection
        columns = chosen_columns(request.POST) if kind == "queries" else None
        context["preview"] = preview_head(
            kind, lines, whole, file_name=context["file_name"], known_docids=known, columns=columns
        )
    except (ServiceError, InputError) as exc:
        context["error"] = str(exc) if not isinstance(exc, InputError) else exc.problem
        return render(request, "pooling/import_preview.html", context, status=400)
    return render(request, "pooling/import_preview.html", context)


@researcher_required
def named_sets(request: HttpRequest) -> HttpResponse:
    """The field's data sets by name: what each holds and whence, whether imported here, a form to
    import one (a job), and the last imports' repaired faults."""
    form = NamedSetForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            return redirect("core:job-detail", pk=form.start().pk)
        except ServiceError as exc:
            form.add_error(None, str(exc))
    imported: dict[str, list[str]] = {}
    for name, source in QuerySet.objects.filter(source__startswith=SOURCE_PREFIX).values_list("name", "source"):
        imported.setdefault(source[len(SOURCE_PREFIX) :].split(" ", 1)[0], []).append(name)
    sets = [{"set": named, "imported": imported.get(key, [])} for key, named in NAMED_SETS.items()]
    jobs = Job.objects.filter(kind=services.named_set_job.kind).order_by("-pk")[:5]
    status = 400 if form.is_bound else 200
    return render(request, "pooling/named_sets.html", {"form": form, "sets": sets, "jobs": jobs}, status=status)
