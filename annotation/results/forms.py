"""The batch page's export form: a category of labelled queries in one of the export formats."""

from __future__ import annotations

from django import forms

from annotation.results.export_formats import EXPORT_FORMATS
from genderbias.labels import EXPORT_CATEGORIES


class ExportForm(forms.Form):
    category = forms.ChoiceField(choices=[(c, c) for c in EXPORT_CATEGORIES], initial="non-gendered")
    format = forms.ChoiceField(choices=[(f.name, f.description) for f in EXPORT_FORMATS.values()])
    as_query_set = forms.SlugField(
        required=False, label="Also register as query set", help_text="e.g. to measure the runs' bias on it"
    )
