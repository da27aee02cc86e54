"""``{{ code|label_name }}``: a label's full name (Non-gendered, Female, ...) from the one vocabulary
(:mod:`genderbias.labels`), so no page shows the stored codes n/f/m/o."""

from __future__ import annotations

from django import template

from genderbias.labels import LABEL_NAMES

register = template.Library()


@register.filter
def label_name(code: object) -> object:
    """The name of label ``code``; anything that is not a label code (None, "–") is returned as it is."""
    return LABEL_NAMES.get(code, code) if isinstance(code, str) else code
