"""Forms of the pooling pages."""

from django import forms

from pooling.analysis import MAGNITUDES

from .models import QuerySet, Run
from .tokenize import DEFAULT_TOKENIZER, TOKENIZERS


class PoolForm(forms.Form):
    name = forms.SlugField(max_length=100, help_text="Name of the pool and of its query set.")
    queries = forms.ModelChoiceField(QuerySet.objects.all(), to_field_name="name", label="Query set")
    runs = forms.ModelMultipleChoiceField(Run.objects.all(), to_field_name="name", widget=forms.CheckboxSelectMultiple)
    rank_cutoff = forms.IntegerField(min_value=1, initial=10, label="Rank cutoff (t of RaB@t)")
    depth = forms.IntegerField(min_value=1, initial=500, help_text="Queries taken from the top of each list.")
    magnitude = forms.ChoiceField(choices=[(m, m) for m in MAGNITUDES], initial="tf")
    tokenizer = forms.ChoiceField(choices=[(t, t) for t in TOKENIZERS], initial=DEFAULT_TOKENIZER)
