"""The publishing pages (researchers only): the batch page's "Publish dataset" button (the dataset folder,
zipped, as a download) and the report page's paper bundle (a zip, built once by a background job)."""

from __future__ import annotations

from django.contrib import messages
from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.views.decorators.http import require_POST

from annotation.models import Batch
from core.errors import ServiceError, StateError
from core.templatetags.roles import may_act
from core.web.permissions import researcher_required
from metrics.models import Report
from publishing.forms import PublishDatasetForm
from publishing.latex import template as latex_template
from publishing.services.dataset import publication_zip
from publishing.services.paper import cached_paper_zip, start_paper_bundle


def zip_response(file_name: str, data: bytes) -> HttpResponse:
    """A zip handed to the browser (or an API client) as an attachment."""
    response = HttpResponse(data, content_type="application/zip")
    response["Content-Disposition"] = f'attachment; filename="{file_name}"'
    return response


@researcher_required
@require_POST
def batch_publish_dataset(request: HttpRequest, name: str) -> HttpResponse:
    """Write the batch's dataset folder (Parquet, README.md, croissant.json) and download it as a zip."""
    batch = get_object_or_404(Batch, name=name)
    form = PublishDatasetForm(request.POST)
    if not form.is_valid():
        messages.error(request, "; ".join(f"{k}: {' '.join(v)}" for k, v in form.errors.items()))
        return redirect("annotation:batch-detail", name=batch.name)
    try:
        file_name, data = publication_zip(batch, **form.cleaned_data)
    except ServiceError as exc:
        messages.error(request, str(exc))
        return redirect("annotation:batch-detail", name=batch.name)
    return zip_response(file_name, data)


@researcher_required
def report_paper(request: HttpRequest, name: str) -> HttpResponse:
    """The report's paper bundle as a zip (:mod:`publishing.services.paper`): LaTeX tables, PDF figures,
    ``methods.tex``, ``references.bib`` and a ``main.tex`` that compiles as it is, in ``?template=``
    (:data:`publishing.latex.TEMPLATES`; default ``article``; another: 400). Built once, in a
    background job (the job's page leads back here when it is done), then served as a file."""
    report = get_object_or_404(Report, name=name)
    template = request.GET.get("template") or None
    try:
        latex_template(template)  # the one check of the name (its message names the choices)
    except ValueError as exc:
        return HttpResponse(f"template: {exc}", status=400, content_type="text/plain")
    path = cached_paper_zip(report, template)
    if path is not None:
        suffix = "" if template is None else f"-{template}"
        return FileResponse(path.open("rb"), as_attachment=True, filename=f"{report.name}-paper{suffix}.zip")
    try:
        job = start_paper_bundle(report, template, may_start=may_act(request.user, report))
    except StateError as exc:  # a viewer, and no job under way
        return HttpResponse(str(exc), status=409, content_type="text/plain; charset=utf-8")
    except ServiceError as exc:
        raise Http404(str(exc)) from None
    return redirect("core:job-detail", pk=job.pk)
