"""A matplotlib SVG rewritten into fewer elements a browser has to build: the same drawing (pure: ``xml.etree``).

A browser styles and lays out every element, and builds a shadow copy of every ``<use>``; matplotlib writes each
marker as a ``<use>``, wraps every artist in a group nothing refers to, and adds whitespace and metadata.
:func:`lighten` drops all that (what it saves: docs/benchmarks-history.md); text, coordinates, colours, clip paths
and the painting order are kept as they are.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

SVG = "http://www.w3.org/2000/svg"
XLINK = "http://www.w3.org/1999/xlink"
#: Attribute namespaces written back with their usual prefix (ElementTree would invent ``ns0``).
_PREFIXES = {XLINK: "xlink", "http://www.w3.org/XML/1998/namespace": "xml"}
_HREF = "xlink:href"
_REFERENCE = re.compile(r"url\(#([^)]+)\)")
#: A start or empty tag (attribute values are escaped: no ``<`` or ``>`` inside).
_TAG = re.compile(r"<[^/!?][^<>]*>")


def _tag(element: ET.Element) -> str:
    return element.tag.rpartition("}")[2]


def _plain_names(root: ET.Element) -> None:
    """Tags without the SVG namespace, namespaced attributes with their usual prefix: written back as read."""
    for element in root.iter():
        if element.tag.startswith(f"{{{SVG}}}"):
            element.tag = _tag(element)
        for key in [key for key in element.attrib if key.startswith("{")]:
            space, _, name = key[1:].partition("}")
            if space in _PREFIXES:
                element.attrib[f"{_PREFIXES[space]}:{name}"] = element.attrib.pop(key)


def _declarations(style: str | None) -> dict[str, str]:
    """``"fill: red; stroke: blue"`` as ``{"fill": "red", "stroke": "blue"}`` (in order)."""
    pairs = (part.partition(":") for part in (style or "").split(";") if part.strip())
    return {name.strip(): value.strip() for name, _, value in pairs}


def _as_path(use: ET.Element, target: ET.Element) -> ET.Element:
    """The ``<path>`` a ``<use>`` of ``target`` draws, as SVG places and styles a ``<use>``: the path's style wins over
    the use's; the use's transform, then its x and y, then the path's own transform."""
    attributes = {"d": target.get("d", "")}
    style = _declarations(use.get("style")) | _declarations(target.get("style"))
    if style:
        attributes["style"] = "; ".join(f"{name}: {value}" for name, value in style.items())
    x, y = use.get("x", "0"), use.get("y", "0")
    moves = [use.get("transform"), f"translate({x} {y})" if (x, y) != ("0", "0") else None, target.get("transform")]
    if any(moves):
        attributes["transform"] = " ".join(move for move in moves if move)
    return ET.Element("path", attributes)


#: The attributes of a ``<use>`` :func:`_as_path` carries over; a use with any other is left alone.
_USE_ATTRIBUTES = {_HREF, "x", "y", "style", "transform"}


def lighten(svg: bytes) -> bytes:
    """``svg`` (as matplotlib's SVG backend writes it) with the same drawing in fewer elements."""
    text = svg.decode("utf-8")
    start = text.index("<svg")
    head, root = text[:start], ET.fromstring(text[start:])
    _plain_names(root)
    shapes = {
        path.get("id"): path
        for defs in root.iter("defs")
        for path in defs
        if _tag(path) == "path" and path.get("id") and not len(path)
    }
    for parent in list(root.iter()):
        for i, child in enumerate(parent):
            target = shapes.get((child.get(_HREF) or "")[1:])
            if _tag(child) == "use" and target is not None and not len(child) and set(child.attrib) <= _USE_ATTRIBUTES:
                parent[i] = _as_path(child, target)
    referenced = {
        name
        for element in root.iter()
        for key, value in element.attrib.items()
        for name in ([value[1:]] if key == _HREF else _REFERENCE.findall(value))
    }

    def rewrite(parent: ET.Element) -> None:
        children: list[ET.Element] = []
        for child in parent:
            rewrite(child)
            if child.get("id") not in referenced:
                if child.get("id") in shapes or _tag(child) == "metadata":
                    continue  # a shape no ``<use>`` points at any more; the Creative Commons block
                child.attrib.pop("id", None)
            if _tag(child) == "g" and not child.attrib:
                children.extend(child)  # a bare group: its children in its place
            elif not (_tag(child) == "defs" and not len(child)):
                children.append(child)
        parent[:] = children

    rewrite(root)
    for element in root.iter():
        if _tag(element) not in ("text", "tspan", "style") and element.text is not None and not element.text.strip():
            element.text = None
        if element.tail is not None and not element.tail.strip():
            element.tail = None
        if element.get("d") is not None:
            element.set("d", " ".join(element.get("d").split()))
    declarations = {"xmlns": SVG}
    if any(key == _HREF for element in root.iter() for key in element.attrib):
        declarations["xmlns:xlink"] = XLINK
    root.attrib = declarations | root.attrib
    return (head + ET.tostring(root, encoding="unicode") + "\n").encode("utf-8")


_STYLE = re.compile(r"<style[^>]*>.*?</style>|<defs>\s*</defs>", re.S)


def inline(svg: str, prefix: str, label: str, *, element_id: str = "") -> str:
    """A drawn SVG as markup for a page: without its prolog and its ``<style>`` (it would style the whole page; the
    page's stylesheet gives ``svg.plot`` the same rules), ids prefixed with ``prefix`` so figures' ids never meet,
    and ``role="img"`` with ``label`` as ``alt``."""
    from html import escape

    body = _STYLE.sub("", svg[svg.index("<svg") :]).strip()

    def prefixed(tag: re.Match) -> str:  # inside tags only: a label's text is left as it reads
        return (
            tag[0]
            .replace(' id="', f' id="{prefix}')
            .replace("url(#", f"url(#{prefix}")
            .replace('href="#', f'href="#{prefix}')
        )

    body = _TAG.sub(prefixed, body)
    attributes = f'class="plot svg" role="img" aria-label="{escape(label)}"'
    if element_id:
        attributes += f' id="{escape(element_id)}"'
    return body.replace("<svg ", f"<svg {attributes} ", 1)
