"""REST representations of reports (read-only), results nested."""

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from core.figure_notes import FigureNotes, figure_notes
from core.options import ReportOption
from core.serializers import CountField, DecimalNumberField
from genderbias.ranking.defaults import LABEL_UNCERTAINTY_COLUMNS
from metrics.selectors import report_policy

from .models import Report, Result
from .selectors import SUMMARY_FIELDS


def option_field(option: ReportOption) -> serializers.Field:
    """The API's field of a declared report setting (:mod:`core.options`): its help with its
    bounds and default; the value is checked by the declaration's one check (the report form's)."""
    default = {"default": option.default_text if option.kind == "cutoffs" else option.default}
    common = {**(default if option.default not in (None, "") else {"required": False}), "help_text": option.describe()}
    if option.kind == "choice":
        # The declared (value, label) pairs, as the model's field has them: one enum in the OpenAPI schema, not two.
        return serializers.ChoiceField(choices=option.choices, **common)
    if option.kind == "number":
        return DecimalNumberField(**common)
    if option.kind == "count":
        return CountField(**common)
    return serializers.CharField(**common)


class ResultSerializer(serializers.ModelSerializer):
    run = serializers.CharField(source="run.name")
    sign_undecided = serializers.SerializerMethodField(
        help_text="The range over the orders of tied documents holds 0: the ranking does not decide the sign "
        "(metrics.formatting.figure_notes, as the page's warning)."
    )
    notes = serializers.SerializerMethodField(
        help_text="What the report says of the figure beyond its value and interval (its range over the orders "
        "of ties, the sign warning, the crowd check's warning), as the CSV's notes column."
    )

    class Meta:
        model = Result
        # The summary's columns (one list: the CSV, the page and the API), and those of a report on a batch's
        # labels (null otherwise): genderbias.crowd.label_uncertainty.
        fields = ["run", *SUMMARY_FIELDS, *LABEL_UNCERTAINTY_COLUMNS, "sign_undecided", "notes"]

    def _notes(self, result: Result) -> FigureNotes:
        return figure_notes(
            {field: getattr(result, field) for field in ("metric", "tie_low", "tie_high", "combined_low")},
            result.report.figure_quality,
        )

    def get_sign_undecided(self, result: Result) -> bool:
        return self._notes(result).sign_undecided

    def get_notes(self, result: Result) -> list[str]:
        from metrics.formatting import interval_notes  # start-up

        return interval_notes(self._notes(result).texts(), result.report.interval_sentence, result.corrected)


class ReportListSerializer(serializers.ModelSerializer):
    query_set = serializers.SlugRelatedField(slug_field="name", read_only=True)
    runs = serializers.ListField(source="run_order", child=serializers.CharField(), read_only=True)
    background = serializers.CharField(read_only=True)
    baseline = serializers.SlugRelatedField(slug_field="name", read_only=True)

    class Meta:
        model = Report
        fields = ["id", "name", "query_set", "runs", "cutoffs", "tokenizer", "background", "baseline", "created"]


class SignificanceSerializer(serializers.Serializer):
    test = serializers.CharField()
    family = serializers.CharField()
    correction = serializers.CharField()
    alpha = serializers.FloatField()
    baseline = serializers.CharField()
    interval = serializers.CharField(
        required=False,
        help_text="A report on a batch's labels: the combined interval's construction (genderbias.stats.intervals.LABEL_INTERVAL).",
    )
    label_interval = serializers.CharField(
        required=False, help_text="A report on a batch's labels: which interval its figures got and why."
    )
    label_interval_kind = serializers.ChoiceField(
        choices=["audit", "crowd", "may_not_cover"], required=False, help_text="That interval's kind."
    )


class ReportSerializer(ReportListSerializer):
    wordlist = serializers.CharField(source="wordlist.name", read_only=True)
    representative_wordlist = serializers.CharField(source="representative_wordlist.name", read_only=True)
    qrels = serializers.SlugRelatedField(slug_field="name", read_only=True)
    results = ResultSerializer(many=True, read_only=True)
    significance = serializers.SerializerMethodField(
        help_text="How the results' p_value were made (test, family, correction); null without a baseline."
    )

    @extend_schema_field(SignificanceSerializer(allow_null=True))
    def get_significance(self, report: Report) -> dict | None:
        return report_policy(report)

    label_interval = serializers.JSONField(
        read_only=True,
        help_text="A report on a batch's labels: which interval its label-corrected figures got (kind: audit, "
        "PPI++ on an expert audit sample; crowd, the crowd model's; may_not_cover, none: their combined_low and "
        "combined_high are null) and the sentence that says why; null on a query set or built before.",
    )
    label_batch = serializers.SlugRelatedField(
        slug_field="name", read_only=True, help_text="A report on this batch's labels (null: on a query set)."
    )

    class Meta(ReportListSerializer.Meta):
        fields = [
            *ReportListSerializer.Meta.fields,
            "wordlist",
            "representative_wordlist",
            "threshold",
            "nfairr_normaliser",
            "awrf_weights",
            "awrf_p",
            "exposure_target",
            "protected_group",
            "cut_step",
            "exposure_form",
            "ties",
            "preset",
            "tied_queries",
            "qrels",
            "measures",
            "unjudged",
            "unreturned",
            "bootstrap_samples",
            "seed",
            "software_version",
            "texts_sha256",
            "texts_read",
            "significance",
            "label_batch",
            "answers_version",
            "labels_calibrated",
            "crowd_quality",
            "label_interval",
            "results",
        ]


class PerQuerySerializer(serializers.Serializer):
    run = serializers.CharField()
    qid = serializers.CharField()
    metric = serializers.CharField()
    variant = serializers.CharField()
    cutoff = serializers.IntegerField()
    value = serializers.FloatField(allow_null=True, help_text="Null where undefined (e.g. a query without judgments).")


class SensitivityRowSerializer(serializers.Serializer):
    aggregation = serializers.CharField()
    disputed = serializers.CharField()
    run = serializers.CharField()
    metric = serializers.CharField()
    variant = serializers.CharField()
    cutoff = serializers.IntegerField()
    value = serializers.FloatField(allow_null=True)
    ci_low = serializers.FloatField(allow_null=True)
    ci_high = serializers.FloatField(allow_null=True)
    n_queries = serializers.IntegerField()


class RankingChangeSerializer(serializers.Serializer):
    aggregation = serializers.CharField()
    disputed = serializers.CharField()
    metric = serializers.CharField()
    variant = serializers.CharField()
    cutoff = serializers.IntegerField()
    runs = serializers.IntegerField()
    kendall_tau = serializers.FloatField(allow_null=True, help_text="Against majority/drop; null when undefined.")
    swapped = serializers.CharField(help_text="Pairs of runs whose order is reversed, '; '-separated.")


class LabelSensitivitySerializer(serializers.Serializer):
    batch = serializers.CharField()
    runs = serializers.ListField(child=serializers.CharField())
    cutoffs = serializers.ListField(child=serializers.IntegerField())
    threshold = serializers.FloatField()
    nfairr_normalisation = serializers.CharField()
    set_sizes = serializers.DictField(child=serializers.IntegerField(), help_text="'aggregation/policy' -> queries.")
    rows = SensitivityRowSerializer(many=True)
    rankings = RankingChangeSerializer(many=True)
