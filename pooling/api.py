"""REST endpoints of the pooling app: read-only views of what was imported and pooled.

Staff only: query sets include annotation exports (the crowd's labels) and pools the
rankers' gender lists, neither of which an annotator may see.
"""

from core.models import Job
from core.serializers import JobSerializer
from drf_spectacular.utils import extend_schema
from rest_framework import permissions, viewsets
from rest_framework.decorators import action

from .models import Collection, Pool, QuerySet, Run
from .serializers import (
    CollectionSerializer,
    PoolEntrySerializer,
    PoolSerializer,
    QuerySerializer,
    QuerySetSerializer,
    RunSerializer,
)


class StaffReadOnly(viewsets.ReadOnlyModelViewSet):
    permission_classes = [permissions.IsAdminUser]


class CollectionViewSet(StaffReadOnly):
    queryset = Collection.objects.all()
    serializer_class = CollectionSerializer
    lookup_field = "name"


class QuerySetViewSet(StaffReadOnly):
    queryset = QuerySet.objects.all()
    serializer_class = QuerySetSerializer
    lookup_field = "name"

    @extend_schema(responses=QuerySerializer(many=True))
    @action(detail=True)
    def queries(self, request, name=None):
        """The queries of the set, in file order (paginated)."""
        queries = self.get_object().queries.order_by("position")
        page = self.paginate_queryset(queries)
        return self.get_paginated_response(QuerySerializer(page, many=True).data)


class RunViewSet(StaffReadOnly):
    queryset = Run.objects.select_related("collection")
    serializer_class = RunSerializer
    lookup_field = "name"


class PoolViewSet(StaffReadOnly):
    queryset = Pool.objects.select_related("source", "queries", "wordlist").prefetch_related("runs")
    serializer_class = PoolSerializer
    lookup_field = "name"

    @extend_schema(responses=PoolEntrySerializer(many=True))
    @action(detail=True)
    def entries(self, request, name=None):
        """Provenance: per pooled query and run, its RaB and its positions in the two lists."""
        entries = self.get_object().entries.select_related("query", "run").order_by("query__position", "run__name")
        page = self.paginate_queryset(entries)
        return self.get_paginated_response(PoolEntrySerializer(page, many=True).data)


class JobViewSet(StaffReadOnly):
    queryset = Job.objects.all()
    serializer_class = JobSerializer
