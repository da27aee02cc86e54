"""The API's shape of a Prolific batch's submissions (:func:`platforms.prolific.selectors.submissions`) and of its bonuses
(:func:`platforms.prolific.bonuses.selectors.preview_bonuses`)."""

from rest_framework import serializers

from core.serializers import MoneyField


class SubmissionRowSerializer(serializers.Serializer):
    submission_id = serializers.CharField()
    participant = serializers.CharField(
        help_text="This site's pseudonym of the participant ('' if they never arrived)."
    )
    status = serializers.CharField(help_text="As Prolific listed it at the last sync (ACTIVE, RETURNED, TIMED-OUT...).")
    work = serializers.CharField(help_text="The session's assignment here ('' if none).")
    started_at = serializers.DateTimeField(allow_null=True)
    completed_at = serializers.DateTimeField(allow_null=True)
    seconds = serializers.IntegerField(allow_null=True, help_text="Time taken, start to completion.")
    hourly_rate = serializers.DecimalField(
        max_digits=12, decimal_places=2, allow_null=True, help_text="The reward per HIT over the time taken, per hour."
    )
    gold_correct = serializers.IntegerField(allow_null=True)
    gold_total = serializers.IntegerField(allow_null=True)
    valid = serializers.BooleanField(
        allow_null=True, help_text="Every query of the HIT answered with a known category."
    )


class SubmissionsSerializer(serializers.Serializer):
    total = serializers.IntegerField()
    by_status = serializers.DictField(child=serializers.IntegerField())
    median_seconds = serializers.FloatField(allow_null=True)
    median_hourly_rate = serializers.FloatField(allow_null=True)
    reward = serializers.DecimalField(max_digits=8, decimal_places=2)
    listed_at = serializers.DateTimeField(allow_null=True)
    rows = SubmissionRowSerializer(many=True, help_text="The newest 500; the counts and medians cover all.")


# -- bonuses ---------------------------------------------------------------------------------------
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
