"""``{{ seconds|duration }}``: a span of whole seconds as people read it (``4 min 05 s``, ``1 h 02 min``)."""

from django import template

register = template.Library()


@register.filter(name="duration")
def duration(seconds: int | None) -> str:
    if seconds is None:
        return "–"
    seconds = int(seconds)
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours} h {minutes:02d} min"
    if minutes:
        return f"{minutes} min {secs:02d} s"
    return f"{secs} s"
