"""The audit sample's API shapes: what a request sends and what it gets back."""

from __future__ import annotations

from rest_framework import serializers

from core.serializers import CountField


class DrawRequestSerializer(serializers.Serializer):
    size = CountField(
        required=False, min_value=1, help_text="Queries to draw; default 25 / expected_share, at least 50."
    )
    seed = CountField(required=False, min_value=0, help_text="Default: a fresh seed, stored with the sample.")
    expected_share = serializers.FloatField(
        default=0.5, help_text="Expected share of the class of interest (non-gendered), for the default size."
    )


class LabelRequestSerializer(serializers.Serializer):
    qid = serializers.CharField(help_text="An audited query's id.")
    label = serializers.CharField(help_text="n, f, m or o (or a category's name or slug).")


class AuditImportRequestSerializer(serializers.Serializer):
    file = serializers.FileField(help_text="qid<TAB>label[<TAB>labeller] lines, or the same as CSV.")


class TrustRequestSerializer(serializers.Serializer):
    username = serializers.CharField(max_length=150)
    trusted = serializers.BooleanField(default=True, help_text="false: no longer trusted.")


class AuditItemSerializer(serializers.Serializer):
    index = serializers.IntegerField(help_text="Place in the draw order, from 0.")
    qid = serializers.CharField()
    text = serializers.CharField()
    label = serializers.CharField(help_text='"" until labelled.')
    labeller = serializers.CharField()
    labelled_at = serializers.DateTimeField(allow_null=True)
    changes = serializers.IntegerField(help_text="How many times the label was changed.")


class AuditSampleSerializer(serializers.Serializer):
    drawn = serializers.BooleanField()
    population = serializers.IntegerField()
    size = serializers.IntegerField(required=False)
    seed = serializers.IntegerField(required=False)
    drawn_by = serializers.CharField(required=False)
    drawn_at = serializers.DateTimeField(required=False)
    labelled = serializers.IntegerField(required=False)
    labellers = serializers.ListField(child=serializers.CharField(), required=False)
    first_labelled_at = serializers.DateTimeField(required=False, allow_null=True)
    last_labelled_at = serializers.DateTimeField(required=False, allow_null=True)
    trusted = serializers.ListField(child=serializers.CharField(), required=False)
    items = AuditItemSerializer(many=True, required=False)
