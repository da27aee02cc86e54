"""Forms of the annotation app."""

from __future__ import annotations

from collections.abc import Sequence

from django import forms

from annotation.labels import LABEL_CHOICES

from .models import HitQuery
from .services.escalation import DEFAULT_MAX_ASSIGNMENTS


class HitAnswerForm(forms.Form):
    """Server-side check of a HIT page: every ``q-<position>`` needs one of the four categories.

    The page itself is rendered by ``annotation/hit.html`` (shared with MTurk), so this form
    only validates; the browser's ``required`` is a convenience, this is the rule.
    """

    def __init__(self, hit_queries: Sequence[HitQuery], *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        for hq in hit_queries:
            self.fields[hq.field_name] = forms.ChoiceField(
                choices=LABEL_CHOICES,
                label=hq.batch_query.text,
                error_messages={
                    "required": "Please choose a category for this query.",
                    "invalid_choice": "Please choose one of the four categories.",
                },
            )

    def field_errors(self) -> dict[str, str]:
        return {name: " ".join(errors) for name, errors in self.errors.items()}


class EscalateForm(forms.Form):
    max_assignments = forms.IntegerField(
        min_value=1,
        max_value=50,
        initial=DEFAULT_MAX_ASSIGNMENTS,
        label="Cap on assignments per HIT",
    )
    confirm = forms.BooleanField(required=True, label="I accept the extra cost shown above")
