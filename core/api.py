"""REST endpoints of the shared app: progress records of long work (researchers only),
and what the apps' endpoints share: uploads into the staging folder, form errors as JSON."""

from rest_framework import permissions, viewsets
from rest_framework.exceptions import ValidationError

from .models import Job
from .serializers import JobSerializer
from .uploads import discard_uploads, use_staging_uploads


class JobViewSet(viewsets.ReadOnlyModelViewSet):
    queryset = Job.objects.all()
    serializer_class = JobSerializer
    permission_classes = [permissions.IsAdminUser]


class StagedUploadsMixin:
    """An API view whose uploads stream into the staging folder, as the pages' do.

    Whatever a request uploaded and did not keep (refused, invalid, failed) is removed
    when the response leaves. Read ``request.data`` before ``upload_too_large``: parsing
    the body is what sets it.
    """

    def initialize_request(self, request, *args, **kwargs):
        use_staging_uploads(request)
        return super().initialize_request(request, *args, **kwargs)

    def finalize_response(self, request, response, *args, **kwargs):
        discard_uploads(request._request.FILES if hasattr(request._request, "_files") else {})
        return super().finalize_response(request, response, *args, **kwargs)


def form_errors(form) -> ValidationError:
    """A Django form's errors as the API's 400 answer: ``{field: [message, ...]}``."""
    return ValidationError({field: [e["message"] for e in errs] for field, errs in form.errors.get_json_data().items()})
