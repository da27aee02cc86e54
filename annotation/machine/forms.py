"""Forms of machine labelling: pre-label a batch, draw a calibration sample, route on a threshold."""

from __future__ import annotations

from collections.abc import Sequence

from django import forms

from annotation.machine.prelabellers import prelabeller_names
from annotation.machine.services.background import start_prelabel
from annotation.machine.services.calibration import DEFAULT_SAMPLE
from annotation.machine.services.prelabels import OPENAI_UNCONFIGURED
from annotation.machine.services.routing import DEFAULT_RISK
from annotation.models import Batch
from core.forms import CountField, DecimalNumberField, MoneyField
from core.models import Job
from core.selectors import chat_settings
from core.services.uploads import keep_upload, upload_too_large_message
from pooling.models import QuerySet


class _SelectWithDisabled(forms.Select):
    """A select whose ``disabled_choices`` are shown but cannot be picked (the page says why)."""

    disabled_choices: frozenset[str] = frozenset()

    def create_option(self, name, value, label, selected, index, subindex=None, attrs=None):
        option = super().create_option(name, value, label, selected, index, subindex, attrs)
        if str(value) in self.disabled_choices:
            option["attrs"]["disabled"] = True
        return option


class PrelabelForm(forms.Form):
    """Pre-label a batch (page and API alike): the labeller, its samples (openai), its training data (trained)."""

    labeller = forms.ChoiceField(widget=_SelectWithDisabled)
    samples = CountField(
        required=False,
        min_value=1,
        max_value=50,
        help_text="openai only: answers first sampled per query, more up to PRELABEL_MAX_SAMPLES without log-probabilities (default from the settings).",
    )
    train = forms.CharField(
        required=False,
        max_length=200,
        label="Train on",
        help_text="trained only: batch:NAME to learn from that batch's human labels (empty: this batch's), or upload a file.",
    )
    train_file = forms.FileField(
        required=False, label="…or a labelled file", help_text="trained only: qid<TAB>query<TAB>label (n/f/m/o) lines."
    )

    def __init__(self, *args, batch: Batch, too_large: str | None = None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.batch = batch
        self.too_large = too_large
        self.fields["labeller"].choices = [(name, name) for name in prelabeller_names()]
        self.fields["labeller"].initial = "rules"
        self.fields["labeller"].widget.disabled_choices = (
            frozenset() if chat_settings().configured else frozenset({"openai"})
        )

    def clean(self):
        data = super().clean()
        labeller = data.get("labeller")
        if labeller == "openai" and not chat_settings().configured:
            self.add_error("labeller", OPENAI_UNCONFIGURED)
        if data.get("samples") is not None and labeller and labeller != "openai":
            self.add_error("samples", "only the openai pre-labeller takes samples")
        if self.too_large:
            self.add_error("train_file", upload_too_large_message())
        if labeller != "trained" and (data.get("train") or data.get("train_file")):
            self.add_error("train", "only the trained pre-labeller takes training data")
        elif data.get("train") and data.get("train_file"):
            self.add_error("train", "name the training data or upload a file, not both")
        elif data.get("train"):
            # Only batches and query sets by name: a path typed into a form would read a file of the server's.
            train = data["train"]
            if train.startswith("queries:"):
                if not QuerySet.objects.filter(name=train.removeprefix("queries:")).exclude(queries__label="").exists():
                    self.add_error("train", f"no labelled query set named {train.removeprefix('queries:')!r}")
            elif not train.startswith("batch:") or not Batch.objects.filter(name=train.removeprefix("batch:")).exists():
                self.add_error(
                    "train",
                    f"give batch:NAME of an existing batch or queries:NAME of a labelled query set (got {train!r}), "
                    "or upload a file",
                )
        return data

    def start(self) -> Job:
        """Start pre-labelling as a job (the page and the API); training data only for ``trained``."""
        data = self.cleaned_data
        train = None
        if data["labeller"] == "trained":
            upload = data.get("train_file")
            train = str(keep_upload(upload)) if upload else data.get("train") or f"batch:{self.batch.name}"
        return start_prelabel(self.batch, data["labeller"], samples=data.get("samples"), train=train)


class CalibrationSampleForm(forms.Form):
    """Draw the blind calibration sample of a machine-labelled batch (and publish it)."""

    sample = CountField(
        min_value=1,
        max_value=100_000,
        initial=DEFAULT_SAMPLE,
        label="Sample size",
        help_text="Queries the crowd labels blind.",
    )
    labeller = forms.ChoiceField(
        required=False, help_text="Sample this pre-labeller's labels (default: the latest run)."
    )
    seed = CountField(min_value=0, initial=0, required=False, help_text="Random seed of the sample.")
    escalation_cap = CountField(
        required=False,
        min_value=1,
        max_value=50,
        label="More votes for undecided queries, up to",
        help_text="Assignments a sample HIT may get when a query of it has no decisive crowd label (empty: 7; the "
        "batch's votes per query: none, a split then counts as the machine's error).",
    )
    until = forms.CharField(
        required=False,
        max_length=30,
        label="Decisive when",
        help_text="majority (a strict majority) or posterior:P (its posterior at least P too, e.g. posterior:0.9).",
    )
    extendable = forms.BooleanField(
        required=False,
        help_text="Draw it to be extended later (routing then spends 0.2 of its risk on a test that allows it); "
        "without it, all of the risk goes to the exact test of this draw, which keeps more.",
    )
    publish = forms.BooleanField(required=False, initial=True, help_text="Publish the sample's HITs at once.")

    def __init__(self, *args, labellers: Sequence[str] = (), **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["labeller"].choices = [("", "latest run"), *((name, name) for name in dict.fromkeys(labellers))]


class RoutingForm(forms.Form):
    """Route a machine-labelled batch: previewed by GET, confirmed by POST (the same fields)."""

    target_accuracy = DecimalNumberField(
        initial=0.95, help_text="Accuracy the machine-accepted labels must reach against the crowd majority, in (0, 1]."
    )
    risk = DecimalNumberField(
        required=False,
        initial=DEFAULT_RISK,
        help_text="Probability that the accepted labels fall short of the target anyway (the guarantee's δ; default 0.05).",
    )
    no_guarantee = forms.BooleanField(
        required=False,
        label="No guarantee",
        help_text="Choose by the sample's point estimate instead: no guarantee, falls short far more often than any risk.",
    )
    budget = MoneyField(
        name="budget",
        required=False,
        maximum="99999999.99",
        help_text="USD the routed queries may cost (empty: no limit); what it does not pay for stays unlabelled.",
    )
    cascade = forms.CharField(
        required=False,
        max_length=200,
        help_text="Labellers in sequence, e.g. rules:0.9,trained,openai (a floor after the colon): each keeps what "
        "it certifies, the rest goes on (empty: the sample's labeller alone).",
    )

    # Only reads the values: check_routing checks them once; the page shows its FieldError under the field.
    def clean_cascade(self) -> list[str] | None:
        return [item.strip() for item in (self.cleaned_data.get("cascade") or "").split(",") if item.strip()] or None

    def clean_risk(self) -> float:
        value = self.cleaned_data.get("risk")
        return DEFAULT_RISK if value is None else value
