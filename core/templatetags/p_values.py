"""``{{ cell.p_value|p_value }}``: :func:`core.figure_notes.p_value_text` in templates."""

from django import template

from core.figure_notes import p_value_text

register = template.Library()


register.filter("p_value", p_value_text)
