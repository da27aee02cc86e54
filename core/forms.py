"""Forms of the shared app's pages."""

from __future__ import annotations

from datetime import timedelta

from django import forms


class ApiTokenForm(forms.Form):
    """A new API token's life: a number of days, or empty for a token that lasts until revoked."""

    expires_days = forms.IntegerField(
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
