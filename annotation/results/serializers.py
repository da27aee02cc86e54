"""The API's export request: a category of labelled queries in one of the export formats."""

from rest_framework import serializers

from annotation.results.export_formats import DEFAULT_EXPORT_FORMAT, EXPORT_FORMATS
from genderbias.labels import EXPORT_CATEGORIES


class ExportRequestSerializer(serializers.Serializer):
    category = serializers.ChoiceField(choices=list(EXPORT_CATEGORIES))
    format = serializers.ChoiceField(choices=list(EXPORT_FORMATS), default=DEFAULT_EXPORT_FORMAT)
    as_query_set = serializers.SlugField(required=False, allow_blank=True)
