"""The layers hold: a test over the import graph (grimp), like tests/core/test_startup.py for start-up.

docs/architecture.md draws the picture these tests keep true. A module's place decides its
layer; nobody keeps a list.

**Apps**, bottom to top: ``core`` < ``pooling`` < ``annotation`` < ``metrics``. Above them
``benchmarks`` (benchmarks, load tests, the fake outside servers) may import anything, and so
may ``config`` (settings, URLs, the Celery app). ``core``, ``pooling``, ``annotation``,
``metrics`` and ``config`` are the *product*.

**Layer names.** A module of an app is *Django-aware* iff a component of its dotted path after
the app's name is one of :data:`LAYERS` (``annotation.crowd.services.sync``,
``core.jobs.sweeper``, ``annotation.models.crowd``, ``core.management.cli``,
``annotation.crowd.providers.mturk``); every other module is *pure*
(``annotation.machine.routing_statistics``, ``core.http``, ``metrics.rbo``): it computes or
reads files and runs without a Django project. Among the layer names, :data:`SHELLS` are
what a person or a script talks to (pages, API, commands, tasks, admin, template tags);
``models``, ``services``, ``selectors`` and ``providers`` hold the state and its changes
and reads; ``jobs``, ``db``, ``web``, ``accounts``, ``apps``, ``migrations`` are Django
mechanisms.

The rules (one test each; a failure lists the offending imports or modules):

- a pure module reaches no Django, DRF or Celery, not even through other modules;
- no app imports an app above it;
- selectors never import services (a module with ``selectors`` in its path, one with
  ``services`` in its path, same app): reads do not change state;
- services, selectors, providers and models never import a shell of their app: the shells
  call them (a background job is declared in services and its Celery task made from the
  declaration, ``core.jobs``);
- another app is reached through its ``models`` (the package or its submodules), its
  facades ``<app>.selectors`` and ``<app>.services`` (the app-level modules, not a
  sub-domain's or a topic module) or its pure modules; ``core``, the shared app of
  mechanisms, is exempt: its modules are there to be used by every app;
- in an app split into sub-domains (``annotation``), those facades are for other apps only:
  its own modules import the sub-domain's module they need;
- no product module imports ``tests`` or ``benchmarks``;
- no import cycle between the project's modules, function-level imports included, and none
  even through ``if TYPE_CHECKING:`` imports;
- no two modules of one app share a last name in different layers (a pure ``calibration``
  beside ``services/calibration``), except the layer names themselves.
"""

from __future__ import annotations

import sys
from collections import defaultdict
from pathlib import Path

import pytest

grimp = pytest.importorskip("grimp")

ROOT = Path(__file__).resolve().parents[1]
#: The product's apps, bottom to top: an app imports only apps below it.
APPS = ("core", "pooling", "annotation", "metrics")
#: Above the apps and free to import anything.
TOP = ("benchmarks", "config")
ORDER = {app: rank for rank, app in enumerate((*APPS, "benchmarks"))}
PRODUCT = (*APPS, "config")
#: Not product code: no product module imports these.
NOT_PRODUCT = ("tests", "benchmarks")
#: Layer names: a module with one of these in its dotted path (after the app) is Django-aware.
LAYERS = frozenset(
    {
        "accounts",
        "admin",
        "api",
        "api_urls",
        "apps",
        "db",
        "forms",
        "jobs",
        "management",
        "migrations",
        "models",
        "providers",
        "selectors",
        "serializers",
        "services",
        "tasks",
        "templatetags",
        "urls",
        "views",
        "web",
    }
)
#: What a person or a script talks to.
SHELLS = frozenset(
    {"views", "api", "serializers", "forms", "tasks", "urls", "api_urls", "admin", "management", "templatetags"}
)
#: The layers that shells call and that never call shells back.
INNER = frozenset({"services", "selectors", "providers", "models"})
FRAMEWORKS = ("django", "rest_framework", "celery")


def _build(*, exclude_type_checking_imports: bool):
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    return grimp.build_graph(
        *APPS,
        *TOP,
        "tests",
        include_external_packages=True,
        exclude_type_checking_imports=exclude_type_checking_imports,
        cache_dir=None,
    )


@pytest.fixture(scope="module")
def graph():
    # Imports only for type checking are no dependency at run time (``if TYPE_CHECKING:``).
    return _build(exclude_type_checking_imports=True)


def _app(module: str) -> str:
    return module.split(".")[0]


def _ours(module: str, apps=APPS) -> bool:
    return _app(module) in apps and ".migrations" not in module


def _parts(module: str) -> list[str]:
    """The components of the module's path after its app's name."""
    return module.split(".")[1:]


def _layers(module: str) -> set[str]:
    return set(_parts(module)) & LAYERS


def is_pure(module: str) -> bool:
    """A module of an app is pure iff no component of its path is a layer name."""
    return _app(module) in APPS and not _layers(module)


def _is_shell(module: str) -> bool:
    return bool(_layers(module) & SHELLS)


def _direct(graph, apps=APPS):
    """Every direct import (importer, imported) between the project's modules, importer in ``apps``."""
    for importer in sorted(m for m in graph.modules if _ours(m, apps)):
        for imported in sorted(graph.find_modules_directly_imported_by(importer)):
            yield importer, imported


def _listing(pairs) -> str:
    return "\n  " + "\n  ".join(f"{a} -> {b}" for a, b in pairs)


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

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for module in modules:
        if module not in index:
            visit(module)
    return found


def test_the_layer_vocabulary_sorts_known_modules():
    """The vocabulary itself: a few modules whose layer nobody doubts."""
    for module in (
        "core.http",
        "core.errors",
        "pooling.readers",
        "annotation.labels",
        "annotation.machine.routing_statistics",
        "annotation.machine.prelabellers.openai_chat",
        "annotation.results.aggregation",
        "metrics.rbo",
    ):
        assert is_pure(module), module
    for module in (
        "core.jobs.sweeper",
        "core.services.leases",
        "core.management.cli",
        "core.db.sqlite.base",
        "pooling.services.pools",
        "annotation.accounts",
        "annotation.models.crowd",
        "annotation.crowd.providers.mturk",
        "annotation.machine.services.routing",
        "metrics.views",
    ):
        assert not is_pure(module), module
    assert _is_shell("annotation.management.commands.route") and not _is_shell("annotation.selectors")


def test_pure_modules_import_no_django(graph):
    pure = sorted(m for m in graph.modules if _ours(m) and is_pure(m))
    assert len(pure) > 40, pure  # the vocabulary still finds the computing modules
    wrong = []
    for module in pure:
        for framework in FRAMEWORKS:
            if framework not in graph.modules:
                continue
            chain = graph.find_shortest_chain(importer=module, imported=framework)
            if chain is not None:
                wrong.append(" -> ".join(chain))
    assert wrong == [], (
        "pure modules (no layer name in their path) reach a framework; move them under a layer or "
        "cut the import:\n  " + "\n  ".join(wrong)
    )


def test_no_app_imports_an_app_above_it(graph):
    wrong = [
        (importer, imported)
        for importer, imported in _direct(graph)
        if _app(imported) in ORDER and ORDER[_app(imported)] > ORDER[_app(importer)]
    ]
    assert wrong == [], "imports up the order core < pooling < annotation < metrics < benchmarks:" + _listing(wrong)


def test_selectors_never_import_services(graph):
    wrong = [
        (importer, imported)
        for importer, imported in _direct(graph)
        if "selectors" in _parts(importer) and _app(imported) == _app(importer) and "services" in _parts(imported)
    ]
    assert wrong == [], "selectors importing services (reads must not reach writes):" + _listing(wrong)


def test_inner_layers_never_import_their_shells(graph):
    wrong = [
        (importer, imported)
        for importer, imported in _direct(graph)
        if _layers(importer) & INNER
        and not _is_shell(importer)
        and _app(imported) == _app(importer)
        and _is_shell(imported)
    ]
    assert wrong == [], "services, selectors, providers or models importing a shell of their app:" + _listing(wrong)


def test_an_app_with_sub_domains_keeps_its_facades_for_other_apps(graph):
    """In an app split into sub-domains (annotation), ``<app>.services`` and ``<app>.selectors`` are
    the doors of other apps; its own modules import the sub-domain's module they need."""
    wrong = [
        (importer, imported)
        for importer, imported in _direct(graph)
        if _sub_domains(graph, _app(importer))
        and imported in (f"{_app(importer)}.services", f"{_app(importer)}.selectors")
        and not importer.startswith(imported)
    ]
    assert wrong == [], "modules of an app with sub-domains importing the app's own facades:" + _listing(wrong)


def _reachable_from_another_app(module: str) -> bool:
    parts = _parts(module)
    if parts[:1] == ["models"]:
        return True
    if parts in (["selectors"], ["services"]):
        return True
    return is_pure(module)


def test_another_app_is_reached_through_its_models_facades_or_pure_modules(graph):
    wrong = [
        (importer, imported)
        for importer, imported in _direct(graph)
        if _ours(imported)
        and _app(imported) not in (_app(importer), "core")
        and not _reachable_from_another_app(imported)
    ]
    assert wrong == [], (
        "imports into another app past its models, its selectors/services facades and its pure modules:"
        + _listing(wrong)
    )


def test_no_product_module_imports_tests_or_benchmarks(graph):
    wrong = [
        (importer, imported)
        for importer in sorted(m for m in graph.modules if _app(m) in PRODUCT)
        for imported in sorted(graph.find_modules_directly_imported_by(importer))
        if _app(imported) in NOT_PRODUCT
    ]
    assert wrong == [], "product code importing test or benchmark code:" + _listing(wrong)


def test_no_import_cycles(graph):
    cycles = _cycles(graph)
    assert cycles == [], "import cycles (each a set of modules importing each other):\n  " + "\n  ".join(
        " <-> ".join(c) for c in cycles
    )


def test_no_import_cycles_even_through_type_checking_imports():
    """A circle closed by an ``if TYPE_CHECKING:`` import is still a circle of the design
    (jobs <-> job_registry <-> tasks; metrics formatting <-> services were)."""
    cycles = _cycles(_build(exclude_type_checking_imports=False))
    assert cycles == [], "import cycles through TYPE_CHECKING imports:\n  " + "\n  ".join(
        " <-> ".join(c) for c in cycles
    )


def _layer_of(module: str) -> str:
    """The first layer name on the module's path, or ``pure``."""
    return next((part for part in _parts(module) if part in LAYERS), "pure")


def _sub_domains(graph, app: str) -> set[str]:
    """The packages right under an app that are no layer: ``annotation.crowd``, ``annotation.machine`` …"""
    return {
        _parts(m)[0]
        for m in graph.modules
        if _app(m) == app and len(_parts(m)) == 1 and graph.find_children(m) and _parts(m)[0] not in LAYERS
    }


def test_no_two_modules_of_an_app_share_a_name_in_different_layers(graph):
    """Names that are interfaces are exempt: a management command's module is the command's
    name, a template tag library's its ``{% load %}`` name, and ``models/<sub-domain>`` holds
    that sub-domain's models."""
    apps = (*APPS, "benchmarks")
    by_name: dict[tuple[str, str], set[str]] = defaultdict(set)
    for module in graph.modules:
        parts = _parts(module)
        if not _ours(module, apps) or not parts or {"commands", "templatetags"} & set(parts):
            continue
        name = parts[-1]
        if name in LAYERS or name in _sub_domains(graph, _app(module)):
            continue
        by_name[(_app(module), name)].add(module)
    clashes = {frozenset(modules) for modules in by_name.values() if len({_layer_of(m) for m in modules}) > 1}
    assert clashes == set(), "modules of one app named alike in different layers:\n  " + "\n  ".join(
        sorted(", ".join(sorted(c)) for c in clashes)
    )
