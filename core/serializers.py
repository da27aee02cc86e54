"""REST representation of the shared state."""

from rest_framework import serializers

from core.models import Job


class JobSerializer(serializers.ModelSerializer):
    fraction = serializers.FloatField(read_only=True, allow_null=True)

    class Meta:
        model = Job
        fields = [
            "id",
            "kind",
            "status",
            "description",
            "done",
            "total",
            "fraction",
            "message",
            "result",
            "created",
            "updated",
        ]
