"""Forms of the shared app's pages."""

from __future__ import annotations

from datetime import timedelta
from functools import partial

from django import forms

from core.amounts import AmountError, parse_amount
from genderbias.numbers import NumberError, parse_count, parse_decimal


def add_service_error(form: forms.Form, exc: Exception) -> None:
    """A service's refusal on the page's form: a :class:`~core.errors.FieldError` under its field when
    the form has it, any other above the fields."""
    field = getattr(exc, "field", None)
    if field in form.fields:
        form.add_error(field, exc.problem)
    else:
        form.add_error(None, str(exc))


class _ParsedNumber:
    """A number field that reads what a person typed with ``parse(text, label)`` (:mod:`genderbias.numbers`)."""

    def to_python(self, value):
        if value in self.empty_values:
            return None
        try:
            return self.parse(value if isinstance(value, self.kept) else str(value), self.label or "value")
        except NumberError as exc:
            raise forms.ValidationError(exc.problem, code="invalid") from None


class CountField(_ParsedNumber, forms.IntegerField):
    """A whole number typed by a person: ASCII digits only (``forms.IntegerField`` takes ``١٠``)."""

    parse, kept = staticmethod(partial(parse_count, maximum=10**18)), int


class DecimalNumberField(_ParsedNumber, forms.FloatField):
    """A number with a fraction typed by a person: a plain ASCII decimal (``forms.FloatField`` takes
    ``١.٥`` and ``1e3``)."""

    parse, kept = staticmethod(parse_decimal), (int, float)


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
    """An amount of dollars typed by a person (:func:`core.amounts.parse_amount`); the message names ``name``."""

    def __init__(self, *, name: str, minimum: str = "0", maximum: str | None = None, **kwargs) -> None:
        self.money_name, self.minimum, self.maximum = name, minimum, maximum
        kwargs.setdefault("decimal_places", 2)
        super().__init__(**kwargs)

    def to_python(self, value):
        if value in self.empty_values:
            return None
        try:
            return parse_amount(str(value), self.money_name, minimum=self.minimum, maximum=self.maximum)
        except AmountError as exc:
            raise forms.ValidationError(str(exc), code="invalid") from None


class ConnectionForm(forms.Form):
    """One connection's fields on the Connections page. A secret's box is always empty (never sent back
    to the browser): left empty it keeps the stored secret; its "clear" box removes it."""

    def __init__(self, kind, data=None, *, state=None) -> None:
        super().__init__(data, prefix=kind.kind)
        self.kind = kind
        stored = dict(state.row.values) if state is not None and state.row is not None else {}
        for spec in kind.fields:
            box = {"label": spec.label, "required": False, "max_length": 2000, "help_text": spec.help}
            if spec.secret:
                box["help_text"] += " Left empty: unchanged."
                box["widget"] = forms.PasswordInput(render_value=False, attrs={"autocomplete": "off"})
            elif spec.choices:
                # The values the connection takes, or "" for its default (the service checks them again).
                choices = [("", f"default ({spec.default})"), *((choice, choice) for choice in spec.choices)]
                box |= {"initial": stored.get(spec.name, ""), "widget": forms.Select(choices=choices)}
            else:
                box["help_text"] += f" Default: {spec.default}" if spec.default else ""
                box["initial"] = stored.get(spec.name, "")
            self.fields[spec.name] = forms.CharField(**box)
            if spec.secret:
                self.fields[f"clear_{spec.name}"] = forms.BooleanField(
                    label=f"Remove the stored {spec.label.lower()}", required=False
                )

    def values(self) -> dict[str, str]:
        return {spec.name: self.cleaned_data.get(spec.name) or "" for spec in self.kind.fields}

    def cleared(self) -> list[str]:
        return [spec.name for spec in self.kind.fields if spec.secret and self.cleaned_data.get(f"clear_{spec.name}")]
