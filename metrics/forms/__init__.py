"""Forms of the metrics pages."""

from __future__ import annotations

from collections.abc import Callable

from django import forms

from annotation import selectors as annotation_selectors
from core.errors import ServiceError
from core.forms import CountField, DecimalNumberField
from core.models import Job
from core.options import REPORT_OPTIONS, ReportOption
from genderbias.ranking.defaults import OptionError
from pooling.models import Qrels, QuerySet, Run

from .. import services
from ..models import Report


def option_field(option: ReportOption) -> forms.Field:
    """A page's field of a declared report setting (:mod:`core.options`): its label, help and initial value. Empty
    takes the default; the value is checked by the declaration's one check (:func:`clean_options`), not the field."""
    common = {
        "required": False,
        "label": option.label,
        "help_text": option.describe()[:1].upper() + option.describe()[1:] + ".",
    }
    if option.kind == "choice":
        empty = [] if option.default else [("", "none")]
        return forms.ChoiceField(choices=[*empty, *option.choices], initial=option.default, **common)
    if option.kind == "number":
        return DecimalNumberField(initial=option.default, **common)
    if option.kind == "count":
        return CountField(initial=option.default, **common)
    return forms.CharField(initial=option.default_text, **common)


#: The report settings only the command takes; the form and the API's request take the others.
COMMAND_ONLY = ("threshold", "bootstrap", "seed", "wordlist", "representative_wordlist")


def with_options(base: type, field: Callable[[ReportOption], object]) -> type:
    """``base`` (a form or a serializer) with a field per declared setting not :data:`COMMAND_ONLY` (``OPTIONS``), each
    made by ``field`` from its declaration: the page, the API and its schema cannot drift from the declarations."""
    fields = {name: field(option) for name, option in REPORT_OPTIONS.items() if name not in COMMAND_ONLY}
    return type(base)(f"Report{base.__name__}Options", (base,), {**fields, "OPTIONS": tuple(fields)})


def named(queryset, missing: str | None = None, **kwargs) -> forms.ModelChoiceField:
    """A choice of a row by its ``name``, as the pages and the API name them; ``missing`` the refusal of an unknown
    name (``%(value)s`` the name given)."""
    if missing:
        kwargs["error_messages"] = {"invalid_choice": missing}
    return forms.ModelChoiceField(queryset, to_field_name="name", **kwargs)


def ticked(queryset, **kwargs) -> forms.ModelMultipleChoiceField:
    """Rows chosen by their ``name`` (as :func:`named`), as boxes to tick."""
    return forms.ModelMultipleChoiceField(queryset, to_field_name="name", widget=forms.CheckboxSelectMultiple, **kwargs)


def clean_options(form: forms.Form, data: dict, options: dict[str, ReportOption]) -> None:
    """The form's declared settings: the default where left empty, else the declaration's one check
    (cutoffs read from their text); a refusal is the field's error."""
    for field, option in options.items():
        if field in form.errors:
            continue
        value = data.get(field)
        try:
            if option.kind == "cutoffs":
                data[field] = option.parse(value or "")
            else:
                data[field] = option.default if value in (None, "") else option.check(value)
        except OptionError as exc:
            form.add_error(field, exc.problem)


class ReportForm(with_options(forms.Form, option_field)):
    name = forms.SlugField(max_length=100)
    queries = named(QuerySet.objects.all(), label="Query set", required=False)
    batch = named(
        annotation_selectors.batches(),
        required=False,
        label="…or a batch's labels",
        help_text="Its non-gendered queries, with intervals that carry the labels' uncertainty.",
    )
    runs = ticked(Run.objects.all())
    background = named(Run.objects.all(), required=False, empty_label="the collection", label="NFaiRR background")
    baseline = named(Run.objects.all(), required=False, empty_label="none")
    qrels = named(
        Qrels.objects.all(),
        required=False,
        empty_label="none (bias metrics only)",
        label="Relevance judgments",
        help_text="Adds effectiveness measures, computed with ir_measures.",
    )
    measures = forms.CharField(
        required=False,
        help_text="With judgments: ir_measures names with a cutoff, of RR (MRR), nDCG, R, P, AP "
        "(default RR@10,nDCG@10,R@10,P@10).",
    )
    #: The page's order: the declared settings (``OPTIONS``, first by inheritance) among the others.
    field_order = [
        "name",
        "queries",
        "batch",
        "runs",
        "cutoffs",
        "tokenizer",
        "background",
        "nfairr_normaliser",
        "baseline",
        "qrels",
        "measures",
    ]

    def clean_measures(self):
        try:
            return services.parse_measures(self.cleaned_data.get("measures") or "")
        except ServiceError as exc:
            raise forms.ValidationError(str(exc)) from None

    def clean(self):
        data = super().clean()
        if data.get("measures") and not data.get("qrels") and "qrels" not in self.errors:
            self.add_error("qrels", "effectiveness measures need relevance judgments: choose the qrels")
        chosen = not ({"queries", "batch"} & set(self.errors))
        if chosen and bool(data.get("queries")) == bool(data.get("batch")):
            self.add_error("queries", "choose a query set or a batch whose labels to report on (one of them)")
        clean_options(self, data, {name: REPORT_OPTIONS[name] for name in self.OPTIONS})
        return data

    def start(self) -> Job:
        """Build the report as a background job (page and API alike)."""
        data = self.cleaned_data
        return services.start_report(
            data["name"],
            data["queries"],
            list(data["runs"]),
            services.ReportSettings(**{name: data[name] for name in self.OPTIONS}, measures=data["measures"]),
            background=data["background"],
            baseline=data["baseline"],
            qrels=data.get("qrels"),
            label_batch=data.get("batch"),
        )

    def clean_name(self):
        name = self.cleaned_data["name"]
        if name in ("new", "crbo", "preference", "label-sensitivity", "plan", "sets"):
            raise forms.ValidationError(f"{name!r} names a page of the reports; choose another name")
        if Report.objects.filter(name=name).exists():
            raise forms.ValidationError("a report with this name exists")
        return name
