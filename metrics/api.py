"""REST endpoints of the metrics app: reports with their results (read-only)."""

from django.db.models import Prefetch
from rest_framework import permissions, viewsets

from .models import Report, Result
from .serializers import ReportListSerializer, ReportSerializer


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
