"""REST representation of the shared state."""

from functools import partial

from rest_framework import serializers

from core.amounts import AmountError, parse_amount
from core.models import Job
from genderbias.numbers import NumberError, parse_count, parse_decimal


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


class MoneyField(serializers.DecimalField):
    """An amount of dollars in a request, read by :func:`core.amounts.parse_amount` within
    ``[minimum, maximum]``; a 400 naming the field."""

    def __init__(self, *, minimum: str = "0", maximum: str | None = None, **kwargs) -> None:
        self.minimum, self.maximum = minimum, maximum
        kwargs.setdefault("max_digits", 14)
        kwargs.setdefault("decimal_places", 2)
        super().__init__(**kwargs)

    def to_internal_value(self, data):
        if isinstance(data, (int, float)) and not isinstance(data, bool):
            data = str(data)  # JSON numbers arrive as floats: read as the text that was sent
        try:
            return parse_amount(data, self.field_name or "amount", minimum=self.minimum, maximum=self.maximum)
        except AmountError as exc:
            raise serializers.ValidationError(str(exc)) from None


class _ParsedNumber:
    """A number field that reads its input with ``parse(data, field name)`` (:mod:`genderbias.numbers`);
    a 400 names the field."""

    def to_internal_value(self, data):
        if isinstance(data, str) and len(data) > self.MAX_STRING_LENGTH:
            self.fail("max_string_length")
        try:
            return self.parse(data, self.field_name or "value")
        except NumberError as exc:
            raise serializers.ValidationError(exc.problem) from None


class CountField(_ParsedNumber, serializers.IntegerField):
    """A whole number in a request: a JSON integer or a string of ASCII digits (``IntegerField`` takes
    ``"١٠"`` and ``10.0``)."""

    parse = staticmethod(partial(parse_count, maximum=10**18))


class DecimalNumberField(_ParsedNumber, serializers.FloatField):
    """A number with a fraction in a request: a finite JSON number or a plain ASCII decimal
    (``FloatField`` takes ``"nan"``, ``"1e3"`` and ``"١.٥"``)."""

    parse = staticmethod(parse_decimal)


class ConnectionFieldSerializer(serializers.Serializer):
    """One field of a connection as in force: never a secret's value, at most its last four characters."""

    name = serializers.CharField(source="spec.name")
    label = serializers.CharField(source="spec.label")
    secret = serializers.BooleanField(source="spec.secret")
    setting = serializers.CharField(
        source="spec.setting", help_text="The environment variable that takes precedence when set."
    )
    shown = serializers.CharField(help_text="The value in force; a secret's last four characters only.")
    source = serializers.ChoiceField(choices=["environment", "site", "default", "unset"])
    stored = serializers.BooleanField(help_text="Whether this site stores a value (in force or overridden).")
    choices = serializers.ListField(
        source="spec.choices",
        child=serializers.CharField(),
        help_text="The only values the field takes; empty: any text.",
    )


class ConnectionSerializer(serializers.Serializer):
    kind = serializers.CharField(source="kind.kind")
    title = serializers.CharField(source="kind.title")
    fields = ConnectionFieldSerializer(many=True)
    problem = serializers.CharField(help_text="Why the stored secrets cannot be opened (CONNECTIONS_KEY), or empty.")
    last_test = JobSerializer(allow_null=True)


class ConnectionUpdateSerializer(serializers.Serializer):
    """A change of a connection: ``values`` by field name (a plain field given empty is cleared, a
    secret given empty kept), ``clear`` the secrets to remove."""

    values = serializers.DictField(child=serializers.CharField(allow_blank=True, max_length=2000), required=False)
    clear = serializers.ListField(child=serializers.CharField(max_length=100), required=False)
