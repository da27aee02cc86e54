"""REST endpoints of the metrics app: reports with their results, and building one as a job."""

from django.db.models import Prefetch
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import permissions, serializers, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from core.api import ErrorSerializer, form_data, form_errors, job_started
from core.errors import ServiceError
from core.options import SENSITIVITY_CUTOFFS_OPTION, TIES_OPTION
from core.serializers import CountField, DecimalNumberField, JobSerializer, MoneyField
from core.templatetags.roles import may_act
from genderbias.numbers import NumberError, parse_count
from genderbias.ranking.counterfactual import HER_CHOICES
from genderbias.ranking.defaults import CRBO_DEPTH, CRBO_P, MAX_CUTOFF, TABLE_LAYOUTS, VARIANT_VERSIONS
from genderbias.ranking.vocabulary import BY_NAME
from metrics.forms.study_forms import LabelSensitivityForm, PlanForm
from metrics.selectors import report_contributions, report_per_query, report_table

from .forms import ReportForm, with_options
from .forms.study_forms import CompareSetsForm, CounterfactualForm, CrboForm, PreferenceForm
from .models import Report, Result
from .serializers import (
    LabelSensitivitySerializer,
    PerQuerySerializer,
    ReportListSerializer,
    ReportSerializer,
    option_field,
)


class ReportRequestSerializer(with_options(serializers.Serializer, option_field)):
    """What building a report takes (the report list's form)."""

    name = serializers.SlugField()
    queries = serializers.CharField(required=False, help_text="The query set's name (or give batch).")
    batch = serializers.CharField(
        required=False,
        help_text="Report on this annotation batch's labels instead: its non-gendered queries, with intervals "
        "that carry the labels' uncertainty.",
    )
    runs = serializers.ListField(child=serializers.CharField(), help_text="Names of the runs to measure.")
    background = serializers.CharField(required=False, help_text="NFaiRR background run (default: the collection).")
    baseline = serializers.CharField(required=False, help_text="Run the others are tested against.")
    qrels = serializers.CharField(required=False, help_text="Imported relevance judgments: adds effectiveness.")
    measures = serializers.CharField(
        required=False, help_text="With qrels: e.g. RR@10,nDCG@10,R@10,P@10 (ir_measures names; MRR = RR)."
    )


class _PerQueryRows:
    """A report's per-query frame as the paginator's sequence, rows made only for the slice a page asks for (every
    row of a large batch's report would take seconds a request)."""

    COLUMNS = ["run", "qid", "metric", "variant", "cutoff", "value"]

    def __init__(self, frame) -> None:
        self.frame = frame[self.COLUMNS]

    def __len__(self) -> int:
        return len(self.frame)

    def __getitem__(self, rows: slice) -> list[dict]:
        import math

        return [
            dict(
                zip(self.COLUMNS[:4], key, strict=True),  # run, qid, metric, variant
                cutoff=int(cutoff),
                value=None if value is None or math.isnan(value) else float(value),
            )
            for *key, cutoff, value in self.frame.iloc[rows].itertuples(index=False, name=None)
        ]


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

    @extend_schema(request=ReportRequestSerializer, responses={202: JobSerializer})
    def create(self, request, *args, **kwargs):
        """Build a report as a background job (the report form's rules); poll ``/api/jobs/<id>/``."""
        form = ReportForm(form_data(request, ReportRequestSerializer))
        if not form.is_valid():
            raise form_errors(form)
        return job_started(form.start())

    @extend_schema(
        parameters=[OpenApiParameter("metric", str, description="Keep one metric's rows (e.g. nDCG, RaB).")],
        responses=PerQuerySerializer(many=True),
    )
    @action(detail=True, url_path="per-query")
    def per_query(self, request, name=None, format=None):
        """Per-query values (the per-query CSV as JSON, paginated): ``run, qid, metric, variant,
        cutoff, value``; ``value`` is null where undefined, e.g. a query the qrels do not judge."""
        try:
            frame = report_per_query(self.get_object())
        except ServiceError as exc:
            return Response({"detail": str(exc)}, status=404)
        metric = request.query_params.get("metric", "").strip()
        if metric:
            frame = frame[frame["metric"] == metric]
        page = self.paginate_queryset(_PerQueryRows(frame))  # rows made for the page only
        return self.get_paginated_response(PerQuerySerializer(page, many=True).data)

    @extend_schema(
        parameters=[
            OpenApiParameter("run", str, required=True, description="A run of the report other than its baseline."),
            OpenApiParameter("metric", str, required=True, description="e.g. ARaB"),
            OpenApiParameter("variant", str, required=True, description="e.g. tf"),
            OpenApiParameter("cutoff", int, required=True),
            OpenApiParameter("limit", int, description="How many queries (default 50, at most 1000)."),
        ],
        responses=dict,
    )
    @action(detail=True, url_path="contributions")
    def contributions(self, request, name=None, format=None):
        """A report on a batch's labels: which queries move ``run``'s paired difference against the
        baseline and whose labels are least certain (``rows`` by ``expected_shift``: the chance the
        label is wrong × how far the difference moves if flipped). 400 with ``detail`` for a bad choice."""
        report = self.get_object()
        params = request.query_params
        try:
            cutoff = parse_count(params.get("cutoff", ""), "cutoff", minimum=1, maximum=MAX_CUTOFF)
            limit = parse_count(params.get("limit") or "50", "limit", minimum=1, maximum=1000)
        except NumberError as exc:
            return Response({"detail": str(exc)}, status=400)
        if not report.on_batch:
            return Response({"detail": f"report {report.name!r} is not on a batch's labels"}, status=400)
        # A refusal (ServiceError) is the exception handler's 400 with its detail.
        return Response(
            report_contributions(
                report, params.get("run", ""), params.get("metric", ""), params.get("variant", ""), cutoff, limit
            )
        )

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "layout", str, enum=list(TABLE_LAYOUTS), description="The paper's table (default ecir2024)."
            ),
            OpenApiParameter(
                "cutoff", int, description="The table's cutoff (default 10 when computed, else the largest)."
            ),
            OpenApiParameter("baseline", str, description="Run the others are tested against (default: the report's)."),
            OpenApiParameter(
                "correlate", str, description="Two metrics to correlate per run, e.g. TExFAIR:plain,NFaiRR."
            ),
        ],
        responses=dict,
    )
    @action(detail=True, url_path="table")
    def table(self, request, name=None, format=None):
        """A paper's table (``metrics.tables``): ``columns``; per run its ``cells`` (value, queries,
        CI, ``p_value`` against the baseline under the project's one policy — the same p as the
        report's results — its unadjusted ``p_raw``, ``*`` mark) and ``correlations`` (Pearson r and
        Kendall tau with p-values, ``†`` mark); ``significance`` and ``correlation_significance``
        state the test, family and correction; ``missing`` names columns the report lacks. A bad
        choice: 400 with ``detail``."""
        params = request.query_params
        try:
            cutoff = (
                parse_count(params["cutoff"], "cutoff", minimum=1, maximum=MAX_CUTOFF)
                if params.get("cutoff", "").strip()
                else None
            )
        except NumberError as exc:
            return Response({"detail": str(exc)}, status=400)
        table = report_table(  # a refusal (ServiceError): the exception handler's 400 with its detail
            self.get_object(),
            params.get("layout", TABLE_LAYOUTS[0]),
            cutoff=cutoff,
            baseline=params.get("baseline") or None,
            correlate=params.get("correlate") or None,
        )
        return Response(table)


class LabelSensitivityView(APIView):
    """Label sensitivity of a batch (``?batch=&runs=a,b&cutoffs=5,10,20&threshold=0.9&background=&bootstrap=``).

    Never computed in the request: the first ask starts a job and answers 202 with it (``Location``:
    where to poll it); asking again while it runs answers the same job, and once it is done, 200 with
    the result, kept for these settings and the batch's answers as they are
    (:class:`~metrics.models.LabelSensitivityResult`): ``rows`` (aggregation, disputed, run, metric,
    variant, cutoff, value, ci_low, ci_high, n_queries), ``rankings`` (Kendall's tau against
    majority/drop and the swapped pairs), ``set_sizes`` (non-gendered queries per aggregation/policy).
    Bad parameters: 400 with ``detail``; an unknown batch: 404; past the bound on jobs in flight
    (``JOB_MAX_IN_FLIGHT_PER_USER``, ``JOB_MAX_IN_FLIGHT_PER_GROUP``): 429 saying so. A viewer starts no job:
    the kept result (200) or the job under way (202), else 409 saying a researcher asks for it.
    """

    permission_classes = [permissions.IsAdminUser]

    @extend_schema(
        parameters=[
            OpenApiParameter("batch", str, required=True),
            OpenApiParameter("runs", str, required=True, description="comma-separated run names"),
            OpenApiParameter("cutoffs", str, description=SENSITIVITY_CUTOFFS_OPTION.describe()),
            OpenApiParameter("threshold", float, description="least confidence for 'confident' (default 0.9)"),
            OpenApiParameter("background", str, description="NFaiRR background run (default: the collection)"),
            OpenApiParameter("bootstrap", int, description="bootstrap resamples, at most 2000 (default 1000)"),
        ],
        responses={200: LabelSensitivitySerializer, 202: JobSerializer, 409: ErrorSerializer},
    )
    def get(self, request: Request) -> Response:
        form = LabelSensitivityForm.from_query(request.query_params)
        if not form.is_valid():
            if form.unknown_batch():
                return Response({"detail": f"no batch named {form.data['batch']!r}"}, status=404)
            detail = "; ".join(f"{field}: {' '.join(errors)}" for field, errors in form.errors.items())
            return Response({"detail": detail, "errors": form.errors}, status=400)
        # A refusal (ServiceError, TooManyJobs, a viewer's StateError) is the exception handler's 400 / 429 / 409.
        kept = form.ask(may_start=may_act(request.user, form.cleaned_data["batch"]))
        if kept.result is None:
            return job_started(kept.job)
        return Response(kept.result)


class CrboRequestSerializer(serializers.Serializer):
    """What measuring CRBO takes (the CRBO page's form)."""

    run = serializers.CharField(help_text="The ranker's run on the collection.")
    counterfactual_run = serializers.CharField(help_text="The same ranker's run on the counterfactual collection.")
    depth = CountField(min_value=1, max_value=10000, default=CRBO_DEPTH)
    p = DecimalNumberField(min_value=0.0, max_value=1.0, default=CRBO_P, help_text="RBO persistence, in (0, 1).")
    ties = option_field(TIES_OPTION)


class PreferenceRequestSerializer(serializers.Serializer):
    """What measuring variant preference takes (the preference page's form)."""

    run = serializers.CharField()
    separator = serializers.CharField(max_length=5, default="-", trim_whitespace=False)
    versions = serializers.CharField(default=",".join(VARIANT_VERSIONS), help_text="Comma-separated suffixes.")


class _JobFormView(APIView):
    """``POST``: the request (``serializer_class``, which documents it) checked by the page's form
    (``form_class``), whose work starts as a job: 202 with it."""

    permission_classes = [permissions.IsAdminUser]
    serializer_class: type[serializers.Serializer]
    form_class: type

    @extend_schema(responses={202: JobSerializer})
    def post(self, request, format=None):
        form = self.form_class(form_data(request, self.serializer_class))
        if not form.is_valid():
            raise form_errors(form)
        return job_started(form.start())


class CrboView(_JobFormView):
    """``POST /api/metrics/crbo/``: measure CRBO as a job; its ``result`` holds the mean and per-query RBO."""

    serializer_class, form_class = CrboRequestSerializer, CrboForm


class PreferenceView(_JobFormView):
    """``POST /api/metrics/preference/``: measure variant preference as a job; ``result`` holds the wins."""

    serializer_class, form_class = PreferenceRequestSerializer, PreferenceForm


def _names(help_text: str) -> serializers.ListField:
    """Rows by their names, none by default."""
    return serializers.ListField(child=serializers.CharField(), required=False, default=list, help_text=help_text)


class CompareSetsRequestSerializer(serializers.Serializer):
    """What comparing runs across query sets takes (the Across sets page's form)."""

    reports = _names("A report per query set (names), of the same runs.")
    query_sets = _names("Or query sets (names) to score ``runs`` on: a report per set is built first (or reused).")
    runs = _names("The runs scored on ``query_sets``.")
    prefix = serializers.SlugField(required=False, default="across", max_length=60)
    metric = serializers.ChoiceField(choices=list(BY_NAME), default="ARaB")
    variant = serializers.CharField(required=False, default="", allow_blank=True, help_text="Empty: the metric's own.")
    cutoff = CountField(min_value=1, max_value=MAX_CUTOFF, default=10)
    samples = CountField(min_value=1, max_value=100_000, default=1000, help_text="Bootstrap replicates.")
    seed = CountField(min_value=0, max_value=2**31 - 1, default=0)


class CompareSetsView(_JobFormView):
    """``POST /api/metrics/compare-sets/``: each set's ranking of the runs and Kendall's τ between the
    sets' orders, as a job; its ``result`` holds them."""

    serializer_class, form_class = CompareSetsRequestSerializer, CompareSetsForm


class CounterfactualRequestSerializer(serializers.Serializer):
    """What writing a counterfactual collection takes (the CRBO page's second form)."""

    collection = serializers.CharField(help_text="The registered collection to swap.")
    name = serializers.SlugField(help_text="Name of the counterfactual collection.")
    wordlist = serializers.CharField(required=False, help_text="Word list whose first names are swapped.")
    her = serializers.ChoiceField(choices=list(HER_CHOICES), default="his")


class CounterfactualView(_JobFormView):
    """``POST /api/metrics/counterfactual-collections/``: write and register a counterfactual collection as a job."""

    serializer_class, form_class = CounterfactualRequestSerializer, CounterfactualForm


class PlanRequestSerializer(serializers.Serializer):
    """What a study plan takes (``manage.py plan_study``'s options; the batch page's plan panel)."""

    runs = serializers.ListField(
        child=serializers.CharField(), min_length=2, max_length=2, help_text="The two runs A, B (Δ is A − B)."
    )
    metric = serializers.CharField(help_text="e.g. ARaB, RaB, NFaiRR, TExFAIR, nDCG.")
    delta = DecimalNumberField(help_text="The difference to detect, > 0.")
    cutoff = CountField(min_value=1, max_value=MAX_CUTOFF, default=10)
    variant = serializers.CharField(
        required=False, help_text="Default: the paper's (tf for RaB/ARaB, rbdf for TExFAIR)."
    )
    power = DecimalNumberField(min_value=0.5, max_value=0.99, default=0.8)
    alpha = DecimalNumberField(min_value=0.001, max_value=0.5, default=0.05)
    queries = serializers.CharField(
        required=False, help_text="The pilot's query set (without a report): its newest stored report with both runs."
    )
    report = serializers.CharField(required=False, help_text="The pilot report (default: the newest on the query set).")
    pool = serializers.CharField(required=False, help_text="Adds the pooled queries to annotate and their cost.")
    draws = CountField(
        min_value=100, max_value=2000, default=2000, help_text="Simulated studies (the command allows more)."
    )
    reward = MoneyField(minimum="0.01", required=False)
    assignments_per_query = CountField(min_value=1, max_value=50, required=False)
    queries_per_hit = CountField(min_value=1, max_value=100, required=False)
    audit_width = DecimalNumberField(
        required=False, help_text="The audit-based interval's full width wanted for the difference (default Δ)."
    )
    audit_seconds = DecimalNumberField(
        min_value=1, max_value=3600, required=False, help_text="An expert's seconds per audited query (default 20)."
    )


class PlanView(APIView):
    """``POST /api/metrics/plan/``: a study plan, computed on request (``metrics.services.planning``):
    ``n_queries`` (simulated, beside ``n_queries_normal``), ``minimum_detectable_difference``,
    ``power_at_current_n``, the ``pilot`` used and, with a ``pool``, ``pooled_to_annotate``,
    ``non_gendered_share`` and ``cost`` per provider (USD; ``machine`` after routing); ``audit``, the expert
    audit sample's size and hours. Bad input:
    400 with the fields' errors or ``detail``."""

    permission_classes = [permissions.IsAdminUser]

    @extend_schema(request=PlanRequestSerializer, responses=dict)
    def post(self, request, format=None):
        data = dict(form_data(request, PlanRequestSerializer))
        data["run_a"], data["run_b"] = data.pop("runs")
        form = PlanForm(data)
        if not form.is_valid():
            raise form_errors(form)
        return Response(form.plan())
