"""Forms of the annotation app."""

from __future__ import annotations

from collections.abc import Sequence

from django import forms

from annotation.crowd.providers.base import all_batch_options, provider_class
from annotation.crowd.providers.options import BatchOption, OptionError
from annotation.crowd.services.answers import HAND_SIGNALS
from annotation.crowd.services.batch_settings import BatchSettings, GoldQuery, settings_from_options
from annotation.crowd.services.batches import create_batch, estimate_cost, labelled_query_set, read_gold_file
from annotation.models import Batch, HitQuery
from annotation.models.crowd import DEFAULT_MAX_ASSIGNMENTS
from core.errors import ServiceError
from core.forms import CountField
from core.services.uploads import upload_too_large_message
from genderbias.errors import InputError
from genderbias.labels import LABEL_CHOICES
from pooling.models import Pool, QuerySet


class HitAnswerForm(forms.Form):
    """Server-side check of a HIT page (rendered by ``annotation/hit.html``): every ``q-<position>`` needs
    one of the four categories; the browser's ``required`` is a convenience, this is the rule."""

    def __init__(self, hit_queries: Sequence[HitQuery], *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.positions = [hq.position for hq in hit_queries]
        for hq in hit_queries:
            self.fields[hq.field_name] = self.category_field(hq.batch_query.text)

    def answers(self) -> dict[str, str]:
        """The checked answers, with the hand signals posted beside them as they came (the services read them)."""
        posted = {
            f"{name}-{position}": self.data.get(f"{name}-{position}")
            for position in self.positions
            for name, _column, _most in HAND_SIGNALS
        }
        return {**{k: str(v)[:40] for k, v in posted.items() if v not in (None, "")}, **self.cleaned_data}

    @staticmethod
    def category_field(text: str) -> forms.ChoiceField:
        return forms.ChoiceField(
            choices=LABEL_CHOICES,
            label=text,
            error_messages={
                "required": "Please choose a category for this query.",
                "invalid_choice": "Please choose one of the four categories.",
            },
        )

    def field_errors(self) -> dict[str, str]:
        return {name: " ".join(errors) for name, errors in self.errors.items()}


class TrainingAnswerForm(HitAnswerForm):
    """The qualification step's page: the same check, over the batch's training queries."""

    def __init__(self, training_queries, *args, **kwargs) -> None:
        forms.Form.__init__(self, *args, **kwargs)
        for q in training_queries:
            self.fields[q.field_name] = self.category_field(q.text)


class EscalateForm(forms.Form):
    max_assignments = CountField(  # genderbias.numbers: forms.IntegerField read "1_0" as 10 and "٣" as 3
        min_value=1,
        max_value=50,
        initial=DEFAULT_MAX_ASSIGNMENTS,
        label="Cap on assignments per HIT",
    )
    until = forms.CharField(
        max_length=30,
        required=False,
        initial="majority",
        label="Settled when",
        help_text="majority, or posterior:P for a Dawid-Skene posterior of at least P (e.g. posterior:0.9)",
    )
    confirm = forms.BooleanField(required=True, label="I accept the extra cost shown above")


class OptionField(forms.Field):
    """A batch option typed on the form, read by its declaration (:meth:`BatchOption.parse`)."""

    def __init__(self, option: BatchOption, **kwargs) -> None:
        self.option = option
        super().__init__(**kwargs)

    def to_python(self, value):
        try:
            return self.option.parse(value)
        except OptionError as exc:
            raise forms.ValidationError(str(exc), code="invalid") from None


def _number_input(option: BatchOption, step: str) -> forms.NumberInput:
    attrs = {"step": step}
    attrs.update({k: str(v) for k, v in (("min", option.minimum), ("max", option.maximum)) if v is not None})
    attrs.setdefault("min", "0")  # no count, share or amount is negative
    if option.kind == "share":
        attrs.setdefault("max", "1")
    return forms.NumberInput(attrs=attrs)


def option_form_field(option: BatchOption, owner: str | None) -> forms.Field:
    """The form's field for ``option`` (``owner``: the one platform that takes it, named in its help)."""
    help_text = f"{provider_class(owner).short_label} only: {option.help}" if owner else option.help
    common = {"required": False, "help_text": help_text, "initial": option.default}
    if option.label:
        common["label"] = option.label
    if option.kind == "choice":
        blank = [] if option.default is not None else [("", "none")]
        if option.name == "bonus_rule_kind":
            blank = [("", "no bonus rule")]
        return forms.ChoiceField(choices=[*blank, *option.choices], **common)
    if option.kind == "choices":
        return forms.MultipleChoiceField(choices=option.choices, widget=forms.CheckboxSelectMultiple, **common)
    if option.kind == "flag":
        return forms.BooleanField(**common)
    if option.kind == "batches":
        return forms.ModelMultipleChoiceField(Batch.objects.filter(provider=owner), to_field_name="name", **common)
    step = {"whole": "1", "share": "any", "money": "0.01"}.get(option.kind)
    widget = _number_input(option, step) if step else forms.TextInput()
    return OptionField(option, widget=widget, **common)


#: The batch options' fields, every platform's (the services refuse another platform's value by name).
BatchOptionsForm = forms.Form.__class__(
    "BatchOptionsForm",
    (forms.Form,),
    {name: option_form_field(option, owner) for name, (option, owner) in all_batch_options().items() if option.on_form},
)


class BatchForm(BatchOptionsForm):
    """A new batch from a pool or a query set (page and API alike); the rules are the services'.
    ``estimate()`` gives the cost ``create_batch`` will record; ``create()`` makes the batch."""

    field_order = [
        "name",
        "pool",
        "queries",
        "provider",
        "assignments_per_query",
        "queries_per_hit",
        "reward",
        "gold",
        "gold_set",
    ]

    name = forms.SlugField(max_length=100, help_text="Letters, digits, hyphens and underscores.")
    pool = forms.ModelChoiceField(
        Pool.objects.all(), to_field_name="name", required=False, help_text="Annotate the queries of this pool…"
    )
    queries = forms.ModelChoiceField(
        QuerySet.objects.all(),
        to_field_name="name",
        required=False,
        label="Query set",
        help_text="…or of this query set.",
    )
    gold = forms.FileField(required=False, label="Gold file", help_text="qid<TAB>query<TAB>label (n/f/m/o) lines.")
    gold_set = forms.ModelChoiceField(
        QuerySet.objects.exclude(queries__label="").filter(queries__isnull=False).distinct(),
        to_field_name="name",
        required=False,
        label="…or gold from a labelled query set",
        help_text="A query set imported from a labelled file (Import, a query set: qid,query,label).",
    )

    def __init__(self, *args, estimate_only: bool = False, too_large: str | None = None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.too_large = too_large  # the gold file went over IMPORT_UPLOAD_MAX_BYTES and was dropped
        if estimate_only:  # the live estimate: no name yet, and no file travels with it
            del self.fields["name"], self.fields["gold"], self.fields["gold_set"]

    def clean_name(self) -> str:
        name = self.cleaned_data["name"]
        if Batch.objects.filter(name=name).exists():
            raise forms.ValidationError(f"a batch named {name!r} already exists")
        return name

    def clean(self):
        data = super().clean()
        if data.get("pool") and data.get("queries"):
            self.add_error("queries", "choose a pool or a query set, not both")
        elif not data.get("pool") and not data.get("queries") and not self.has_error("pool"):
            self.add_error("pool", "choose the pool (or the query set) to annotate")
        if self.too_large and "gold" in self.fields:
            self.add_error("gold", upload_too_large_message())
        elif data.get("gold") and data.get("gold_set"):
            self.add_error("gold_set", "give a gold file or a labelled query set, not both")
        elif data.get("gold_per_hit") and not data.get("gold") and not data.get("gold_set") and "gold" in self.fields:
            self.add_error("gold", "gold questions per HIT need a gold file")
        if self.errors:
            return data
        try:
            data["settings"] = self.batch_settings()
            data["settings"].validate()
            data["gold_queries"] = self._read_gold() if "gold" in self.fields else []
        except ServiceError as exc:
            self.add_error(None, str(exc))
        return data

    def batch_settings(self) -> BatchSettings:
        values = {}
        for name, field in self.fields.items():
            value = self.cleaned_data.get(name)
            if isinstance(field, forms.ModelMultipleChoiceField):
                value = [batch.name for batch in value or []]
            values[name] = value
        return settings_from_options(values)

    def _read_gold(self) -> list[GoldQuery]:
        upload = self.cleaned_data.get("gold")
        if self.cleaned_data.get("gold_set"):
            return labelled_query_set(self.cleaned_data["gold_set"])
        if not upload:
            return []
        staged = getattr(upload, "staged_path", None)
        if staged is None:
            raise ServiceError("gold: uploads must go through the staging folder")
        try:
            return read_gold_file(staged)
        except InputError as exc:  # name the file as the researcher knows it
            raise ServiceError("gold: " + str(exc).replace(str(staged), upload.name)) from None

    def source_size(self) -> int:
        data = self.cleaned_data
        query_set = data["pool"].queries if data.get("pool") else data["queries"]
        return query_set.queries.count()

    def estimate(self) -> dict:
        return estimate_cost(self.cleaned_data["settings"], self.source_size())

    def create(self) -> Batch:
        data = self.cleaned_data
        return create_batch(
            data["name"],
            data["settings"],
            pool=data.get("pool"),
            query_set=data.get("queries"),
            gold=data["gold_queries"],
        )


class AdjudicateForm(forms.Form):
    """A researcher's ruling on a disputed query: the label and why."""

    label = forms.ChoiceField(choices=LABEL_CHOICES, widget=forms.RadioSelect, label="Label")
    reason = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 2}),
        max_length=2000,
        label="Reason",
        help_text="Recorded with your name and the time; shown to whoever reads the export.",
    )
