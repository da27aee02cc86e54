"""Forms of the metrics pages."""

from django import forms

from core.errors import ServiceError
from pooling.models import QuerySet, Run
from pooling.tokenize import DEFAULT_TOKENIZER, TOKENIZERS

from .defaults import CONFIDENCE_THRESHOLD, DEFAULT_SAMPLES
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
    nfairr_normaliser = forms.ChoiceField(
        choices=[
            ("comparison", "background + every run of the report (monotone, ≤ 1)"),
            ("exact", "background alone (original definition; may exceed 1)"),
        ],
        initial="comparison",
        required=False,
        label="NFaiRR normaliser (with a background run)",
    )
    baseline = forms.ModelChoiceField(Run.objects.all(), to_field_name="name", required=False, empty_label="none")

    def clean_nfairr_normaliser(self):
        return self.cleaned_data["nfairr_normaliser"] or "comparison"

    def clean_cutoffs(self):
        try:
            return parse_cutoffs(self.cleaned_data["cutoffs"])
        except ServiceError as exc:
            raise forms.ValidationError(str(exc)) from None

    def clean_name(self):
        from .models import Report

        name = self.cleaned_data["name"]
        if Report.objects.filter(name=name).exists():
            raise forms.ValidationError("a report with this name exists")
        return name


class LabelSensitivityForm(forms.Form):
    """What the label-sensitivity page (POST: starts a job) and API (GET parameters: computed on request) take."""

    batch = forms.SlugField(max_length=100, help_text="Name of the annotation batch.")
    runs = forms.CharField(help_text="Comma-separated run names.")
    cutoffs = forms.CharField(initial="5,10,20", required=False, help_text="Comma-separated rank cutoffs.")
    threshold = forms.FloatField(
        initial=CONFIDENCE_THRESHOLD,
        required=False,
        min_value=0,
        max_value=1,
        help_text="'confident': least label confidence.",
    )
    background = forms.ModelChoiceField(
        Run.objects.all(), to_field_name="name", required=False, empty_label="the collection", label="NFaiRR background"
    )
    bootstrap = forms.IntegerField(initial=DEFAULT_SAMPLES, required=False, min_value=1, max_value=2000)

    def clean_cutoffs(self):
        try:
            return parse_cutoffs(self.cleaned_data["cutoffs"] or "5,10,20")
        except ServiceError as exc:
            raise forms.ValidationError(str(exc)) from None

    def clean_runs(self):
        names = list(dict.fromkeys(n.strip() for n in self.cleaned_data["runs"].split(",") if n.strip()))
        runs = {run.name: run for run in Run.objects.filter(name__in=names)}
        unknown = [n for n in names if n not in runs]
        if unknown:
            raise forms.ValidationError(f"unknown run(s): {', '.join(unknown)}")
        if not names:
            raise forms.ValidationError("give at least one run")
        return [runs[n] for n in names]

    def clean(self):
        data = super().clean()
        if data.get("threshold") is None:
            data["threshold"] = CONFIDENCE_THRESHOLD
        if not data.get("bootstrap"):
            data["bootstrap"] = DEFAULT_SAMPLES
        return data
