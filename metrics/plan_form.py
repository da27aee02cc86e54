"""The study planner's form (``/plan/``, ``/api/plan/``): a pilot's two runs and the difference to detect,
planned by :func:`metrics.services.plan_study` on a stored report (defaults as ``manage.py plan_study``'s)."""

from __future__ import annotations

import math
from typing import Any

from django import forms

from core.errors import ServiceError
from core.forms import CountField, DecimalNumberField, MoneyField
from genderbias.ranking.defaults import MAX_CUTOFF
from genderbias.ranking.vocabulary import METRICS
from genderbias.stats.power import DEFAULT_DRAWS
from pooling.models import Pool, QuerySet, Run

from . import services
from .models import Report
from .services.planning import DEFAULT_ALPHA, DEFAULT_AUDIT_SECONDS, DEFAULT_CUTOFF, DEFAULT_POWER


class PlanForm(forms.Form):
    """A study plan's inputs (defaults as ``manage.py plan_study``'s)."""

    report = forms.ModelChoiceField(
        Report.objects.all(),
        to_field_name="name",
        required=False,
        empty_label="the newest on the query set",
        label="Pilot report",
        error_messages={"invalid_choice": "no report named %(value)s"},
    )
    queries = forms.ModelChoiceField(
        QuerySet.objects.all(),
        to_field_name="name",
        required=False,
        label="Pilot query set",
        help_text="Without a report: its newest report holding both runs, else values computed now.",
        error_messages={"invalid_choice": "no query set named %(value)s"},
    )
    run_a = forms.ModelChoiceField(
        Run.objects.all(),
        to_field_name="name",
        label="Run A",
        error_messages={"invalid_choice": "unknown run: %(value)s"},
    )
    run_b = forms.ModelChoiceField(
        Run.objects.all(),
        to_field_name="name",
        label="Run B",
        error_messages={"invalid_choice": "unknown run: %(value)s"},
    )
    metric = forms.ChoiceField(choices=[(m, m) for m in METRICS], initial="ARaB")
    variant = forms.CharField(required=False, help_text="Default: the paper's (tf, rbdf).")
    cutoff = CountField(min_value=1, max_value=MAX_CUTOFF, initial=DEFAULT_CUTOFF, required=False)
    delta = DecimalNumberField(label="Δ", help_text="The difference A − B to detect.")
    power = DecimalNumberField(min_value=0.5, max_value=0.99, initial=DEFAULT_POWER, required=False)
    alpha = DecimalNumberField(min_value=0.001, max_value=0.5, initial=DEFAULT_ALPHA, required=False, label="α")
    pool = forms.ModelChoiceField(
        Pool.objects.all(),
        to_field_name="name",
        required=False,
        error_messages={"invalid_choice": "no pool named %(value)s"},
    )
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
