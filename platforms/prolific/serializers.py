"""The API's shape of a Prolific batch's submissions (:func:`platforms.prolific.selectors.submissions`)."""

from rest_framework import serializers


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
