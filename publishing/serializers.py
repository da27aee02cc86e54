"""Request body of ``POST /api/annotation/batches/<name>/dataset/`` (the folder comes back as a zip)."""

from rest_framework import serializers

from publishing.hub_card import HUB_LICENSES


class PublishDatasetRequestSerializer(serializers.Serializer):
    license = serializers.ChoiceField(choices=HUB_LICENSES, help_text="The Hub's license identifier (no default).")
    license_name = serializers.CharField(
        required=False, allow_blank=True, max_length=64, help_text="With license other: the Hub's license_name."
    )
    license_link = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=500,
        help_text="With license other: the Hub's license_link (a URL, or a file of the repository such as LICENSE).",
    )
    with_judgments = serializers.BooleanField(
        default=False, help_text="Also publish every judgment under dataset-local pseudonyms."
    )
