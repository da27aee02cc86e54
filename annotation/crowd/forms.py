"""Forms of the annotation app."""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal

from django import forms

from annotation.crowd.services.batch_settings import BatchSettings, GoldQuery
from annotation.crowd.services.batches import create_batch, estimate_cost, read_gold_file
from annotation.labels import LABEL_CHOICES
from annotation.models import Batch, HitQuery, Provider
from annotation.models.crowd import DEFAULT_MAX_ASSIGNMENTS
from core.errors import InputError, ServiceError
from core.forms import MoneyField
from core.services.uploads import upload_too_large_message
from pooling.models import Pool, QuerySet


class HitAnswerForm(forms.Form):
    """Server-side check of a HIT page: every ``q-<position>`` needs one of the four categories.

    The page itself is rendered by ``annotation/hit.html`` (shared with MTurk), so this form
    only validates; the browser's ``required`` is a convenience, this is the rule.
    """

    def __init__(self, hit_queries: Sequence[HitQuery], *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        for hq in hit_queries:
            self.fields[hq.field_name] = self.category_field(hq.batch_query.text)

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
    max_assignments = forms.IntegerField(
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


class BatchForm(forms.Form):
    """A new batch from a pool or a query set (page and API alike); the rules are the services'.

    ``estimate()`` gives the cost :func:`~annotation.crowd.services.batches.create_batch` will record, for
    the live estimate shown before the researcher confirms; ``create()`` makes the batch.
    """

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
    provider = forms.ChoiceField(choices=Provider.choices, initial=Provider.LOCAL)
    assignments_per_query = forms.IntegerField(min_value=1, max_value=50, initial=3, help_text="Workers per query.")
    queries_per_hit = forms.IntegerField(
        min_value=1, max_value=100, initial=10, label="Queries per HIT", help_text="Queries on one HIT page."
    )
    reward = MoneyField(
        name="reward", minimum="0.01", maximum="999999.99", initial=Decimal("0.05"), help_text="USD per assignment."
    )
    gold = forms.FileField(required=False, label="Gold file", help_text="qid<TAB>query<TAB>label (n/f/m/o) lines.")
    gold_per_hit = forms.IntegerField(min_value=0, max_value=20, initial=0, help_text="Gold questions in every HIT.")
    locales = forms.CharField(required=False, help_text="MTurk only: worker countries, e.g. US,GB.")
    min_approval_rate = forms.IntegerField(required=False, min_value=0, max_value=100, help_text="MTurk only (%).")
    min_approved_hits = forms.IntegerField(required=False, min_value=0, help_text="MTurk only.")
    masters = forms.BooleanField(required=False, help_text="MTurk only: Masters workers.")
    estimated_minutes = forms.IntegerField(
        required=False, min_value=1, max_value=24 * 60, help_text="Prolific only: minutes one HIT takes (default 10)."
    )
    devices = forms.MultipleChoiceField(
        required=False,
        choices=[(d, d) for d in ("desktop", "tablet", "mobile")],
        widget=forms.CheckboxSelectMultiple,
        help_text="Prolific only: devices participants may use (none ticked: any).",
    )
    bonus = MoneyField(
        name="bonus",
        required=False,
        maximum="999999.99",
        help_text="Prolific only: USD to every approved participant, paid at every sync (a flat bonus rule).",
    )
    exclude_batches = forms.ModelMultipleChoiceField(
        Batch.objects.filter(provider=Provider.PROLIFIC),
        to_field_name="name",
        required=False,
        help_text="Prolific only: exclude everyone who took part in these batches.",
    )
    # Participant groups across waves and the bonus rule (issue 32).
    allow_batches = forms.ModelMultipleChoiceField(
        Batch.objects.filter(provider=Provider.PROLIFIC),
        to_field_name="name",
        required=False,
        help_text="Prolific only: only those who took part in these batches may take this one.",
    )
    admit_gold_failures = forms.BooleanField(
        required=False,
        help_text="Prolific only: let in participants who failed another batch's gold threshold (kept out by default).",
    )
    bonus_rule_kind = forms.ChoiceField(
        required=False,
        choices=[
            ("", "no bonus rule"),
            ("flat", "flat, per approved participant"),
            ("per_gold", "per check question right"),
        ],
        label="Bonus rule",
        help_text="Prolific only: a bonus previewed and paid from the batch page (not with the bonus above).",
    )
    bonus_rule_amount = MoneyField(
        name="bonus rule amount",
        required=False,
        minimum="0.01",
        maximum="999999.99",
        label="Bonus rule amount",
        help_text="USD.",
    )

    warn_gold_accuracy = forms.FloatField(
        required=False, min_value=0, max_value=1, help_text="Flag workers below this share of gold answers right."
    )
    block_gold_accuracy = forms.FloatField(
        required=False, min_value=0, max_value=1, help_text="Block workers below this share (applied at every sync)."
    )
    warn_agreement = forms.FloatField(
        required=False, min_value=0, max_value=1, help_text="Flag workers agreeing with the majority less often."
    )
    block_agreement = forms.FloatField(
        required=False, min_value=0, max_value=1, help_text="Block workers agreeing with the majority less often."
    )
    min_answers_judged = forms.IntegerField(
        required=False, min_value=1, initial=10, help_text="Answers a worker needs before a threshold applies."
    )
    extra_budget = MoneyField(
        name="extra budget",
        required=False,
        maximum="999999.99",
        help_text="USD re-offered places and escalations may add to the estimate (empty: no limit).",
    )

    def __init__(self, *args, estimate_only: bool = False, too_large: str | None = None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.too_large = too_large  # the gold file went over IMPORT_UPLOAD_MAX_BYTES and was dropped
        if estimate_only:  # the live estimate: no name yet, and no file travels with it
            del self.fields["name"], self.fields["gold"]

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
        elif data.get("gold_per_hit") and not data.get("gold") and "gold" in self.fields:
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
        data = self.cleaned_data
        qualifications: dict = {}
        locales = [c.strip().upper() for c in (data.get("locales") or "").split(",") if c.strip()]
        if locales:
            qualifications["locales"] = locales
        if data.get("min_approval_rate") is not None:
            qualifications["min_approval_rate"] = data["min_approval_rate"]
        if data.get("min_approved_hits") is not None:
            qualifications["min_approved_hits"] = data["min_approved_hits"]
        if data.get("masters"):
            qualifications["masters"] = True
        options = {
            "estimated_minutes": data.get("estimated_minutes"),
            "devices": data.get("devices") or None,
            "bonus": str(data["bonus"]) if data.get("bonus") is not None else None,
            "exclude_batches": [b.name for b in data.get("exclude_batches") or []] or None,
            "allow_batches": [b.name for b in data.get("allow_batches") or []] or None,
            "admit_gold_failures": True if data.get("admit_gold_failures") else None,
            "bonus_rule": (
                {"kind": data["bonus_rule_kind"], "amount": str(data.get("bonus_rule_amount") or "")}
                if data.get("bonus_rule_kind")
                else None
            ),
        }
        return BatchSettings(
            provider_options={key: value for key, value in options.items() if value is not None},
            provider=data["provider"],
            assignments_per_query=data["assignments_per_query"],
            queries_per_hit=data["queries_per_hit"],
            reward=data["reward"],
            qualifications=qualifications,
            gold_per_hit=data.get("gold_per_hit") or 0,
            warn_gold_accuracy=data.get("warn_gold_accuracy"),
            block_gold_accuracy=data.get("block_gold_accuracy"),
            warn_agreement=data.get("warn_agreement"),
            block_agreement=data.get("block_agreement"),
            min_answers_judged=data.get("min_answers_judged") or 10,
            extra_budget=data.get("extra_budget"),
        )

    def _read_gold(self) -> list[GoldQuery]:
        upload = self.cleaned_data.get("gold")
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


# --- Machine pre-labelling (annotation/machine/views.py and annotation/machine/api.py) ---------
