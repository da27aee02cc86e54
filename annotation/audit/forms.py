"""The audit page's forms: draw (or extend) the sample, import labels, name a trusted labeller."""

from __future__ import annotations

from django import forms

from core.forms import CountField


class DrawForm(forms.Form):
    size = CountField(
        required=False, min_value=1, help_text="Empty: 25 / the expected share of non-gendered queries, at least 50."
    )
    seed = CountField(required=False, min_value=0, help_text="Empty: a fresh seed, stored with the sample.")
    expected_share = forms.FloatField(
        required=False, min_value=0.01, max_value=1, initial=0.5, help_text="Expected share of non-gendered queries."
    )

    def clean_expected_share(self) -> float:
        return self.cleaned_data.get("expected_share") or 0.5


class ImportForm(forms.Form):
    file = forms.FileField(help_text="qid<TAB>label[<TAB>labeller] lines, or the same as CSV.")


class TrustForm(forms.Form):
    username = forms.CharField(max_length=150)
    remove = forms.BooleanField(required=False)
