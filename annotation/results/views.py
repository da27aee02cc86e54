"""Exports handed to a browser or an API client: named by batch, category and format (never the
server's path) and streamed, so a large export never sits in memory."""

from __future__ import annotations

from django.http import FileResponse, Http404

from annotation.models import Export
from annotation.results.export_formats import EXPORT_FORMATS


def export_file_response(export: Export, part: str) -> FileResponse:
    """The export's file or its dataset card, streamed as an attachment (pages and API)."""
    if part == "card":
        path, filename = export.card_path, f"{export.batch.name}-{export.category}.{export.format}.md"
        content_type = "text/markdown; charset=utf-8"
    else:
        path, filename = export.path, f"{export.batch.name}-{export.category}.{export.format}"
        content_type = EXPORT_FORMATS[export.format].content_type + "; charset=utf-8"
    try:
        handle = open(path, "rb")  # noqa: SIM115 (FileResponse closes it)
    except FileNotFoundError:
        raise Http404("the exported file is gone from the server; export again") from None
    return FileResponse(handle, as_attachment=True, filename=filename, content_type=content_type)
