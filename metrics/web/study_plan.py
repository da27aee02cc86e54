"""The study plan's shells for people, shared by two of them: its form (the batch page's plan panel
and ``POST /api/metrics/plan/``) and the panel that the batch-creation page
(``annotation/batches/new/``) loads with htmx. The plan itself is
:func:`metrics.services.planning.plan_study`."""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any

from django import forms
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from core.errors import ServiceError
from core.web.permissions import researcher_required
from pooling.models import Pool, QuerySet, Run

from .. import services
from ..models import Report
from ..power import DEFAULT_DRAWS
from ..services.planning import DEFAULT_ALPHA, DEFAULT_CUTOFF, DEFAULT_POWER, MAX_DRAWS
from ..vocabulary import METRICS


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
    cutoff = forms.IntegerField(min_value=1, max_value=10000, initial=DEFAULT_CUTOFF, required=False)
    delta = forms.FloatField(label="Δ", help_text="The difference A − B to detect.")
    power = forms.FloatField(min_value=0.5, max_value=0.99, initial=DEFAULT_POWER, required=False)
    alpha = forms.FloatField(min_value=0.001, max_value=0.5, initial=DEFAULT_ALPHA, required=False, label="α")
    pool = forms.ModelChoiceField(
        Pool.objects.all(),
        to_field_name="name",
        required=False,
        error_messages={"invalid_choice": "no pool named %(value)s"},
    )
    draws = forms.IntegerField(min_value=100, max_value=MAX_DRAWS, initial=DEFAULT_DRAWS, required=False)
    reward = forms.DecimalField(min_value=Decimal("0.01"), decimal_places=2, required=False)
    assignments_per_query = forms.IntegerField(min_value=1, max_value=50, required=False)
    queries_per_hit = forms.IntegerField(min_value=1, max_value=100, required=False)

    def clean_delta(self) -> float:
        delta = self.cleaned_data["delta"]
        if not math.isfinite(delta) or delta <= 0:
            raise forms.ValidationError("Δ must be a positive number")
        return delta

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
            cost_settings=services.CostSettings(
                data.get("reward") or defaults.reward,
                data.get("assignments_per_query") or defaults.assignments_per_query,
                data.get("queries_per_hit") or defaults.queries_per_hit,
            ),
        )

    def try_plan(self) -> dict[str, Any] | None:
        """The plan, or None with the refusal as this form's error (the page)."""
        try:
            return self.plan()
        except ServiceError as exc:
            self.add_error(None, str(exc))
            return None


#: The batch form's fields the panel reads (through ``hx-include``): the pool and what a query costs.
BATCH_FIELDS = ("pool", "reward", "assignments_per_query", "queries_per_hit")
#: The panel's fields are prefixed: the batch form beside it has fields of the same names.
PREFIX = "plan"


@researcher_required
@require_GET
def plan_panel(request: HttpRequest) -> HttpResponse:
    """The panel: its form, and once asked (``delta`` given) the plan in one sentence (or why not)."""
    asked = bool(request.GET.get(f"{PREFIX}-delta", "").strip())
    data = request.GET.copy()
    for name in BATCH_FIELDS:  # the batch form's own fields, unprefixed
        if request.GET.get(name):
            data[f"{PREFIX}-{name}"] = request.GET[name]
    form = PlanForm(data if asked else None, prefix=PREFIX)
    plan = form.try_plan() if asked and form.is_valid() else None
    provider = request.GET.get("provider") or "local"
    cost = None
    if plan and plan.get("cost"):
        cost = plan["cost"].get(provider)
    return render(
        request,
        "metrics/_plan_panel.html",
        {"form": form, "plan": plan, "provider": provider, "cost": cost, "asked": asked},
    )
