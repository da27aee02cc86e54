"""Forms of the studies beside the reports (label sensitivity, CRBO, preference, counterfactual runs, the study plan,
comparing two sets): the pages of :mod:`metrics.views.studies` and their API."""

from __future__ import annotations

import math
from typing import Any

from django import forms

from annotation import selectors as annotation_selectors
from core.errors import ServiceError
from core.forms import CountField, DecimalNumberField, MoneyField, add_service_error
from core.models import Job
from core.options import SENSITIVITY_CUTOFFS_OPTION, TIES_OPTION
from genderbias.ranking.counterfactual import HER_CHOICES
from genderbias.ranking.defaults import (
    CONFIDENCE_THRESHOLD,
    CRBO_DEPTH,
    CRBO_P,
    DEFAULT_SAMPLES,
    MAX_CUTOFF,
    VARIANT_VERSIONS,
)
from genderbias.ranking.vocabulary import BY_NAME, METRICS
from genderbias.stats.power import DEFAULT_DRAWS
from pooling.models import Collection, Pool, QuerySet, Run, WordList

from .. import services
from ..models import Report
from ..services.planning import DEFAULT_ALPHA, DEFAULT_AUDIT_SECONDS, DEFAULT_CUTOFF, DEFAULT_POWER
from . import clean_options, named, option_field, ticked


class LabelSensitivityForm(forms.Form):
    """What the label-sensitivity page (POST) and API (GET parameters) take to ask for it: a batch and runs by name
    (the API's ``runs`` may be one comma-separated value: :meth:`from_query`)."""

    batch = named(
        annotation_selectors.batches().order_by("name"),
        "no batch named %(value)s",
        empty_label="choose a batch",
        help_text="The annotation batch whose labels are varied.",
    )
    runs = ticked(
        Run.objects.all(),
        error_messages={"invalid_choice": "unknown run: %(value)s", "required": "choose at least one run"},
    )
    cutoffs = option_field(SENSITIVITY_CUTOFFS_OPTION)
    threshold = DecimalNumberField(
        initial=CONFIDENCE_THRESHOLD,
        required=False,
        min_value=0,
        max_value=1,
        help_text="'confident': least label confidence.",
    )
    background = named(Run.objects.all(), required=False, empty_label="the collection", label="NFaiRR background")
    bootstrap = CountField(initial=DEFAULT_SAMPLES, required=False, min_value=1, max_value=2000)
    ties = option_field(TIES_OPTION)

    @classmethod
    def from_query(cls, params) -> LabelSensitivityForm:
        """The form over the API's GET parameters, where ``runs`` is ``a,b`` (or repeated)."""
        data = params.copy()
        data.setlist("runs", [n.strip() for value in params.getlist("runs") for n in value.split(",") if n.strip()])
        return cls(data)

    def unknown_batch(self) -> bool:
        """Whether the form was refused for naming a batch that does not exist (the API's 404)."""
        return bool(self.data.get("batch")) and self.has_error("batch", "invalid_choice")

    def clean(self):
        data = super().clean()
        clean_options(self, data, {"cutoffs": SENSITIVITY_CUTOFFS_OPTION, "ties": TIES_OPTION})
        if data.get("threshold") is None:
            data["threshold"] = CONFIDENCE_THRESHOLD
        if not data.get("bootstrap"):
            data["bootstrap"] = DEFAULT_SAMPLES
        return data

    def ask(self, *, may_start: bool):
        """The kept result of these settings, or the job computing it (started only when ``may_start``: the asker
        may act on the batch); a refusal raises its ServiceError (:func:`~metrics.services.ask_label_sensitivity`)."""
        data = self.cleaned_data
        report_settings = services.ReportSettings(
            cutoffs=data["cutoffs"], bootstrap_samples=data["bootstrap"], ties=data["ties"]
        )
        return services.ask_label_sensitivity(
            data["batch"],
            list(data["runs"]),
            report_settings,
            threshold=data["threshold"],
            background=data["background"],
            may_start=may_start,
        )


class CrboForm(forms.Form):
    """CRBO of a run against the same ranker's run on the counterfactual collection."""

    run = named(Run.objects.all(), help_text="The ranker's run on the collection.")
    counterfactual_run = named(Run.objects.all(), help_text="The same ranker's run on the counterfactual collection.")
    depth = CountField(min_value=1, max_value=10000, initial=CRBO_DEPTH, help_text="Ranks compared.")
    p = DecimalNumberField(min_value=0.0, max_value=1.0, initial=CRBO_P, help_text="RBO persistence, in (0, 1).")
    ties = option_field(TIES_OPTION)

    def clean(self):
        data = super().clean()
        clean_options(self, data, {"ties": TIES_OPTION})
        if data.get("p") is not None and not 0.0 < data["p"] < 1.0:
            self.add_error("p", "p must lie strictly between 0 and 1")
        if data.get("run") and data.get("run") == data.get("counterfactual_run"):
            self.add_error("counterfactual_run", "choose the counterfactual run, not the run itself")
        return data

    def start(self) -> Job:
        data = self.cleaned_data
        return services.start_crbo(
            data["run"], data["counterfactual_run"], depth=data["depth"], p=data["p"], ties=data["ties"]
        )


class PreferenceForm(forms.Form):
    """Paired-variant preference of a run over male, female and neutral document versions."""

    run = named(Run.objects.all())
    separator = forms.CharField(max_length=5, initial="-", strip=False, help_text="Before the version suffix.")
    versions = forms.CharField(initial=",".join(VARIANT_VERSIONS), help_text="Comma-separated version suffixes.")

    def clean_versions(self):
        versions = [v.strip() for v in self.cleaned_data["versions"].split(",") if v.strip()]
        if len(set(versions)) < 2:
            raise forms.ValidationError("give at least two version suffixes (e.g. m,f,n)")
        return list(dict.fromkeys(versions))

    def clean(self):
        data = super().clean()
        if data.get("run") is not None and data.get("separator") and data.get("versions"):
            try:
                services.check_versioned_run(data["run"], separator=data["separator"], versions=data["versions"])
            except ServiceError as exc:
                self.add_error("run", str(exc))
        return data

    def start(self) -> Job:
        data = self.cleaned_data
        return services.start_preference(data["run"], separator=data["separator"], versions=data["versions"])


class CounterfactualForm(forms.Form):
    """A counterfactual collection: every gendered word and first name swapped, registered under a new name."""

    collection = named(Collection.objects.all())
    name = forms.SlugField(max_length=100, help_text="Name of the counterfactual collection (e.g. msmarco-cf).")
    wordlist = named(
        WordList.objects.order_by("name"),
        required=False,
        empty_label="built-in representative list",
        help_text="Whose first names are swapped.",
    )
    her = forms.ChoiceField(choices=[(c, c) for c in HER_CHOICES], initial="his", help_text="What 'her' becomes.")

    def clean_name(self):
        name = self.cleaned_data["name"]
        if Collection.objects.filter(name=name).exists():
            raise forms.ValidationError("a collection with this name exists")
        return name

    def start(self) -> Job:
        data = self.cleaned_data
        return services.start_counterfactual_collection(
            data["collection"], data["name"], wordlist=data["wordlist"], her=data["her"]
        )


class PlanForm(forms.Form):
    """A study plan's inputs (defaults as ``manage.py plan_study``'s)."""

    report = named(
        Report.objects.all(),
        "no report named %(value)s",
        required=False,
        empty_label="the newest on the query set",
        label="Pilot report",
    )
    queries = named(
        QuerySet.objects.all(),
        "no query set named %(value)s",
        required=False,
        label="Pilot query set",
        help_text="Without a report: its newest report holding both runs, else values computed now.",
    )
    run_a = named(Run.objects.all(), "unknown run: %(value)s", label="Run A")
    run_b = named(Run.objects.all(), "unknown run: %(value)s", label="Run B")
    metric = forms.ChoiceField(choices=[(m, m) for m in METRICS], initial="ARaB")
    variant = forms.CharField(required=False, help_text="Default: the paper's (tf, rbdf).")
    cutoff = CountField(min_value=1, max_value=MAX_CUTOFF, initial=DEFAULT_CUTOFF, required=False)
    delta = DecimalNumberField(label="Δ", help_text="The difference A − B to detect.")
    power = DecimalNumberField(min_value=0.5, max_value=0.99, initial=DEFAULT_POWER, required=False)
    alpha = DecimalNumberField(min_value=0.001, max_value=0.5, initial=DEFAULT_ALPHA, required=False, label="α")
    pool = named(Pool.objects.all(), "no pool named %(value)s", required=False)
    # A page or API request simulates at most DEFAULT_DRAWS studies (the command: up to 20,000).
    draws = CountField(min_value=100, max_value=DEFAULT_DRAWS, initial=DEFAULT_DRAWS, required=False)
    reward = MoneyField(name="reward", minimum="0.01", required=False)
    assignments_per_query = CountField(min_value=1, max_value=50, required=False)
    queries_per_hit = CountField(min_value=1, max_value=100, required=False)
    audit_width = DecimalNumberField(
        required=False, label="Audit width", help_text="The audit-based interval's width (default Δ)."
    )
    audit_seconds = DecimalNumberField(
        min_value=1, max_value=3600, initial=DEFAULT_AUDIT_SECONDS, required=False, label="Seconds per audited query"
    )

    def clean_delta(self) -> float:
        delta = self.cleaned_data["delta"]
        if not math.isfinite(delta) or delta <= 0:
            raise forms.ValidationError("Δ must be a positive number")
        return delta

    def clean_audit_width(self) -> float | None:
        width = self.cleaned_data.get("audit_width")
        if width is not None and (not math.isfinite(width) or width <= 0):
            raise forms.ValidationError("the audit's width must be a positive number")
        return width

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        no_pilot = not data.get("report") and not data.get("queries")
        if no_pilot and not self.has_error("report") and not self.has_error("queries"):
            self.add_error("queries", "give the pilot: a report or a query set")
        a, b = data.get("run_a"), data.get("run_b")
        if a is not None and a == b:
            self.add_error("run_b", "choose two different runs")
        return data

    def plan(self) -> dict[str, Any]:
        """The plan (ServiceError when the pilot refuses, e.g. a report without both runs)."""
        data = self.cleaned_data
        defaults = services.CostSettings()
        return services.plan_study(
            data["run_a"].name,
            data["run_b"].name,
            data["metric"],
            data["delta"],
            cutoff=data.get("cutoff") or DEFAULT_CUTOFF,
            variant=data.get("variant") or None,
            query_set=data["queries"].name if data.get("queries") else None,
            report=data["report"].name if data.get("report") else None,
            pool=data["pool"].name if data.get("pool") else None,
            power_target=data.get("power") or DEFAULT_POWER,
            alpha=data.get("alpha") or DEFAULT_ALPHA,
            draws=data.get("draws") or DEFAULT_DRAWS,
            compute=False,  # a request plans on a stored report, never builds one
            cost_settings=services.CostSettings(
                data.get("reward") or defaults.reward,
                data.get("assignments_per_query") or defaults.assignments_per_query,
                data.get("queries_per_hit") or defaults.queries_per_hit,
            ),
            audit_width=data.get("audit_width"),
            audit_seconds=data.get("audit_seconds") or DEFAULT_AUDIT_SECONDS,
        )

    def try_plan(self) -> dict[str, Any] | None:
        """The plan, or None with the refusal as this form's error (the page)."""
        try:
            return self.plan()
        except ServiceError as exc:
            self.add_error(None, str(exc))
            return None


class CompareSetsForm(forms.Form):
    """The same runs on several query sets: a report per set, one metric to rank the runs by."""

    reports = ticked(
        Report.objects.select_related("query_set").order_by("-created"),
        required=False,
        help_text="A report per query set, of the same runs (or as many runs of the same rankers, in the same order).",
    )
    query_sets = ticked(
        QuerySet.objects.order_by("name"),
        required=False,
        label="Or query sets",
        help_text="Query sets to score the runs below on: a report per set is built first (or reused).",
    )
    runs = ticked(
        Run.objects.order_by("name"),
        required=False,
        help_text="The runs scored on each query set chosen above.",
    )
    prefix = forms.SlugField(
        max_length=60, initial="across", required=False, help_text="The built reports are named <prefix>-<query set>."
    )
    metric = forms.ChoiceField(choices=[(name, name) for name in BY_NAME], initial="ARaB")
    variant = forms.CharField(
        required=False, max_length=100, help_text="Empty: the metric's own (tf for RaB and ARaB)."
    )
    cutoff = CountField(min_value=1, max_value=MAX_CUTOFF, initial=10, label="Rank cutoff")
    samples = CountField(min_value=1, max_value=100_000, initial=1000, label="Bootstrap replicates")
    seed = CountField(min_value=0, max_value=2**31 - 1, initial=0, required=False)

    def clean(self):
        data = super().clean()
        data["prefix"] = data.get("prefix") or "across"
        if not self.errors:
            reports, query_sets = list(data["reports"]), list(data["query_sets"])
            try:
                if query_sets:
                    services.check_set_building(
                        reports,
                        query_sets,
                        list(data["runs"]),
                        data["metric"],
                        data["cutoff"],
                        data["samples"],
                        data["prefix"],
                    )
                else:
                    data["variant"] = services.check_comparison(
                        reports, data["metric"], data.get("variant") or "", data["cutoff"], data["samples"]
                    )
            except ServiceError as exc:
                add_service_error(self, exc)
        return data

    def start(self) -> Job:
        data = self.cleaned_data
        return services.start_compare_sets(
            list(data["reports"]),
            data["metric"],
            variant=data.get("variant") or "",
            cutoff=data["cutoff"],
            samples=data["samples"],
            seed=data.get("seed") or 0,
            query_sets=list(data["query_sets"]),
            runs=list(data["runs"]),
            prefix=data["prefix"],
        )
