"""The layers hold: a test over the import graph (grimp), like tests/core/test_startup.py for start-up.

docs/architecture.md draws the picture these tests keep true:

- no import cycle between the project's modules (function-level imports count too);
- ``core`` is the shared app and imports no other app;
- an app reaches another app through that app's ``models`` (foreign keys, choices),
  ``selectors`` (reads), ``services`` (the package's public functions, never a topic module)
  or its pure modules, and nothing else (no views, API, tasks, forms or service internals);
- the pure modules import no Django, DRF or Celery, so they run in a notebook;
- services and selectors never import their app's shells (views, API, forms, serializers,
  tasks): the shells call them, not the other way round (a background job is declared in
  its services and its Celery task made from the declaration, ``core.jobs``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

grimp = pytest.importorskip("grimp")

APPS = ("core", "pooling", "annotation", "metrics")
#: Modules with no Django: computation and file formats, usable without a project.
PURE = {
    "annotation.results.aggregation",
    "annotation.results.agreement",
    "annotation.machine.alternative_annotator",
    "annotation.machine.crowd_reliability",
    "annotation.machine.calibration_statistics",
    "annotation.machine.calibration_plots",
    "annotation.crowd.costs",
    "annotation.crowd.hit_groups",
    "annotation.results.export_formats",
    "annotation.labels",
    "annotation.crowd.providers.mturk_api",
    "annotation.crowd.providers.mturk_xml",
    "annotation.machine.prelabellers",
    "annotation.machine.prelabellers.base",
    "annotation.machine.prelabellers.openai_chat",
    "annotation.machine.prelabellers.rules",
    "annotation.machine.prelabellers.trained",
    "annotation.machine.proportions",
    "annotation.crowd.providers.prolific_api",
    "annotation.results.review",
    "annotation.machine.routing_statistics",
    "core.backoff",
    "core.converters",
    "core.natural",
    "core.errors",
    "core.files",
    "core.http",
    "core.logfilters",
    "core.progress",
    "core.registry",
    "core.spreadsheet",
    "core.svg_plots",
    "core.textfiles",
    "metrics.counterfactual",
    "metrics.defaults",
    "metrics.effectiveness",
    "metrics.measures",
    "metrics.plots",
    "metrics.preference",
    "metrics.rbo",
    "metrics.sensitivity",
    "metrics.significance",
    "metrics.tables",
    "metrics.vocabulary",
    "pooling.analysis",
    "pooling.irdatasets",
    "pooling.magnitudes",
    "pooling.pool",
    "pooling.qrelfiles",
    "pooling.preview",
    "pooling.queryfiles",
    "pooling.rank_bias",
    "pooling.readers",
    "pooling.synthetic",
    "pooling.tokenize",
    "pooling.wordlists",
}
SHELLS = ("views", "api", "forms", "serializers", "tasks", "urls", "api_urls", "admin")


@pytest.fixture(scope="module")
def graph():
    import sys

    root = str(Path(__file__).resolve().parents[1])
    if root not in sys.path:
        sys.path.insert(0, root)
    # Imports only for type checking are no dependency at run time (``if TYPE_CHECKING:``).
    return grimp.build_graph(
        *APPS, "config", include_external_packages=True, exclude_type_checking_imports=True, cache_dir=None
    )


def _ours(module: str) -> bool:
    return module.split(".")[0] in APPS and ".migrations" not in module


def _app(module: str) -> str:
    return module.split(".")[0]


def _cycles(graph) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), among the project's modules."""
    modules = sorted(m for m in graph.modules if _ours(m))
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0

    def visit(v: str) -> None:
        nonlocal counter
        index[v] = low[v] = counter
        counter += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph.find_modules_directly_imported_by(v):
            if not _ours(w):
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    import sys

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for module in modules:
        if module not in index:
            visit(module)
    return found


def test_no_import_cycles(graph):
    assert _cycles(graph) == []


def test_core_imports_no_app(graph):
    for app in APPS[1:]:
        chain = graph.find_shortest_chain(importer="core", imported=app, as_packages=True)
        assert chain is None, f"core reaches {app}: {' -> '.join(chain)}"


def test_another_app_is_reached_through_its_models_selectors_services_or_pure_modules(graph):
    allowed_suffixes = ("models", "selectors", "services")
    wrong = []
    for importer in sorted(m for m in graph.modules if _ours(m)):
        for imported in graph.find_modules_directly_imported_by(importer):
            if not _ours(imported) or _app(imported) in (_app(importer), "core"):
                continue
            rest = imported.split(".", 1)[1] if "." in imported else ""
            if rest in allowed_suffixes or imported in PURE:
                continue
            wrong.append(f"{importer} -> {imported}")
    assert wrong == []


def test_pure_modules_import_no_django(graph):
    assert set(graph.modules) >= PURE
    for module in sorted(PURE):
        for framework in ("django", "rest_framework", "celery"):
            chain = graph.find_shortest_chain(importer=module, imported=framework)
            assert chain is None, f"{module} is pure but reaches {framework}: {' -> '.join(chain)}"


def test_services_and_selectors_never_import_their_shells(graph):
    wrong = []
    for module in sorted(m for m in graph.modules if _ours(m)):
        parts = module.split(".")
        if len(parts) < 2 or parts[1] not in ("services", "selectors", "providers"):
            continue
        for imported in graph.find_modules_directly_imported_by(module):
            bits = imported.split(".")
            if bits[0] == parts[0] and len(bits) >= 2 and bits[1] in SHELLS:
                wrong.append(f"{module} -> {imported}")
    assert wrong == []


def test_no_import_cycles_even_through_type_checking_imports():
    """A circle closed by an ``if TYPE_CHECKING:`` import is still a circle of the design
    (jobs <-> job_registry <-> tasks; metrics formatting <-> services were)."""
    import sys

    root = str(Path(__file__).resolve().parents[1])
    if root not in sys.path:
        sys.path.insert(0, root)
    full = grimp.build_graph(
        *APPS, "config", include_external_packages=True, exclude_type_checking_imports=False, cache_dir=None
    )
    assert _cycles(full) == []
