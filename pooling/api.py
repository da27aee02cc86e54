"""REST endpoints of the pooling app: what was imported and pooled (read-only), and imports; staff
only, as query sets include the crowd's labels and pools the rankers' gender lists.
"""

from django.db.models import Q
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import permissions, serializers, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.parsers import FormParser, JSONParser, MultiPartParser
from rest_framework.views import APIView

from core.api import StagedUploadsMixin, body_object, form_data, form_job_started
from core.options import TIES_OPTION
from core.serializers import CountField, JobSerializer
from genderbias.datasets import NAMED_SETS
from genderbias.text.tokenize import DEFAULT_TOKENIZER, TOKENIZERS

from . import services
from .analysis import MAGNITUDES
from .forms import ImportForm, NamedSetForm, PoolForm
from .models import Collection, Pool, QuerySet, Run
from .serializers import (
    CollectionSerializer,
    PoolEntrySerializer,
    PoolSerializer,
    QuerySerializer,
    QuerySetSerializer,
    RunSerializer,
)

#: ``?q=``: the API's counterpart of the pages' search box.
SEARCH = OpenApiParameter("q", str, description="Keep rows whose qid or query text contains this (any case).")


def _search(queryset, request, *fields: str):
    text = request.query_params.get("q", "").strip()[:200]
    if not text:
        return queryset
    condition = Q()
    for field in fields:
        condition |= Q(**{f"{field}__icontains": text})
    return queryset.filter(condition)


class StaffReadOnly(viewsets.ReadOnlyModelViewSet):
    permission_classes = [permissions.IsAdminUser]
    lookup_field = "name"


class CollectionViewSet(StaffReadOnly):
    queryset = Collection.objects.all()
    serializer_class = CollectionSerializer


class QuerySetViewSet(StaffReadOnly):
    queryset = QuerySet.objects.all()
    serializer_class = QuerySetSerializer

    @extend_schema(parameters=[SEARCH], responses=QuerySerializer(many=True))
    @action(detail=True)
    def queries(self, request, name=None, format=None):
        """The queries of the set, in file order (paginated; ``?q=`` searches qid and text)."""
        queries = _search(self.get_object().queries.order_by("position"), request, "qid", "text")
        page = self.paginate_queryset(queries)
        return self.get_paginated_response(QuerySerializer(page, many=True).data)


class RunViewSet(StaffReadOnly):
    queryset = Run.objects.select_related("collection")
    serializer_class = RunSerializer


class PoolRequestSerializer(serializers.Serializer):
    """What building a pool takes (the pool page's form)."""

    name = serializers.SlugField(help_text="Name of the pool and of its query set.")
    queries = serializers.CharField(help_text="The query set's name.")
    runs = serializers.ListField(child=serializers.CharField(), help_text="Names of the runs to pool.")
    rank_cutoff = CountField(min_value=1, default=10, help_text="t of RaB@t.")
    depth = CountField(min_value=1, default=500, help_text="Queries taken from the top of each list.")
    magnitude = serializers.ChoiceField(choices=list(MAGNITUDES), default="tf")
    tokenizer = serializers.ChoiceField(choices=list(TOKENIZERS), default=DEFAULT_TOKENIZER)
    ties = serializers.ChoiceField(
        choices=TIES_OPTION.choices, default=TIES_OPTION.default, help_text=TIES_OPTION.describe()
    )
    wordlist = serializers.CharField(required=False, help_text="An imported word list's name (default: built-in).")


class PoolViewSet(StaffReadOnly):
    queryset = Pool.objects.select_related("source", "queries", "wordlist").prefetch_related("runs")
    serializer_class = PoolSerializer

    @extend_schema(request=PoolRequestSerializer, responses={202: JobSerializer})
    def create(self, request, *args, **kwargs):
        """Build a pool as a background job (the pool page's rules); poll ``/api/jobs/<id>/``."""
        return form_job_started(PoolForm(form_data(request, PoolRequestSerializer)))

    @extend_schema(parameters=[SEARCH], responses=PoolEntrySerializer(many=True))
    @action(detail=True)
    def entries(self, request, name=None, format=None):
        """Provenance: per pooled query and run, its RaB and its positions in the two lists
        (paginated; ``?q=`` searches the query's qid and text)."""
        entries = self.get_object().entries.select_related("query", "run").order_by("query__position", "run__name")
        entries = _search(entries, request, "query__qid", "query__text")
        page = self.paginate_queryset(entries)
        return self.get_paginated_response(PoolEntrySerializer(page, many=True).data)


class ImportRequestSerializer(serializers.Serializer):
    """What an import takes (documentation of the form below; ``file`` or ``path``, not both)."""

    name = serializers.SlugField()
    file = serializers.FileField(required=False, help_text="The file (multipart upload; .gz accepted).")
    path = serializers.CharField(required=False, help_text="Or an absolute path inside IMPORT_ROOTS.")
    collection = serializers.CharField(
        required=False, help_text="Runs and qrels: the collection the run ranks / the judged documents are in."
    )
    queries = serializers.CharField(required=False, help_text="Qrels only: the query set the judgments are about.")
    order = serializers.ChoiceField(choices=Run.Order.choices, required=False, help_text="Runs only.")
    dataset = serializers.CharField(
        required=False,
        help_text="Kind dataset only (instead of file or path): an ir_datasets id such as msmarco-passage/dev/small.",
    )
    skip_bad_lines = serializers.BooleanField(required=False)
    by_reference = serializers.BooleanField(
        required=False,
        help_text="Collections: path is a folder of MS MARCO v2 passage bundles, registered without reading it; "
        "datasets: the documents are read through the dataset's docstore by id, not written out.",
    )
    qid_column = serializers.CharField(
        required=False, help_text="Query sets only: the id column, a header name or a number (default: guessed)."
    )
    query_column = serializers.CharField(
        required=False, help_text="Query sets only: the query column, a header name or a number (default: guessed)."
    )
    label_column = serializers.CharField(
        required=False, help_text="Query sets only: the label column, or none (default: guessed)."
    )
    labels_as = serializers.ChoiceField(
        choices=["", "gold", "test"],
        required=False,
        help_text="Query sets only: where a labelled file's labels lead next (gold: the batch form).",
    )


class ImportView(StagedUploadsMixin, APIView):
    """``POST /api/pooling/imports/<kind>/``: import a collection, query set, run, word list or qrels,
    or (kind ``dataset``, body ``name`` and ``dataset``) an ir_datasets dataset by its id.

    The import runs as a job, returned (202) for polling at ``/api/jobs/<id>/``; the rules are the
    import page's form, so page and API accept and refuse the same requests.
    """

    permission_classes = [permissions.IsAdminUser]
    parser_classes = [MultiPartParser, FormParser, JSONParser]

    @extend_schema(request={"multipart/form-data": ImportRequestSerializer}, responses={202: JobSerializer})
    def post(self, request, kind: str):
        if kind not in services.IMPORT_KINDS:
            raise ValidationError({"kind": f"choose one of {', '.join(services.IMPORT_KINDS)}"})
        data, files = body_object(request), request.FILES  # parse the body first: it sets upload_too_large
        too_large = getattr(request._request, "upload_too_large", None)
        return form_job_started(ImportForm(kind, data, files, too_large=too_large))


class NamedSetRequestSerializer(serializers.Serializer):
    """What importing a named set takes (the Named sets page's form)."""

    set = serializers.ChoiceField(choices=list(NAMED_SETS), help_text="The set's name.")
    name = serializers.SlugField(required=False, default="", allow_blank=True, help_text="Default: the set's name.")
    collection = serializers.CharField(
        required=False,
        default="",
        allow_blank=True,
        help_text="An MS MARCO set's passages: a collection's name, or a file's path on the server.",
    )
    qrels = serializers.CharField(
        required=False, default="", allow_blank=True, help_text="Judgments of the set's queries: a path on the server."
    )


class NamedSetView(APIView):
    """``POST /api/pooling/named-sets/``: import one of the field's data sets by name, as a job."""

    permission_classes = [permissions.IsAdminUser]

    @extend_schema(request=NamedSetRequestSerializer, responses={202: JobSerializer})
    def post(self, request, format=None):
        return form_job_started(NamedSetForm(form_data(request, NamedSetRequestSerializer)))
