"""REST representations of the team of in-house annotators: members, their access, a batch's team and its progress."""

from rest_framework import serializers

from core.serializers import CountField, DecimalNumberField
from platforms.inhouse.services import team


class AnnotatorSerializer(serializers.Serializer):
    username = serializers.CharField()
    email = serializers.CharField()
    is_active = serializers.BooleanField(help_text="False: deactivated (no logins, no HITs).")
    has_password = serializers.BooleanField(
        source="has_usable_password", help_text="False: invited, link not used yet (or reset by link)."
    )
    date_joined = serializers.DateTimeField()
    last_login = serializers.DateTimeField(allow_null=True)
    batches = serializers.SerializerMethodField(help_text="Local batches with this annotator on their team.")

    def get_batches(self, user) -> list[str]:
        return sorted(b.name for b in user.annotation_team_batches.all())


class AccessRequestSerializer(serializers.Serializer):
    access = serializers.ChoiceField(
        choices=team.ACCESS, default="link", help_text="link: a one-time set-password link; password: a generated one."
    )


class AnnotatorRequestSerializer(AccessRequestSerializer):
    username = serializers.CharField(max_length=150)
    email = serializers.EmailField(required=False, default="")


class AccessSerializer(serializers.Serializer):
    """Shown once (Cache-Control: no-store): a password, or a one-time link and when it expires."""

    annotator = AnnotatorSerializer(source="user")
    password = serializers.CharField(allow_null=True)
    link = serializers.CharField(allow_null=True)
    link_expires = serializers.DateTimeField(allow_null=True)


class TeamRequestSerializer(serializers.Serializer):
    annotators = serializers.ListField(
        child=serializers.CharField(max_length=150), allow_empty=True, help_text="Usernames; empty: every annotator."
    )


class TeamProgressSerializer(serializers.Serializer):
    username = serializers.CharField()
    active = serializers.BooleanField()
    answered = CountField(help_text="HITs submitted (whatever their review).")
    in_progress = CountField(help_text="HITs handed out and not yet submitted.")
    hits = CountField(help_text="HITs in the batch (each annotator answers a HIT at most once).")
    gold_correct = CountField()
    gold_total = CountField()
    gold_accuracy = DecimalNumberField(allow_null=True)
    agreement = DecimalNumberField(allow_null=True, help_text="Share agreeing with the others' majority.")
    compared = CountField()
    rejected = CountField()
    blocked = serializers.BooleanField()
    flag = serializers.CharField(allow_null=True)


class UnfillableSerializer(serializers.Serializer):
    places = CountField(help_text="Free places of open HITs that no active member of the team can take.")
    hits = CountField(help_text="Open HITs with such places.")
    free = CountField(help_text="Free places of the open HITs in all.")
    positions = serializers.ListField(child=serializers.IntegerField(), help_text="The positions of those HITs.")
    escalated = CountField(help_text="How many of those places escalation added.")
    team = CountField(help_text="The team's members who may take places (active, not blocked).")
    needed = CountField(help_text="Annotators to add to the team: the most such places on one HIT.")
    who = serializers.CharField(help_text="Who is needed, in the words of routing's wait.")


class BatchTeamSerializer(serializers.Serializer):
    batch = serializers.CharField()
    restricted = serializers.BooleanField(help_text="False: every annotator may work on the batch.")
    annotators = serializers.ListField(child=serializers.CharField())
    progress = TeamProgressSerializer(many=True)
    unfillable = UnfillableSerializer(
        allow_null=True,
        help_text="Places no member can take (every member already did those HITs): add annotators "
        "(PUT this endpoint) or close the batch (POST .../cancel/); null when the team can finish the batch.",
    )
