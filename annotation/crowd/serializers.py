"""REST representations of a batch's records and of the requests that act on a batch; workers appear by
pseudonym only."""

import functools
from decimal import Decimal

from django.urls import reverse
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from annotation.crowd.providers.base import batch_options, provider_class, provider_names
from annotation.crowd.providers.options import BatchOption, OptionError
from annotation.models import Assignment, Batch, Export, Hit, Judgment
from annotation.models.crowd import DEFAULT_MAX_ASSIGNMENTS
from core.amounts import AMOUNT
from core.serializers import CountField, JobSerializer, MoneyField
from genderbias.labels import CATEGORY_SLUGS, LABELS


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
            "failed_gold_answers",
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


class BatchFiguresSerializer(serializers.Serializer):
    """A batch's figures as every page shows them (``batch_state``)."""

    answered = serializers.IntegerField(help_text="Assignments answered: submitted or approved, not failed on gold.")
    expected = serializers.IntegerField(help_text="Assignments asked for.")
    gold_failures = serializers.IntegerField(help_text="Assignments that failed their gold questions.")
    spent = MoneyField(help_text="USD spent, fees and bonuses included.")


class BatchProgressSerializer(serializers.Serializer):
    hits = serializers.IntegerField()
    hits_published = serializers.IntegerField()
    assignments_expected = serializers.IntegerField()
    assigned = serializers.IntegerField()
    submitted = serializers.IntegerField()
    approved = serializers.IntegerField()
    rejected = serializers.IntegerField()
    answered = serializers.IntegerField(help_text="This batch's own answered assignments (ANSWERED_WORK).")
    charged = serializers.IntegerField(help_text="This batch's own assignments the platform charges for.")
    failed_gold = serializers.IntegerField(help_text="This batch's own assignments that failed their gold questions.")
    batch = BatchFiguresSerializer(
        help_text="The figures the pages show (a machine-labelled batch: its crowd batches')", required=False
    )
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
    """The agreement report (see ``genderbias.crowd.agreement.agreement_report``), documented for the schema."""

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


class _ReadByOption:
    """A request field read by its batch option's declaration (:meth:`BatchOption.parse`), a 400 naming
    the field; the DRF class it is mixed into is what the OpenAPI schema documents."""

    option: BatchOption

    def to_internal_value(self, data):
        try:
            return self.option.parse(data)
        except OptionError as exc:
            raise serializers.ValidationError(str(exc)) from None

    def run_validators(self, value) -> None:
        if value is not None:  # nothing given (blank): the default applies, there is no value to bound
            super().run_validators(value)


def _provider_field(option: BatchOption, value: str, component: str) -> serializers.Field:
    """``provider`` in one platform's request: that platform alone, its one-value enum named after the
    request (``x-spec-enum-id``)."""
    schema = {"type": "string", "enum": [value], "x-spec-enum-id": f"{component}-provider"}
    if value == option.default:
        schema["default"] = value
    field_class = extend_schema_field(schema)(type("ProviderField", (serializers.ChoiceField,), {}))
    kwargs = {"default": value} if value == option.default else {}
    return field_class(choices=[value], help_text=f"{dict(option.choices)[value]}.", **kwargs)


def _option_field(option: BatchOption, *, only: str | None = None, component: str = "") -> serializers.Field:
    """The request field of ``option`` (``only``: the one value ``provider`` takes in a platform's request)."""
    kwargs: dict = {"help_text": option.help, "required": False}
    nullable = {"allow_null": True} if option.default is None else {}
    if option.default is not None:
        kwargs["default"] = option.default
    kind = option.kind
    if option.name == "provider":
        return _provider_field(option, only or option.default, component)
    if kind == "whole":
        base = serializers.IntegerField
        extra = {"min_value": option.minimum or 0, "max_value": option.maximum, **nullable}
    elif kind == "share":
        low = 0.0 if option.minimum is None else option.minimum
        high = 1.0 if option.maximum is None else option.maximum
        base, extra = serializers.FloatField, {"min_value": low, "max_value": high, **nullable}
    elif kind == "money":
        base = serializers.DecimalField
        extra = {
            "max_digits": 14,
            "decimal_places": 2,
            "min_value": Decimal(option.minimum or "0"),
            "max_value": Decimal(option.maximum) if option.maximum is not None else None,
            **nullable,
        }
    elif kind == "choice":
        base, extra = serializers.ChoiceField, {"choices": list(option.choices), "allow_blank": option.default is None}
    elif kind == "choices":
        return serializers.ListField(child=serializers.ChoiceField(choices=list(option.choices)), **kwargs)
    elif kind == "batches":
        return serializers.ListField(child=serializers.SlugField(), **kwargs)
    elif kind == "flag":
        return serializers.BooleanField(**kwargs)
    else:  # text, codes
        base, extra = serializers.CharField, {"allow_blank": True}
    field_class = type(f"{base.__name__}Option", (_ReadByOption, base), {"option": option})
    if kind == "money":  # what parse_amount reads: ASCII digits, at most two decimals (no sign, no exponent)
        field_class = extend_schema_field({"type": "string", "format": "decimal", "pattern": f"^{AMOUNT.pattern}$"})(
            field_class
        )
        low, high = option.minimum or "0", option.maximum
        kwargs["help_text"] += f" From {low} to {high} USD." if high else f" At least {low} USD."
    return field_class(**{k: v for k, v in extra.items() if v is not None}, **kwargs)


@extend_schema_field({"type": "string"})
class GoldFileField(serializers.FileField):
    """The gold file: a multipart file part. Documented as a string, not ``format: binary``:
    Schemathesis cannot generate a binary inside a ``oneOf`` body ("Unsupported type: 'Binary'")."""


@functools.cache
def batch_request_serializer(provider: str, *, estimate: bool = False) -> type[serializers.Serializer]:
    """What creating a batch on ``provider`` takes (``estimate``: its cost estimate, no ``name`` nor
    ``gold``); the endpoint reads the request with it, so the schema documents exactly what it accepts."""
    fields: dict[str, serializers.Field] = {}
    if not estimate:
        fields["name"] = serializers.SlugField(max_length=100, help_text="Letters, digits, hyphens and underscores.")
    fields["pool"] = serializers.CharField(required=False, help_text="A pool's name (or give queries).")
    fields["queries"] = serializers.CharField(required=False, help_text="A query set's name (or give pool).")
    if not estimate:
        fields["gold"] = GoldFileField(
            required=False, allow_null=True, help_text="qid<TAB>query<TAB>label lines (multipart; null: none)."
        )
        fields["gold_set"] = serializers.CharField(
            required=False, help_text="Or gold from a labelled query set: its name (imported from a labelled file)."
        )
    title = provider_class(provider).__name__.removesuffix("Provider")
    name = f"{title}Batch{'Estimate' if estimate else ''}Request"
    for option in batch_options(provider):
        if option.on_form:
            fields[option.name] = _option_field(option, only=provider, component=name)
    return type(name, (serializers.Serializer,), {**fields, "__doc__": f"A batch on {provider_class(provider).label}."})


def batch_request_serializers(*, estimate: bool = False) -> list[type[serializers.Serializer]]:
    """One request serializer per registered platform (the schema's ``oneOf``)."""
    return [batch_request_serializer(name, estimate=estimate) for name in provider_names()]


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
    max_assignments = CountField(  # genderbias.numbers: DRF's IntegerField read "1_0" as 10 and "٣" as 3
        min_value=1, max_value=50, default=DEFAULT_MAX_ASSIGNMENTS, help_text="Cap on assignments per HIT."
    )


class EscalationStartedSerializer(JobSerializer):
    hits = serializers.ListField(child=serializers.IntegerField(), help_text="Positions of the HITs escalated.")
    cost = serializers.CharField(allow_null=True, help_text="Extra cost (USD) of the new assignments.")

    class Meta(JobSerializer.Meta):
        fields = [*JobSerializer.Meta.fields, "hits", "cost"]


class MachineOpinionSerializer(serializers.Serializer):
    label = serializers.CharField()
    confidence = serializers.FloatField()
    labeller = serializers.CharField()
    model = serializers.CharField()


class VoteSerializer(serializers.Serializer):
    """One worker's answer to a query (pseudonymous) with its hand signals (null: not recorded)."""

    worker = serializers.CharField()
    label = serializers.CharField()
    pastes = serializers.IntegerField(allow_null=True, required=False)
    tab_leaves = serializers.IntegerField(allow_null=True, required=False)
    item_ms = serializers.IntegerField(allow_null=True, required=False)


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
    agreement = serializers.FloatField(allow_null=True, help_text="Share of the votes that gave the label; null: none.")
    machine = MachineOpinionSerializer(
        allow_null=True, required=False, help_text="The machine's label and confidence (accepted or not); null: none."
    )
    votes = VoteSerializer(many=True, help_text="Every usable human answer, with how it was given.")


class CancelledSerializer(serializers.Serializer):
    batch = serializers.CharField()
    status = serializers.CharField()
    expired_hits = serializers.IntegerField()
