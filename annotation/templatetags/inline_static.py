"""``{% inline_script "js/hand_signals.js" %}``: a script of ``static/`` written into the self-contained
HIT page, which links to no file (MTurk shows it from its own servers)."""

from __future__ import annotations

from functools import cache

from django import template
from django.contrib.staticfiles import finders
from django.utils.safestring import SafeString, mark_safe

register = template.Library()


@cache
def _script(path: str) -> str:
    found = finders.find(path)
    if not found:
        raise template.TemplateSyntaxError(f"inline_script: no static file {path!r}")
    with open(found, encoding="utf-8") as handle:
        text = handle.read()
    if "</script" in text.lower():
        raise template.TemplateSyntaxError(f"inline_script: {path} contains '</script', which would end the element")
    return text


@register.simple_tag
def inline_script(path: str) -> SafeString:
    """``<script>`` holding the static file ``path`` (read once per process)."""
    return mark_safe(f"<script>\n{_script(path)}</script>")
