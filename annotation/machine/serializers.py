"""REST representations of machine labelling: pre-label runs, calibration samples, routings, the answer cache."""

from __future__ import annotations

from rest_framework import serializers

from annotation.machine.services.routing import DEFAULT_RISK, ESTIMATE, GUARANTEE
from core.serializers import CountField, DecimalNumberField, JobSerializer, MoneyField


class PrelabelRequestSerializer(serializers.Serializer):
    labeller = serializers.CharField(
        help_text="rules, trained or openai (openai needs PRELABEL_API_URL and PRELABEL_MODEL)."
    )
    samples = CountField(
        required=False,
        min_value=1,
        help_text="openai only: answers first drawn per query (more up to PRELABEL_MAX_SAMPLES where no log-probabilities come back).",
    )
    train = serializers.CharField(
        required=False,
        help_text="trained only: batch:NAME, that batch's human labels (default: this batch's); or a train_file.",
    )
    train_file = serializers.FileField(required=False, help_text="trained only: qid<TAB>query<TAB>label lines.")


class PrelabelRunSerializer(serializers.Serializer):
    labeller = serializers.CharField()
    model = serializers.CharField()
    prompt_version = serializers.CharField()
    counts = serializers.DictField(child=CountField(), help_text="Label code -> queries.")
    labelled = CountField()
    mean_confidence = DecimalNumberField(allow_null=True)
    cv_accuracy = DecimalNumberField(allow_null=True, help_text="trained only: cross-validated accuracy.")
    created = serializers.DateTimeField()


class CalibrationSampleRequestSerializer(serializers.Serializer):
    sample = CountField(min_value=1, help_text="Queries to draw (with extend: how many more).")
    labeller = serializers.CharField(
        required=False, help_text="Sample this pre-labeller's labels (default: the latest)."
    )
    seed = CountField(default=0, min_value=0)
    publish = serializers.BooleanField(default=True, help_text="Publish the sample's HITs at once.")
    extend = serializers.BooleanField(
        default=False,
        help_text="Add the queries to the batch's sample (a further random draw; routing's guarantee stays valid). "
        "Without it a second sample is refused (409) while one exists; a sample drawn whole cannot be extended.",
    )
    extendable = serializers.BooleanField(
        default=False,
        help_text="Draw a sample that can be extended (routing spends 0.2 of δ on a betting test that allows it); "
        "default: drawn whole, all of δ on the exact test.",
    )
    escalation_cap = CountField(
        required=False,
        min_value=1,
        max_value=50,
        help_text="Assignments a sample HIT may be escalated to when a query of it has no decisive crowd label "
        "(default 7; the batch's votes per query: no escalation).",
    )
    until = serializers.CharField(
        default="majority", help_text="When a crowd label is decisive: majority, or posterior:P (0.5 < P < 1)."
    )


class StratumSerializer(serializers.Serializer):
    label = serializers.CharField()
    population = CountField()
    sampled = CountField()


class CalibrationSampleSerializer(serializers.Serializer):
    batch = serializers.CharField(help_text="The sample's batch.")
    parent = serializers.CharField()
    labeller = serializers.CharField()
    model = serializers.CharField()
    prompt_version = serializers.CharField()
    seed = CountField()
    design = serializers.CharField(help_text="simple random: drawn as routing's guarantee needs.")
    look = CountField(help_text="1 for the first draw, 2 for its first extension, ...")
    extends = serializers.CharField(allow_null=True, help_text="The sample batch this one extends (null: first draw).")
    queries = CountField()
    extendable = serializers.BooleanField(help_text="Drawn to be extended (δ split); false: drawn whole.")
    reference = serializers.DictField(
        allow_null=True, help_text="What right means: votes, cap, until, posterior, text (the sample's reference rule)."
    )
    strata = StratumSerializer(many=True)
    publish_job = JobSerializer(allow_null=True, help_text="Publishing the sample (null: not published).")


class RoutingRequestSerializer(serializers.Serializer):
    target_accuracy = DecimalNumberField(help_text="In (0, 1], e.g. 0.95.")
    budget = MoneyField(maximum="99999999.99", required=False, allow_null=True, help_text="USD; empty: no limit.")
    risk = DecimalNumberField(
        default=DEFAULT_RISK,
        help_text="The guarantee's δ: probability that the accepted labels fall short of the target anyway.",
    )
    no_guarantee = serializers.BooleanField(
        default=False, help_text="Choose by the sample's point estimate instead: NO guarantee."
    )
    cascade = serializers.ListField(
        child=serializers.CharField(max_length=60),
        required=False,
        max_length=10,
        help_text="Labellers in sequence, each NAME or NAME:FLOOR (e.g. rules:0.9, trained, openai): each keeps what "
        "it certifies at the target, the rest goes on; one guarantee for all they keep.",
    )
    # Reads only: check_routing checks the rules once (its FieldError is the 400 naming the field).


class RoutingPreviewRequestSerializer(RoutingRequestSerializer):
    qids = serializers.BooleanField(default=False, help_text="Include the query ids of each part.")


class RoutingSerializer(serializers.Serializer):
    batch = serializers.CharField(source="batch.name")
    routed_batch = serializers.CharField(source="routed_batch.name", allow_null=True, default=None)
    labeller = serializers.CharField()
    model = serializers.CharField()
    prompt_version = serializers.CharField()
    sample_batch = serializers.CharField(source="sample_batch.name", allow_null=True, default=None)
    target_accuracy = DecimalNumberField()
    risk = DecimalNumberField(allow_null=True, help_text="The guarantee's δ; null: point estimate, no guarantee.")
    rule = serializers.SerializerMethodField()
    threshold = DecimalNumberField(allow_null=True)
    estimated_accuracy = DecimalNumberField(allow_null=True)
    accuracy_ci = serializers.ListField(child=DecimalNumberField())
    accepted_count = serializers.SerializerMethodField()
    to_humans = CountField()
    over_budget = CountField()
    cost = serializers.DecimalField(max_digits=10, decimal_places=2, coerce_to_string=True)
    saving = serializers.DecimalField(max_digits=10, decimal_places=2, coerce_to_string=True)
    reference = serializers.DictField(
        help_text="What right meant: the sample's reference rule ({} before it was kept)."
    )
    stages = serializers.SerializerMethodField(help_text="A cascade's labellers in order (empty: one labeller).")
    created = serializers.DateTimeField()

    def get_stages(self, routing) -> list[dict]:
        return [
            {k: v for k, v in stage.items() if k != "accepted"} | {"accepted_count": len(stage.get("accepted", []))}
            for stage in routing.stages
        ]

    def get_accepted_count(self, routing) -> int:
        return len(routing.accepted)

    def get_rule(self, routing) -> str:
        return GUARANTEE if routing.risk is not None else ESTIMATE


class CachedAnswersSerializer(serializers.Serializer):
    model = serializers.CharField()
    prompt_version = serializers.CharField()
    queries = CountField(help_text="Query texts whose answers are cached.")
    requests = CountField(help_text="Requests those answers took.")


class ClearedCacheSerializer(serializers.Serializer):
    model = serializers.CharField()
    prompt_version = serializers.CharField(allow_null=True)
    deleted = CountField(help_text="Query texts whose cached answers were forgotten.")


class EchoReviewRequestSerializer(serializers.Serializer):
    """A researcher's decision on a worker the echo check flagged (``annotation.machine.services.echo``)."""

    worker = serializers.CharField(
        max_length=40, help_text="The worker's pseudonym, as the calibration report names it."
    )
    restore = serializers.BooleanField(
        help_text="true: their sample answers count in the reference after all; false: held out again."
    )
    reason = serializers.CharField(max_length=2000, required=False, default="", allow_blank=True)
