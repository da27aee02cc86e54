"""REST endpoints of the metrics app: reports with their results (read-only)."""

from django.db.models import Prefetch
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import permissions, viewsets
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from core.errors import ServiceError

from .models import Report, Result
from .serializers import LabelSensitivitySerializer, ReportListSerializer, ReportSerializer


class ReportViewSet(viewsets.ReadOnlyModelViewSet):
    """Bias reports; the detail view nests every result (run, metric, variant, cutoff, value, CI, p)."""

    lookup_field = "name"
    permission_classes = [permissions.IsAdminUser]  # reports reveal the crowd's labels: researchers only

    def get_queryset(self):
        queryset = Report.objects.select_related("query_set", "baseline", "background_run")
        if self.action == "retrieve":
            results = Result.objects.select_related("run").order_by("pk")
            queryset = queryset.select_related("wordlist", "representative_wordlist").prefetch_related(
                Prefetch("results", queryset=results)
            )
        return queryset

    def get_serializer_class(self):
        return ReportSerializer if self.action == "retrieve" else ReportListSerializer


class LabelSensitivityView(APIView):
    """Label sensitivity of a batch (``?batch=&runs=a,b&cutoffs=5,10,20&threshold=0.9&background=&bootstrap=``).

    Computed on request, not stored: ``rows`` (aggregation, disputed, run, metric, variant,
    cutoff, value, ci_low, ci_high, n_queries), ``rankings`` (Kendall's tau against
    majority/drop and the swapped pairs), ``set_sizes`` (non-gendered queries per
    aggregation/policy). Bad parameters: 400 with ``detail``; an unknown batch: 404.
    """

    permission_classes = [permissions.IsAdminUser]

    @extend_schema(
        parameters=[
            OpenApiParameter("batch", str, required=True),
            OpenApiParameter("runs", str, required=True, description="comma-separated run names"),
            OpenApiParameter("cutoffs", str, description="comma-separated cutoffs (default 5,10,20)"),
            OpenApiParameter("threshold", float, description="least confidence for 'confident' (default 0.9)"),
            OpenApiParameter("background", str, description="NFaiRR background run (default: the collection)"),
            OpenApiParameter("bootstrap", int, description="bootstrap resamples, at most 2000 (default 1000)"),
        ],
        responses=LabelSensitivitySerializer,
    )
    def get(self, request: Request) -> Response:
        from .formatting import sensitivity_result
        from .forms import LabelSensitivityForm
        from .views import run_label_sensitivity

        form = LabelSensitivityForm(request.query_params)
        if not form.is_valid():
            detail = "; ".join(f"{field}: {' '.join(errors)}" for field, errors in form.errors.items())
            return Response({"detail": detail, "errors": form.errors}, status=400)
        try:
            result = run_label_sensitivity(form.cleaned_data)
        except ServiceError as exc:
            return Response({"detail": str(exc)}, status=400)
        return Response(sensitivity_result(result))
