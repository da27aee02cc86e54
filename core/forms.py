"""Forms of the shared app's pages."""

from __future__ import annotations

from datetime import timedelta

from django import forms


class CountField(forms.IntegerField):
    """A whole number typed by a person: ASCII digits only (:func:`core.numbers.parse_count`:
    ``forms.IntegerField`` took ``١٠`` as 10); the range is the field's ``min_value``/``max_value``."""

    def to_python(self, value):
        from core.numbers import NumberError, parse_count

        if value in self.empty_values:
            return None
        try:
            return parse_count(value if isinstance(value, int) else str(value), self.label or "value", maximum=10**18)
        except NumberError as exc:
            raise forms.ValidationError(exc.problem, code="invalid") from None


class DecimalNumberField(forms.FloatField):
    """A number with a fraction typed by a person: a plain ASCII decimal (:func:`core.numbers.parse_decimal`:
    ``forms.FloatField`` took ``١.٥`` and ``1e3``); the range is the field's ``min_value``/``max_value``."""

    def to_python(self, value):
        from core.numbers import NumberError, parse_decimal

        if value in self.empty_values:
            return None
        try:
            return parse_decimal(value if isinstance(value, (int, float)) else str(value), self.label or "value")
        except NumberError as exc:
            raise forms.ValidationError(exc.problem, code="invalid") from None


class ApiTokenForm(forms.Form):
    """A new API token's life: a number of days, or empty for a token that lasts until revoked."""

    expires_days = CountField(
        label="Expires after (days)",
        required=False,
        min_value=1,
        max_value=3650,
        help_text="Empty: until revoked or replaced.",
    )

    def expires_in(self) -> timedelta | None:
        days = self.cleaned_data.get("expires_days")
        return timedelta(days=days) if days else None


class MoneyField(forms.DecimalField):
    """An amount of dollars typed by a person (:func:`core.amounts.parse_amount`): ASCII digits with
    at most two decimals inside ``[minimum, maximum]``; the message names the field (``name``)."""

    def __init__(self, *, name: str, minimum: str = "0", maximum: str | None = None, **kwargs) -> None:
        self.money_name, self.minimum, self.maximum = name, minimum, maximum
        kwargs.setdefault("decimal_places", 2)
        super().__init__(**kwargs)

    def to_python(self, value):
        from core.amounts import AmountError, parse_amount

        if value in self.empty_values:
            return None
        try:
            return parse_amount(str(value), self.money_name, minimum=self.minimum, maximum=self.maximum)
        except AmountError as exc:
            raise forms.ValidationError(str(exc), code="invalid") from None
