"""The batch page's "Publish dataset" button: the dataset folder, zipped, as a download (researchers only)."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.views.decorators.http import require_POST

from annotation.models import Batch
from annotation.publication.forms import PublishDatasetForm
from annotation.publication.services.dataset import publication_zip
from core.errors import ServiceError
from core.web.permissions import researcher_required


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
        fields = form.cleaned_data
        file_name, data = publication_zip(
            batch,
            fields["license"],
            fields["with_judgments"],
            license_name=fields["license_name"],
            license_link=fields["license_link"],
        )
    except ServiceError as exc:
        messages.error(request, str(exc))
        return redirect("annotation:batch-detail", name=batch.name)
    return zip_response(file_name, data)
