"""REST representations of the annotation app's records.

Workers appear by pseudonym only; a serializer never reaches ``WorkerIdentity``.
"""

from django.urls import reverse
from rest_framework import serializers

from .export_formats import DEFAULT_EXPORT_FORMAT, EXPORT_FORMATS
from .labels import CATEGORY_SLUGS, EXPORT_CATEGORIES, LABELS
from .models import Assignment, Batch, Export, Hit, Judgment


class BatchSerializer(serializers.ModelSerializer):
    query_set = serializers.SlugRelatedField(slug_field="name", read_only=True)
    pool = serializers.SlugRelatedField(slug_field="name", read_only=True)

    class Meta:
        model = Batch
        fields = [
            "id",
            "name",
            "query_set",
            "pool",
            "provider",
            "status",
            "assignments_per_query",
            "queries_per_hit",
            "reward",
            "lifetime",
            "assignment_duration",
            "auto_approval_delay",
            "qualifications",
            "gold_per_hit",
            "gold_feedback",
            "warn_gold_accuracy",
            "block_gold_accuracy",
            "warn_agreement",
            "block_agreement",
            "min_answers_judged",
            "extra_budget",
            "escalate_until",
            "escalation_cap",
            "hit_type_id",
            "cost",
            "created",
            "published",
        ]


class BatchProgressSerializer(serializers.Serializer):
    hits = serializers.IntegerField()
    hits_published = serializers.IntegerField()
    assignments_expected = serializers.IntegerField()
    assigned = serializers.IntegerField()
    submitted = serializers.IntegerField()
    approved = serializers.IntegerField()
    rejected = serializers.IntegerField()
    judgments = serializers.IntegerField()
    invalid_judgments = serializers.IntegerField()
    fraction = serializers.FloatField(allow_null=True)
    queries = serializers.IntegerField()
    gold_queries = serializers.IntegerField()


class HitSerializer(serializers.ModelSerializer):
    batch = serializers.SlugRelatedField(slug_field="name", read_only=True)
    queries = serializers.SerializerMethodField()

    class Meta:
        model = Hit
        fields = ["id", "batch", "position", "provider_id", "status", "max_assignments", "queries", "created"]

    def get_queries(self, hit: Hit) -> list[str]:
        return [hq.batch_query.qid for hq in hit.hit_queries.all()]


class JudgmentSerializer(serializers.ModelSerializer):
    qid = serializers.CharField(source="batch_query.qid", read_only=True)
    query = serializers.CharField(source="batch_query.text", read_only=True)
    worker = serializers.CharField(source="assignment.worker.pseudonym", read_only=True)
    batch = serializers.CharField(source="assignment.hit.batch.name", read_only=True)
    assignment = serializers.IntegerField(source="assignment_id", read_only=True)

    class Meta:
        model = Judgment
        fields = ["id", "batch", "assignment", "qid", "query", "worker", "label", "invalid_reason"]


class AssignmentSerializer(serializers.ModelSerializer):
    batch = serializers.CharField(source="hit.batch.name", read_only=True)
    hit = serializers.IntegerField(source="hit.position", read_only=True)
    worker = serializers.CharField(source="worker.pseudonym", read_only=True)
    judgments = serializers.SerializerMethodField()

    class Meta:
        model = Assignment
        fields = [
            "id",
            "batch",
            "hit",
            "worker",
            "status",
            "accepted_at",
            "submitted_at",
            "valid",
            "gold_passed",
            "feedback",
            "judgments",
        ]

    def get_judgments(self, assignment: Assignment) -> list[dict]:
        return [
            {"qid": j.batch_query.qid, "label": j.label, "invalid_reason": j.invalid_reason}
            for j in assignment.judgments.all()
        ]


class ExportSerializer(serializers.ModelSerializer):
    """An export, with the API addresses that return its file and its dataset card (never a server path)."""

    batch = serializers.SlugRelatedField(slug_field="name", read_only=True)
    query_set = serializers.SlugRelatedField(slug_field="name", read_only=True)
    download = serializers.SerializerMethodField()
    card_download = serializers.SerializerMethodField()

    def get_download(self, export) -> str:
        return reverse("export-download", args=[export.pk])

    def get_card_download(self, export) -> str:
        return reverse("export-download", args=[export.pk]) + "?part=card"

    class Meta:
        model = Export
        fields = [
            "id",
            "batch",
            "category",
            "format",
            "method",
            "queries",
            "counts",
            "download",
            "card_download",
            "query_set",
            "created",
        ]


class ExportRequestSerializer(serializers.Serializer):
    category = serializers.ChoiceField(choices=list(EXPORT_CATEGORIES))
    format = serializers.ChoiceField(choices=list(EXPORT_FORMATS), default=DEFAULT_EXPORT_FORMAT)
    as_query_set = serializers.SlugField(required=False, allow_blank=True)


class AdjudicateRequestSerializer(serializers.Serializer):
    qid = serializers.CharField(max_length=100)
    label = serializers.ChoiceField(choices=[*LABELS, *CATEGORY_SLUGS])
    reason = serializers.CharField(max_length=2000)


class AdjudicationSerializer(serializers.Serializer):
    qid = serializers.CharField(source="batch_query.qid")
    label = serializers.CharField()
    reason = serializers.CharField()
    decided_by = serializers.CharField(source="decided_by.username")
    decided_at = serializers.DateTimeField()


class AgreementSerializer(serializers.Serializer):
    """The agreement report (see ``annotation.agreement.agreement_report``), documented for the schema."""

    batch = serializers.CharField()
    krippendorff_alpha = serializers.FloatField(allow_null=True)
    alpha_ci = serializers.ListField(child=serializers.FloatField(allow_null=True))
    bootstrap_resamples = serializers.IntegerField(help_text="Bootstrap resamples behind alpha_ci (0: none).")
    per_category_alpha = serializers.DictField(child=serializers.FloatField(allow_null=True))
    gwet_ac1 = serializers.FloatField(
        allow_null=True, help_text="Gwet's AC1 (beside alpha; robust to rare categories)."
    )
    per_category_ac1 = serializers.DictField(child=serializers.FloatField(allow_null=True))
    percent_agreement = serializers.FloatField(allow_null=True)
    fleiss_kappa = serializers.FloatField(allow_null=True)
    queries = serializers.IntegerField()
    judgments = serializers.IntegerField()
    workers = serializers.IntegerField()
    labels = serializers.DictField(
        child=serializers.IntegerField(),
        help_text="Labelled queries per label: a researcher's ruling first, else the majority vote.",
    )
    adjudicated = serializers.IntegerField(help_text="Queries a researcher settled (counted in labels).")
    disputed = serializers.ListField(
        child=serializers.CharField(), help_text="Queries the crowd left without a strict majority."
    )
    set_aside = serializers.ListField(
        child=serializers.CharField(),
        help_text="Judged queries without a label: disputed or too few votes, and not settled by a researcher.",
    )
    per_worker = serializers.ListField(child=serializers.DictField())
    confusion = serializers.DictField()
    method_disagreements = serializers.ListField(child=serializers.DictField())


class WorkerQualitySerializer(serializers.Serializer):
    """One worker's quality in a batch (see ``annotation.services.quality``)."""

    worker = serializers.CharField(help_text="pseudonym")
    blocked = serializers.BooleanField()
    assignments = serializers.IntegerField()
    rejected = serializers.IntegerField()
    gold_correct = serializers.IntegerField()
    gold_total = serializers.IntegerField()
    gold_accuracy = serializers.FloatField(allow_null=True)
    agreement = serializers.FloatField(allow_null=True, help_text="share agreeing with the majority")
    compared = serializers.IntegerField()
    ds_accuracy = serializers.FloatField(allow_null=True)
    seconds_per_query = serializers.FloatField(allow_null=True)
    flag = serializers.CharField(allow_null=True, help_text='"warn" or "block" by the batch\'s thresholds, or null')
    flag_reason = serializers.CharField(allow_blank=True)
