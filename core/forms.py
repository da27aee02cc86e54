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
