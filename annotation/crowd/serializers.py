"""REST representations of a batch's records and of the requests that act on a batch.

Workers appear by pseudonym only; a serializer never reaches ``WorkerIdentity``.
"""

from django.urls import reverse
from rest_framework import serializers

from annotation.labels import CATEGORY_SLUGS, LABELS
from annotation.models import Assignment, Batch, Export, Hit, Judgment
from annotation.models.crowd import DEFAULT_MAX_ASSIGNMENTS
from core.serializers import JobSerializer, MoneyField


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
    """The agreement report (see ``annotation.results.agreement.agreement_report``), documented for the schema."""

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
    """One worker's quality in a batch (see ``annotation.quality.selectors``)."""

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


class BatchRequestSerializer(serializers.Serializer):
    """What creating a batch takes (the batch page's form; ``pool`` or ``queries``, not both)."""

    name = serializers.SlugField()
    pool = serializers.CharField(required=False)
    queries = serializers.CharField(required=False, help_text="A query set's name.")
    provider = serializers.ChoiceField(choices=["local", "mturk"], default="local")
    assignments_per_query = serializers.IntegerField(default=3)
    queries_per_hit = serializers.IntegerField(default=10)
    reward = MoneyField(minimum="0.01", maximum="999999.99", default="0.05", help_text="USD per assignment.")
    gold = serializers.FileField(required=False, help_text="qid<TAB>query<TAB>label lines (multipart).")
    gold_per_hit = serializers.IntegerField(default=0)
    locales = serializers.CharField(required=False)
    min_approval_rate = serializers.IntegerField(required=False)
    min_approved_hits = serializers.IntegerField(required=False)
    masters = serializers.BooleanField(required=False)


class CostEstimateSerializer(serializers.Serializer):
    hits = serializers.IntegerField()
    assignments_total = serializers.IntegerField()
    per_assignment_reward = serializers.CharField()
    per_assignment_fee = serializers.CharField()
    rewards = serializers.CharField()
    fees = serializers.CharField()
    total = serializers.CharField()
    fee_rate = serializers.CharField()


class SyncRequestSerializer(serializers.Serializer):
    approve_all = serializers.BooleanField(default=False, help_text="Approve every submitted answer unreviewed.")


class EscalateRequestSerializer(serializers.Serializer):
    max_assignments = serializers.IntegerField(
        min_value=1, max_value=50, default=DEFAULT_MAX_ASSIGNMENTS, help_text="Cap on assignments per HIT."
    )


class EscalationStartedSerializer(JobSerializer):
    hits = serializers.ListField(child=serializers.IntegerField(), help_text="Positions of the HITs escalated.")
    cost = serializers.CharField(allow_null=True, help_text="Extra cost (USD) of the new assignments.")

    class Meta(JobSerializer.Meta):
        fields = [*JobSerializer.Meta.fields, "hits", "cost"]


class QueryResultSerializer(serializers.Serializer):
    """One query's outcome in a batch (the agreement page's per-query rows)."""

    qid = serializers.CharField()
    query = serializers.CharField()
    label = serializers.CharField(allow_null=True, help_text="Adjudicated, else the majority; null: set aside.")
    crowd_label = serializers.CharField(allow_null=True)
    adjudicated = serializers.BooleanField()
    disputed = serializers.BooleanField()
    too_few_votes = serializers.BooleanField()
    counts = serializers.DictField(child=serializers.IntegerField())
    dawid_skene = serializers.CharField(allow_null=True)
    ds_posterior = serializers.FloatField(allow_null=True)


class CancelledSerializer(serializers.Serializer):
    batch = serializers.CharField()
    status = serializers.CharField()
    expired_hits = serializers.IntegerField()


# -- Prolific bonuses (issue 32) -------------------------------------------------------------
class BonusRuleRequestSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=["flat", "per_gold"], help_text="flat: per approved participant.")
    amount = MoneyField(minimum="0.01", maximum="999999.99", help_text="USD (plain ASCII digits, e.g. 0.50).")


class BonusRowSerializer(serializers.Serializer):
    participant = serializers.CharField()
    submission = serializers.CharField()
    amount = serializers.CharField()
    reason = serializers.CharField()
    state = serializers.CharField(help_text="new (not recorded yet), owed, set_up, paying (unconfirmed) or paid.")


class BonusCostSerializer(serializers.Serializer):
    participants = serializers.IntegerField()
    bonuses = serializers.CharField()
    fees = serializers.CharField()
    total = serializers.CharField()
    fee_rate = serializers.CharField()


class BonusPreviewSerializer(serializers.Serializer):
    """A batch's bonus rule, what it owes each participant and what paying now costs with Prolific's fee."""

    rule = serializers.DictField(allow_null=True)
    rows = BonusRowSerializer(many=True)
    to_pay = BonusCostSerializer()
    paid = BonusCostSerializer()
    unconfirmed = serializers.IntegerField()
    needs_person = serializers.IntegerField(
        help_text="Unconfirmed rows past PROLIFIC_BONUS_SETTLE_SECONDS: never paid again automatically; "
        "check Prolific, then confirm them paid or unpaid (manage.py prolific_bonus --confirm-paid/--confirm-unpaid)."
    )


class BonusPayRequestSerializer(serializers.Serializer):
    expected_total = MoneyField(
        maximum="99999999.99",
        required=False,
        help_text="The total (bonuses + fee) previewed: refused (409) if paying now would send another.",
    )


class BonusPaySerializer(serializers.Serializer):
    """A bonus pay job's ``result`` (``annotation.pay_bonuses``; with ``batch`` and ``url``)."""

    paid_now = serializers.IntegerField()
    amount_paid_now = serializers.CharField()
    confirmed = serializers.IntegerField()
    unconfirmed = serializers.IntegerField()
    needs_person = serializers.IntegerField(
        help_text="Of unconfirmed: past the settle time, Prolific still shows nothing; a person must check "
        "Prolific, then --confirm-paid or --confirm-unpaid (nothing is ever paid twice automatically)."
    )
    recorded = serializers.IntegerField()
