"""REST representations of the annotation app's records.

Workers appear by pseudonym only; a serializer never reaches ``WorkerIdentity``.
"""

from rest_framework import serializers

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
    batch = serializers.SlugRelatedField(slug_field="name", read_only=True)
    query_set = serializers.SlugRelatedField(slug_field="name", read_only=True)

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
            "path",
            "card_path",
            "query_set",
            "created",
        ]


class ExportRequestSerializer(serializers.Serializer):
    category = serializers.ChoiceField(choices=["non-gendered", "female", "male", "other", "all"])
    format = serializers.ChoiceField(choices=["tsv", "csv", "jsonl"], default="tsv")
    as_query_set = serializers.SlugField(required=False, allow_blank=True)


class AgreementSerializer(serializers.Serializer):
    """The agreement report (see ``annotation.agreement.agreement_report``), documented for the schema."""

    batch = serializers.CharField()
    krippendorff_alpha = serializers.FloatField(allow_null=True)
    alpha_ci = serializers.ListField(child=serializers.FloatField(allow_null=True))
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
    labels = serializers.DictField(child=serializers.IntegerField())
    disputed = serializers.ListField(child=serializers.CharField())
    set_aside = serializers.ListField(child=serializers.CharField())
    per_worker = serializers.ListField(child=serializers.DictField())
    confusion = serializers.DictField()
    method_disagreements = serializers.ListField(child=serializers.DictField())


class JobStartedSerializer(serializers.Serializer):
    job = serializers.IntegerField()
    url = serializers.CharField()
