"""Files that reach the site for import: uploaded through a form, or a path on the server.

An uploaded file is streamed into the staging folder, never held in memory nor copied twice, and
stops at the first chunk past ``settings.IMPORT_UPLOAD_MAX_BYTES`` (its partial file removed); a
kept one is moved to ``uploads/``, where it stays while what was imported from it refers to it.
A path on the server is accepted only inside ``settings.IMPORT_ROOTS`` (links and ``..``
resolved), so a researcher cannot make the site read any file its process can read.
"""

from __future__ import annotations

import os
import uuid
from functools import wraps
from pathlib import Path

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.core.files.uploadhandler import FileUploadHandler, StopUpload
from django.views.decorators.csrf import csrf_exempt, csrf_protect

from core.errors import ServiceError
from core.services.storage import cache_dir, staging_path
from genderbias.files.textfiles import safe_basename


def safe_filename(name: str) -> str:
    """The last component of a client-given file name, reduced to safe characters (``.gz`` kept):
    never empty, ``.``, ``..``, hidden or a path (:func:`genderbias.files.textfiles.safe_basename`)."""
    return safe_basename(name, "upload")


class StagedUpload(UploadedFile):
    """An uploaded file already complete in the staging folder (``staged_path``)."""

    def __init__(self, staged_path: Path, name: str, size: int, content_type: str | None) -> None:
        # Closed by the file object's owner (Django closes request files after the response).
        super().__init__(open(staged_path, "rb"), name=name, content_type=content_type, size=size)  # noqa: SIM115
        self.staged_path = staged_path


class StagingUploadHandler(FileUploadHandler):
    """Streams every uploaded file into the staging folder; one over the limit is dropped, and
    ``request.upload_too_large`` names its field for the view to report."""

    def new_file(self, field_name, file_name, content_type, content_length, charset=None, content_type_extra=None):
        super().new_file(field_name, file_name, content_type, content_length, charset, content_type_extra)
        self.path = staging_path(f"upload-{uuid.uuid4().hex}-{safe_filename(file_name)}")
        self.out = open(self.path, "wb")  # noqa: SIM115 (closed in file_complete or on abort)
        self.written = 0

    def receive_data_chunk(self, raw_data, start):
        self.written += len(raw_data)
        if self.written > settings.IMPORT_UPLOAD_MAX_BYTES:
            self.out.close()
            self.path.unlink(missing_ok=True)
            self.request.upload_too_large = self.field_name
            raise StopUpload(connection_reset=False)
        self.out.write(raw_data)
        return None

    def file_complete(self, file_size):
        self.out.close()
        return StagedUpload(self.path, self.file_name, file_size, self.content_type)

    def upload_interrupted(self):
        if getattr(self, "out", None) is not None:
            self.out.close()
            self.path.unlink(missing_ok=True)


def use_staging_uploads(request) -> None:
    """Route the uploads of ``request`` to the staging folder (call before reading its body)."""
    request.upload_handlers = [StagingUploadHandler(request)]


def uploads_through(handler: type[FileUploadHandler]):
    """A page view's decorator: its uploads go through ``handler``; staged files it did not keep are
    removed afterwards. The CSRF check, which reads the body, moves inside, after the handler is set
    (Django's documented pattern); put access checks outside, to run before the body is read.
    """

    def decorate(view):
        protected = csrf_protect(view)

        @wraps(view)
        @csrf_exempt
        def wrapper(request, *args, **kwargs):
            request.upload_handlers = [handler(request)]
            try:
                return protected(request, *args, **kwargs)
            finally:
                discard_uploads(request.FILES)

        return wrapper

    return decorate


#: Uploads streamed into the staging folder.
staged_uploads = uploads_through(StagingUploadHandler)


def upload_too_large_message() -> str:
    limit = settings.IMPORT_UPLOAD_MAX_BYTES
    return (
        f"the file is larger than the upload limit ({limit:,} bytes, setting IMPORT_UPLOAD_MAX_BYTES); "
        "register a path on the server instead"
    )


def keep_upload(upload: UploadedFile) -> Path:
    """Move a staged upload out of the staging folder into ``uploads/`` and return its new path."""
    if not isinstance(upload, StagedUpload):
        raise TypeError("uploads must come through StagingUploadHandler (core.services.uploads.use_staging_uploads)")
    upload.close()
    target = cache_dir("uploads") / f"{uuid.uuid4().hex[:12]}-{safe_filename(upload.name)}"
    os.replace(upload.staged_path, target)
    return target


def check_import_path(value: str, field: str = "path", *, folder: bool = False) -> Path:
    """The file (``folder``: the folder) ``value`` names, if it lies inside one of ``settings.IMPORT_ROOTS``;
    else a :class:`ServiceError` naming ``field``."""
    roots = [Path(root).resolve() for root in settings.IMPORT_ROOTS]
    if not roots:
        raise ServiceError(f"{field}: registering files on the server is off; set IMPORT_ROOTS to allow folders")
    if not value or not os.path.isabs(value):
        raise ServiceError(f"{field}: give an absolute path on the server")
    try:
        path = Path(value).resolve()
    except (ValueError, OSError, RuntimeError) as exc:  # an embedded NUL byte, a symbolic link loop
        raise ServiceError(f"{field}: {value!r} is not a usable path ({exc})") from None
    if not any(path.is_relative_to(root) for root in roots):
        allowed = ", ".join(str(root) for root in roots)
        raise ServiceError(f"{field}: {value} is outside the folders allowed for imports ({allowed})")
    if folder and not path.is_dir():
        raise ServiceError(f"{field}: {value} is not a folder")
    if not folder and not path.is_file():
        raise ServiceError(f"{field}: {value} is not a file")
    return path


def discard_uploads(files) -> None:
    """Remove the staged files of a request that were not kept (invalid form, refused request)."""
    for upload in files.values():
        if isinstance(upload, StagedUpload):
            upload.close()
            upload.staged_path.unlink(missing_ok=True)
