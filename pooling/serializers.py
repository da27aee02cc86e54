"""REST representations of the pooling app's records (read-only)."""

from rest_framework import serializers

from .models import Collection, Pool, PoolEntry, Query, QuerySet, Run


class CollectionSerializer(serializers.ModelSerializer):
    class Meta:
        model = Collection
        fields = ["id", "name", "kind", "path", "size", "sha256", "passages", "created"]


class QuerySerializer(serializers.ModelSerializer):
    class Meta:
        model = Query
        fields = ["qid", "text"]


class QuerySetSerializer(serializers.ModelSerializer):
    size = serializers.IntegerField(source="queries.count", read_only=True)

    class Meta:
        model = QuerySet
        fields = ["id", "name", "origin", "source", "description", "size", "created"]


class RunSerializer(serializers.ModelSerializer):
    collection = serializers.SlugRelatedField(slug_field="name", read_only=True)

    class Meta:
        model = Run
        fields = ["id", "name", "collection", "path", "sha256", "order", "queries", "rows", "reordered_ties", "created"]


class PoolEntrySerializer(serializers.ModelSerializer):
    qid = serializers.CharField(source="query.qid")
    query = serializers.CharField(source="query.text")
    run = serializers.CharField(source="run.name")

    class Meta:
        model = PoolEntry
        fields = ["qid", "query", "run", "rank_bias", "tie_low", "tie_high", "female_position", "male_position"]


class PoolSerializer(serializers.ModelSerializer):
    source = serializers.SlugRelatedField(slug_field="name", read_only=True)
    queries = serializers.SlugRelatedField(slug_field="name", read_only=True)
    runs = serializers.SlugRelatedField(slug_field="name", many=True, read_only=True)
    wordlist = serializers.CharField(source="wordlist.name", read_only=True)

    class Meta:
        model = Pool
        fields = [
            "id",
            "name",
            "source",
            "queries",
            "runs",
            "wordlist",
            "rank_cutoff",
            "depth",
            "magnitude",
            "tokenizer",
            "ties",
            "created",
        ]
