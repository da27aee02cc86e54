"""Forms of the metrics pages."""

from django import forms

from core.errors import ServiceError
from core.models import Job
from pooling.models import QuerySet, Run
from pooling.tokenize import DEFAULT_TOKENIZER, TOKENIZERS

from .services import parse_cutoffs


class ReportForm(forms.Form):
    name = forms.SlugField(max_length=100)
    queries = forms.ModelChoiceField(QuerySet.objects.all(), to_field_name="name", label="Query set")
    runs = forms.ModelMultipleChoiceField(Run.objects.all(), to_field_name="name", widget=forms.CheckboxSelectMultiple)
    cutoffs = forms.CharField(initial="5,10,20,30", help_text="Comma-separated rank cutoffs.")
    tokenizer = forms.ChoiceField(choices=[(t, t) for t in TOKENIZERS], initial=DEFAULT_TOKENIZER)
    background = forms.ModelChoiceField(
        Run.objects.all(), to_field_name="name", required=False, empty_label="the collection", label="NFaiRR background"
    )
    baseline = forms.ModelChoiceField(Run.objects.all(), to_field_name="name", required=False, empty_label="none")

    def clean_cutoffs(self):
        try:
            return parse_cutoffs(self.cleaned_data["cutoffs"])
        except ServiceError as exc:
            raise forms.ValidationError(str(exc)) from None

    def start(self) -> Job:
        """Build the report as a background job (page and API alike)."""
        from . import services

        data = self.cleaned_data
        return services.start_report(
            data["name"],
            data["queries"],
            list(data["runs"]),
            services.ReportSettings(cutoffs=data["cutoffs"], tokenizer=data["tokenizer"]),
            background=data["background"],
            baseline=data["baseline"],
        )

    def clean_name(self):
        from .models import Report

        name = self.cleaned_data["name"]
        if Report.objects.filter(name=name).exists():
            raise forms.ValidationError("a report with this name exists")
        return name
