"""The site's URL patterns as path templates, for the tools that walk every URL.

The hostile round (``manage.py hostile_round``), the API sweep and the research-group walk of the
tests each ask every pattern of the resolver; they read it here, so a pattern the resolver gains is
walked by all three. Test tooling, not product code: nothing under ``core``/``annotation``/… imports
this module.
"""

from __future__ import annotations

from django.urls import URLResolver, get_resolver


def path_template(regex: str) -> str:
    """A resolver regex as a path with ``{group}`` placeholders: ``^``, ``$``, ``\\Z``, escapes and
    the ``?`` of an optional trailing ``/?`` resolved (the slash is kept)."""
    out: list[str] = []
    i = 0
    while i < len(regex):
        char = regex[i]
        if regex.startswith("(?P<", i):
            name = regex[i + 4 : regex.index(">", i)]
            depth, j = 0, i
            while True:  # the group's closing parenthesis (escapes skipped)
                if regex[j] == "\\":
                    j += 2
                    continue
                depth += {"(": 1, ")": -1}.get(regex[j], 0)
                if depth == 0:
                    break
                j += 1
            out.append("{" + name + "}")
            i = j + 1
        elif regex.startswith("\\Z", i):
            i += 2
        elif char == "\\":
            out.append(regex[i + 1])
            i += 2
        elif char in "^$?":
            i += 1
        else:
            out.append(char)
            i += 1
    return "".join(out)


def site_patterns() -> list[tuple[str, str]]:
    """Every URL pattern of the site as ``(namespaced name, /path/{param}/ template)``, in the
    resolver's order (an unnamed pattern's name is ``?``)."""
    found: list[tuple[str, str]] = []

    def walk(resolver: URLResolver, prefix: str, namespaces: list[str]) -> None:
        for pattern in resolver.url_patterns:
            regex = prefix + pattern.pattern.regex.pattern.lstrip("^")
            if isinstance(pattern, URLResolver):
                walk(pattern, regex, namespaces + ([pattern.namespace] if pattern.namespace else []))
            else:
                found.append((":".join([*namespaces, pattern.name or "?"]), "/" + path_template(regex)))

    walk(get_resolver(), "", [])
    return found
