"""The layers hold: a test over the import graph (grimp), like tests/core/test_startup.py for start-up.

docs/architecture.md draws the picture these tests keep true. A module's place decides its
layer; nobody keeps a list.

**Apps**, bottom to top: ``genderbias`` (the library: every computation, installable alone, no Django) < ``core`` < ``pooling`` < ``annotation`` < the crowd platforms < ``metrics`` <
``publishing`` (data flows pooling -> annotation -> metrics -> publishing: what a study publishes reads the
annotations and the measurements, and nothing below it reads a publication).
Each crowd platform is an app of its own, ``platforms.<name>`` (``platforms/<name>/``: in-house,
MTurk, Prolific, Task Builder), all on one level: a platform imports no other (but for the
imports :data:`BETWEEN_PLATFORMS` lists), and of ``annotation`` only its kernel, results and quality
(:data:`PLATFORM_INTERFACE`) and its app-level modules; ``annotation`` reaches a platform only
through the registries the platform fills as Django starts (its ``apps.py``). Above them
``benchmarks`` (benchmarks and load tests) may import anything
(the tests included: a platform's fake server is beside its tests), and so
may ``config`` (settings, URLs, the Celery app). ``core``, ``pooling``, ``annotation``, ``platforms``,
``metrics``, ``publishing`` and ``config`` are the *product*.

**Layer names.** A module of an app is *Django-aware* iff a component of its dotted path after
the app's name is one of :data:`LAYERS` (``annotation.crowd.services.sync``,
``core.jobs.sweeper``, ``annotation.models.crowd``, ``core.management.cli``,
``platforms.mturk.provider``); every other module is *pure*
(``genderbias.machine.routing_statistics``, ``core.http``, ``genderbias.ranking.rbo``): it computes or
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
- no product module imports ``tests`` or ``benchmarks``, and no test imports ``benchmarks`` (test support
  lives under ``tests/``, and the benchmarks import it);
- no import cycle between the project's modules, function-level imports included, and none
  even through ``if TYPE_CHECKING:`` imports;
- no two modules of one app share a last name in different layers (a pure ``calibration``
  beside ``services/calibration``), except the layer names themselves;
- an app's **sub-domains** (``annotation.crowd``, ``annotation.quality`` …; ``models/<sub-domain>``
  counts as its sub-domain's) keep the order of :data:`SUB_DOMAIN_ORDER`, function-level imports
  included: a sub-domain imports only sub-domains on lower levels, so no two import each other
  both ways, and crowd, at the base, imports none of them. The order names every sub-domain.
- the kernel (``core``, ``annotation.crowd``, ``annotation.quality``, ``annotation.machine``) names no
  platform in code, only in docstrings and comments (read with ``ast`` and ``tokenize``): it asks the
  provider; the files still naming one are listed exactly (:data:`STILL_NAMING`).

``python tests/test_architecture.py`` prints the sub-domain import graph (``-v``: every module pair).
"""

from __future__ import annotations

import ast
import functools
import io
import re
import sys
import tokenize
from collections import defaultdict
from pathlib import Path

import pytest

grimp = pytest.importorskip("grimp")

ROOT = Path(__file__).resolve().parents[1]
#: The product's apps, bottom to top: an app imports only apps below it. ``platforms`` holds one app per
#: crowd platform (``platforms.<name>``, :func:`_app`), all on its level.
APPS = ("genderbias", "core", "pooling", "annotation", "platforms", "metrics", "publishing")
#: The package whose every sub-package is an app (a crowd platform).
APP_FOLDERS = ("platforms",)
#: Above the apps and free to import anything.
TOP = ("benchmarks", "config")
ORDER = {app: rank for rank, app in enumerate((*APPS, "benchmarks"))}


def _rank(app: str) -> int | None:
    """An app's level in :data:`ORDER` (every platform's is ``platforms``'), or None (not ours)."""
    return ORDER.get(app.split(".")[0])


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
        "provider",
        "providers",
        "selectors",
        "serializers",
        "services",
        "tasks",
        "settings",  # a crowd platform's own settings, read from the environment (platforms/<name>/settings.py)
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
INNER = frozenset({"services", "selectors", "provider", "providers", "models"})
FRAMEWORKS = ("django", "rest_framework", "celery")
#: Folders of sub-domains: each package right under one is a sub-domain of its own, named with its
#: folder (``<app>/<folder>/<name>/`` is ``<folder>.<name>``; ``models/<name>.py`` is its models).
#: ``<folder>.*`` in :data:`SUB_DOMAIN_ORDER` places every one of them, a new one included. None
#: today: the crowd platforms, once such a folder of annotation, are apps (:data:`APP_FOLDERS`).
SUB_DOMAIN_FOLDERS: dict[str, tuple[str, ...]] = {}
#: An app's sub-domains, bottom to top, by level: a sub-domain imports only those on lower levels;
#: those of one level import none of each other. docs/architecture.md draws this order.
SUB_DOMAIN_ORDER = {
    "annotation": (
        ("crowd",),  # batches, HITs, publishing, sync, answers, the providers' interface: the kernel
        ("results",),  # what the answers add up to, a batch's state
        ("quality",),  # the quality loop: escalation, re-offers, thresholds, training, rulings
        ("machine",),  # machine labelling
        ("audit",),  # expert audit samples (the truth the PPI intervals rest on; their draw is the machine's sample)
        ("exports",),  # the labelled query sets' exports and the study's facts (publishing reads them)
        ("batches",),  # the researcher's batch pages and API, composing everything
    )
}
#: What a crowd platform (an app in :data:`APP_FOLDERS`) may import of ``annotation``: the modules of
#: these sub-domains (the kernel and the hooks' sub-domains, any module of them) and the app's modules
#: outside its sub-domains (its models but those of a sub-domain not listed, labels, accounts ...).
PLATFORM_INTERFACE = {"annotation": ("crowd", "results", "quality")}
#: The one place a platform still uses another's modules, each module imported named (a debt, kept
#: exact by the test: an entry no import needs any more fails it): Prolific participants work on
#: this site through the in-house hand-out and HIT page; Task Builder's client extends Prolific's (one
#: Prolific API below both platforms: each endpoint written once), its client, and its study runs in the
#: Prolific workspace, so it reads Prolific's connection (``platforms.prolific.connection.selectors``).
BETWEEN_PLATFORMS = {
    ("platforms.taskbuilder", "platforms.prolific.client"),
    ("platforms.taskbuilder", "platforms.prolific.connection.selectors"),
    ("platforms.prolific", "platforms.inhouse.services.handout"),
    ("platforms.prolific", "platforms.inhouse.services.hit_page"),
    ("platforms.prolific", "platforms.inhouse.views"),
    ("platforms.prolific", "platforms.inhouse.services.corrections"),
    ("platforms.taskbuilder", "platforms.prolific.provider"),
}
#: Imports of a platform's modules past its facades from an app above (a debt, kept exact: an entry no
#: import needs any more fails the test). None: the dashboard reads Prolific's warnings as a panel.
PAST_A_PLATFORMS_FACADES: set[tuple[str, str]] = set()
#: Imports from annotation up into a platform (a debt, kept exact: an entry no import needs any more
#: fails the test). Everything else annotation knows of a platform it reads from the registries the
#: platform fills as Django starts (annotation.crowd.providers.registry, hooks, the accounts' watch).
UP_INTO_PLATFORMS: set[tuple[str, str]] = set()


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
    """The app a module belongs to: its first name, or its first two under :data:`APP_FOLDERS`
    (``platforms.prolific``)."""
    names = module.split(".")
    return ".".join(names[:2]) if names[0] in APP_FOLDERS and len(names) > 1 else names[0]


def _ours(module: str, apps=APPS) -> bool:
    return module.split(".")[0] in apps and ".migrations" not in module


def _parts(module: str) -> list[str]:
    """The components of the module's path after its app's name."""
    return module.split(".")[len(_app(module).split(".")) :]


def _layers(module: str) -> set[str]:
    return set(_parts(module)) & LAYERS


def is_pure(module: str) -> bool:
    """A module of an app is pure iff no component of its path is a layer name."""
    return module.split(".")[0] in APPS and not _layers(module)


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
        "genderbias.errors",
        "genderbias.files.runs",
        "genderbias.labels",
        "genderbias.machine.routing_statistics",
        "annotation.machine.prelabellers.openai_chat",
        "genderbias.crowd.aggregation",
        "genderbias.ranking.rbo",
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
        "platforms.mturk.provider",
        "platforms.prolific.webhooks.selectors",
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


def imports_up(pairs, allowed=frozenset()) -> list[tuple[str, str]]:
    """The imports into an app above the importer's (:data:`ORDER`), but for those ``allowed``."""
    return [
        (importer, imported)
        for importer, imported in pairs
        if _rank(_app(imported)) is not None
        and _rank(_app(importer)) is not None
        and _rank(_app(imported)) > _rank(_app(importer))
        and (importer, imported) not in allowed
    ]


def test_no_app_imports_an_app_above_it(graph):
    wrong = imports_up(_direct(graph), UP_INTO_PLATFORMS)
    assert wrong == [], (
        "imports up the order core < pooling < annotation < platforms < metrics < publishing < benchmarks "
        "(annotation reaches a platform through the registries it fills at start-up):" + _listing(wrong)
    )


def test_the_imports_up_into_platforms_are_exactly_those_listed(graph):
    """:data:`UP_INTO_PLATFORMS` is a debt: an entry no import needs any more is struck off."""
    used = {pair for pair in _direct(graph) if pair in UP_INTO_PLATFORMS}
    assert used == UP_INTO_PLATFORMS, f"listed but not imported: {sorted(UP_INTO_PLATFORMS - used)}"


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
        if not _platform(importer)
        and _sub_domains(graph, _app(importer))
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


def _platform(module: str) -> bool:
    """Whether the module is a crowd platform's (an app under :data:`APP_FOLDERS`)."""
    return module.split(".")[0] in APP_FOLDERS and _app(module) != module.split(".")[0]


def test_another_app_is_reached_through_its_models_facades_or_pure_modules(graph):
    """A platform reaching annotation or another platform has rules of its own (below)."""
    wrong = [
        (importer, imported)
        for importer, imported in _direct(graph)
        if _ours(imported)
        and _app(imported) not in (_app(importer), "core")
        and not (_platform(importer) and (_platform(imported) or _app(imported) in PLATFORM_INTERFACE))
        and (importer, imported) not in PAST_A_PLATFORMS_FACADES
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


def test_no_test_imports_a_benchmark(graph):
    """What a test needs to build its world (a virtual annotator, batches, big files, the URL patterns,
    a reference oracle, the test servers) is test support under ``tests/``, which the benchmarks import;
    a test never imports a benchmark, function-level imports included."""
    found = {
        (importer, imported)
        for importer in graph.modules
        if _app(importer) == "tests"
        for imported in graph.find_modules_directly_imported_by(importer)
        if _app(imported) == "benchmarks"
    }
    assert sorted(found) == [], "tests importing benchmark code:" + _listing(sorted(found))


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


@functools.cache
def _sub_domains(graph, app: str) -> frozenset[str]:
    """The packages right under an app that are no layer: ``annotation.crowd``, ``annotation.machine`` …;
    under a folder of sub-domains (:data:`SUB_DOMAIN_FOLDERS`), each package: ``platforms.prolific`` …
    (Once per graph and app: the checks ask for each import, and the graph is not changed.)"""
    folders = SUB_DOMAIN_FOLDERS.get(app, ())
    found = set()
    for m in graph.modules:
        parts = _parts(m)
        if _app(m) != app or not graph.find_children(m):
            continue
        if len(parts) == 1 and parts[0] not in LAYERS and parts[0] not in folders:
            found.add(parts[0])
        elif len(parts) == 2 and parts[0] in folders and parts[1] not in LAYERS:
            found.add(".".join(parts))
    return frozenset(found)


def _sub_domain_names(graph, app: str) -> set[str]:
    """The last names of the sub-domains and their folders (``platforms``, ``prolific`` …)."""
    return {name.split(".")[-1] for name in _sub_domains(graph, app)} | set(SUB_DOMAIN_FOLDERS.get(app, ()))


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
        if name in LAYERS or name in _sub_domain_names(graph, _app(module)):
            continue
        by_name[(_app(module), name)].add(module)
    clashes = {frozenset(modules) for modules in by_name.values() if len({_layer_of(m) for m in modules}) > 1}
    assert clashes == set(), "modules of one app named alike in different layers:\n  " + "\n  ".join(
        sorted(", ".join(sorted(c)) for c in clashes)
    )


# --- an app's sub-domains and their order ----------------------------------------------------------


def sub_domain_of(module: str, sub_domains: set[str]) -> str | None:
    """The sub-domain ``module`` belongs to (``models/<sub-domain>`` is its sub-domain's, ``models/prolific``
    is ``platforms.prolific``'s), or None (app-level, a folder of sub-domains' own ``__init__``)."""
    parts = _parts(module)
    if parts and parts[0] in sub_domains:
        return parts[0]
    if len(parts) > 1 and ".".join(parts[:2]) in sub_domains:
        return ".".join(parts[:2])
    if len(parts) > 1 and parts[0] == "models":
        return next((name for name in sorted(sub_domains) if name.split(".")[-1] == parts[1]), None)
    return None


def sub_domain_imports(graph, app: str) -> dict[tuple[str, str], list[tuple[str, str]]]:
    """(importer's sub-domain, imported's) -> the module pairs behind it, function-level imports included
    (grimp reads every import statement of a module, in functions too)."""
    sub_domains = _sub_domains(graph, app)
    pairs: dict[tuple[str, str], list[tuple[str, str]]] = defaultdict(list)
    for importer in sorted(m for m in graph.modules if _app(m) == app and ".migrations" not in m):
        mine = sub_domain_of(importer, sub_domains)
        if mine is None:
            continue
        for imported in sorted(graph.find_modules_directly_imported_by(importer)):
            theirs = sub_domain_of(imported, sub_domains)
            if theirs is not None and theirs != mine:
                pairs[(mine, theirs)].append((importer, imported))
    return dict(pairs)


def both_ways(pairs) -> list[tuple[str, str]]:
    """The sub-domains that import each other (each pair once, sorted)."""
    return sorted({tuple(sorted(pair)) for pair in pairs if (pair[1], pair[0]) in pairs})


def _levels(order, sub_domains) -> dict[str, int]:
    """Each sub-domain's level in ``order``; ``<folder>.*`` places every sub-domain of that folder."""
    level = {}
    for rank, tier in enumerate(order):
        for placed in tier:
            if placed.endswith(".*"):
                level.update({s: rank for s in sub_domains if s.startswith(placed[:-1])})
            else:
                level[placed] = rank
    return level


def out_of_order(pairs, order, allowed=frozenset()) -> list[tuple[str, str]]:
    """The module imports into a sub-domain on the importer's level or above (unplaced ones count as wrong),
    but for those ``allowed`` (importer's sub-domain, imported module)."""
    level = _levels(order, {s for pair in pairs for s in pair})
    return sorted(
        (importer, imported)
        for (mine, theirs), module_pairs in pairs.items()
        if level.get(theirs, len(order)) >= level.get(mine, -1)
        for importer, imported in module_pairs
        if (mine, imported) not in allowed
    )


def outside_the_interface(pairs, folder: str, interface, allowed=frozenset()) -> list[tuple[str, str]]:
    """The module imports of a sub-domain in ``folder`` (a platform) into a sub-domain other than its own and
    ``interface`` (another platform, or one above them), but for those ``allowed``."""
    return sorted(
        (importer, imported)
        for (mine, theirs), module_pairs in pairs.items()
        if mine.startswith(f"{folder}.") and theirs not in interface
        for importer, imported in module_pairs
        if (mine, imported) not in allowed
    )


def _sub_domain_listing(pairs, verbose: bool = False) -> str:
    lines = []
    for (mine, theirs), module_pairs in sorted(pairs.items()):
        back = "  BOTH WAYS" if (theirs, mine) in pairs else ""
        lines.append(f"{mine:>12} -> {theirs:<12} {len(module_pairs):3} module pair(s){back}")
        if verbose:
            lines += [f"{'':16}{a} -> {b}" for a, b in module_pairs]
    return "\n".join(lines)


def test_the_order_places_every_sub_domain(graph):
    for app, order in SUB_DOMAIN_ORDER.items():
        placed = [sub_domain for tier in order for sub_domain in tier]
        assert len(placed) == len(set(placed)), f"{app}: a sub-domain placed twice in {order}"
        assert set(_levels(order, _sub_domains(graph, app))) == _sub_domains(graph, app), (
            f"{app}'s sub-domains {sorted(_sub_domains(graph, app))} are not exactly those SUB_DOMAIN_ORDER places "
            f"{sorted(placed)}: place a new one (docs/architecture.md draws the order)"
        )


def test_no_two_sub_domains_import_each_other(graph):
    for app in SUB_DOMAIN_ORDER:
        pairs = sub_domain_imports(graph, app)
        assert both_ways(pairs) == [], f"{app}'s sub-domains importing each other both ways:\n" + _sub_domain_listing(
            {p: v for p, v in pairs.items() if tuple(sorted(p)) in both_ways(pairs)}, verbose=True
        )


def test_sub_domains_keep_their_order(graph):
    for app, order in SUB_DOMAIN_ORDER.items():
        wrong = out_of_order(sub_domain_imports(graph, app), order)
        assert wrong == [], (
            f"{app}: imports into a sub-domain on the importer's level or above "
            f"({' < '.join('/'.join(tier) for tier in order)}):" + _listing(wrong)
        )


def test_crowd_the_kernel_imports_no_other_sub_domain(graph):
    """What the order implies, said on its own: crowd imports none of annotation's other sub-domains."""
    wrong = [
        pair
        for (mine, _), pairs in sub_domain_imports(graph, "annotation").items()
        if mine == "crowd"
        for pair in pairs
    ]
    assert wrong == [], (
        "crowd importing other sub-domains (register a hook: annotation.crowd.services.hooks):" + _listing(wrong)
    )


def past_the_platform_interface(graph, pairs, allowed=frozenset()) -> list[tuple[str, str]]:
    """The imports of a platform (an app under :data:`APP_FOLDERS`) into another platform (but for
    those ``allowed``: (importer's app, imported module)) or into a sub-domain of an app in
    :data:`PLATFORM_INTERFACE` that the interface does not name."""
    sub_domains = {app: _sub_domains(graph, app) for app in PLATFORM_INTERFACE}
    wrong = []
    for importer, imported in pairs:
        if not _platform(importer) or _app(imported) == _app(importer):
            continue
        if _platform(imported):
            if (_app(importer), imported) not in allowed:
                wrong.append((importer, imported))
        elif _app(imported) in PLATFORM_INTERFACE:
            theirs = sub_domain_of(imported, sub_domains[_app(imported)])
            if theirs is not None and theirs not in PLATFORM_INTERFACE[_app(imported)]:
                wrong.append((importer, imported))
    return sorted(wrong)


def test_a_platform_imports_only_the_interface(graph):
    """A platform (``platforms/<name>/``) imports annotation's kernel, results and quality (the hooks it
    plugs into), its models and app-level modules, never another platform or a sub-domain above:
    a platform is a plug-in, added and removed as a folder and its lines (docs/architecture.md)."""
    wrong = past_the_platform_interface(graph, _direct(graph), BETWEEN_PLATFORMS)
    assert wrong == [], "a platform importing past its interface:" + _listing(wrong)


def test_the_listed_debts_are_exactly_those_imported(graph):
    """:data:`BETWEEN_PLATFORMS` and :data:`PAST_A_PLATFORMS_FACADES` are debts: an entry no import needs
    any more is struck off."""
    pairs = list(_direct(graph))
    used = {
        (_app(importer), imported) for importer, imported in pairs if (_app(importer), imported) in BETWEEN_PLATFORMS
    }
    assert used == BETWEEN_PLATFORMS, f"listed but not imported: {sorted(BETWEEN_PLATFORMS - used)}"
    used = {pair for pair in pairs if pair in PAST_A_PLATFORMS_FACADES}
    assert used == PAST_A_PLATFORMS_FACADES, f"listed but not imported: {sorted(PAST_A_PLATFORMS_FACADES - used)}"


def _write_tree(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def test_the_sub_domain_checks_catch_a_backwards_import(tmp_path, monkeypatch):
    """A deliberately broken copy: a tiny app whose kernel imports a sub-domain above it inside a
    function (hidden from a reader of its first lines), and whose models run backwards too. The
    checks must name each offending import, and pass on the same app without them."""
    app = f"fake_app_{tmp_path.name.replace('-', '_')}"
    order = (("crowd",), ("quality",), ("batches",))
    good = {
        f"{app}/__init__.py": "",
        f"{app}/labels.py": "",
        f"{app}/models/__init__.py": "",
        f"{app}/models/crowd.py": f"from {app} import labels\n",
        f"{app}/models/quality.py": f"from {app}.models import crowd\n",
        f"{app}/crowd/__init__.py": "",
        f"{app}/crowd/services/__init__.py": "",
        f"{app}/crowd/services/sync.py": f"from {app}.models import crowd\n\ndef sync():\n    return crowd\n",
        f"{app}/quality/__init__.py": "",
        f"{app}/quality/loop.py": f"from {app}.crowd.services import sync\n",
        f"{app}/batches/__init__.py": "",
        f"{app}/batches/views.py": f"from {app}.quality import loop\nfrom {app}.crowd.services import sync\n",
    }
    broken = good | {
        # crowd reaching up inside a function, and crowd's models pointing at quality's
        f"{app}/crowd/services/sync.py": f"def sync():\n    from {app}.quality import loop\n\n    return loop\n",
        f"{app}/models/crowd.py": f"from {app}.models import quality\n",
    }
    monkeypatch.syspath_prepend(str(tmp_path))

    _write_tree(tmp_path, good)
    pairs = sub_domain_imports(grimp.build_graph(app, cache_dir=None), app)
    assert set(pairs) == {("quality", "crowd"), ("batches", "quality"), ("batches", "crowd")}
    assert both_ways(pairs) == [] and out_of_order(pairs, order) == []

    _write_tree(tmp_path, broken)
    pairs = sub_domain_imports(grimp.build_graph(app, cache_dir=None), app)
    assert both_ways(pairs) == [("crowd", "quality")]
    assert out_of_order(pairs, order) == [
        (f"{app}.crowd.services.sync", f"{app}.quality.loop"),
        (f"{app}.models.crowd", f"{app}.models.quality"),
    ]
    # a sub-domain the order does not place is out of order too, whichever way it imports
    assert out_of_order(pairs, (("crowd",), ("batches",))) != []


def test_the_platform_checks_catch_a_platform_importing_another(tmp_path, monkeypatch):
    """A deliberately broken copy for the platform rules: a tiny kernel app and a folder of two platform
    apps above it. The kernel importing a platform (inside a function), a platform importing the other,
    or a sub-domain of the kernel above the interface, is named; the same tree without them passes,
    and a platform added later is an app on the platforms' level with no new line."""
    tag = tmp_path.name.replace("-", "_")
    kernel, folder = f"fake_kernel_{tag}", f"fake_platforms_{tag}"
    monkeypatch.setattr(sys.modules[__name__], "APP_FOLDERS", (folder,))
    monkeypatch.setitem(ORDER, kernel, 0)
    monkeypatch.setitem(ORDER, folder, 1)
    monkeypatch.setattr(sys.modules[__name__], "PLATFORM_INTERFACE", {kernel: ("crowd", "quality")})
    good = {
        f"{kernel}/__init__.py": "",
        f"{kernel}/labels.py": "",
        f"{kernel}/models/__init__.py": "",
        f"{kernel}/models/crowd.py": "",
        f"{kernel}/crowd/__init__.py": "",
        f"{kernel}/crowd/registry.py": "PLATFORMS = {}\n",
        f"{kernel}/crowd/services.py": f"from {kernel}.models import crowd\n",
        f"{kernel}/quality/__init__.py": "",
        f"{kernel}/quality/services.py": f"from {kernel}.crowd import services\n",
        f"{kernel}/pages/__init__.py": "",
        f"{kernel}/pages/views.py": f"from {kernel}.crowd import registry\n",
        f"{folder}/__init__.py": "",
        f"{folder}/alpha/__init__.py": "",
        f"{folder}/alpha/apps.py": f"from {kernel}.crowd import registry\n",
        f"{folder}/alpha/provider.py": f"from {kernel}.crowd import services\nfrom {kernel} import labels\n",
        f"{folder}/beta/__init__.py": "",
        f"{folder}/beta/provider.py": f"from {kernel}.quality import services\nfrom {kernel}.models import crowd\n",
    }
    broken = good | {
        f"{kernel}/pages/views.py": f"def page():\n    from {folder}.alpha import provider\n",
        f"{folder}/alpha/provider.py": (
            f"from {kernel}.crowd import services\n\ndef f():\n    from {folder}.beta import provider\n"
        ),
        f"{folder}/beta/services.py": f"from {kernel}.pages import views\n",
    }
    monkeypatch.syspath_prepend(str(tmp_path))

    def pairs():
        graph = grimp.build_graph(kernel, folder, cache_dir=None)
        found = sorted(
            (importer, imported)
            for importer in graph.modules
            for imported in graph.find_modules_directly_imported_by(importer)
        )
        return graph, found

    _write_tree(tmp_path, good)
    graph, found = pairs()
    assert _app(f"{folder}.alpha.provider") == f"{folder}.alpha" and _parts(f"{folder}.alpha.provider") == ["provider"]
    assert imports_up(found) == [] and past_the_platform_interface(graph, found) == []

    _write_tree(tmp_path, broken)
    graph, found = pairs()
    assert imports_up(found) == [(f"{kernel}.pages.views", f"{folder}.alpha.provider")]
    expected = [
        (f"{folder}.alpha.provider", f"{folder}.beta.provider"),
        (f"{folder}.beta.services", f"{kernel}.pages.views"),
    ]
    assert past_the_platform_interface(graph, found) == expected
    # an import listed as allowed is let through, by the importer's platform and the module imported
    allowed = {(f"{folder}.alpha", f"{folder}.beta.provider")}
    assert past_the_platform_interface(graph, found, allowed) == expected[1:]
    # so is an upward import listed, and only that one
    assert imports_up(found, {(f"{kernel}.pages.views", f"{folder}.alpha.provider")}) == []

    # a third platform: a folder of its own, on the platforms' level without touching the order
    _write_tree(tmp_path, good | {f"{folder}/gamma/__init__.py": "", f"{folder}/gamma/provider.py": ""})
    graph, found = pairs()
    assert _rank(_app(f"{folder}.gamma.provider")) == 1 and imports_up(found) == []


# --- imports at the top ----------------------------------------------------------------------------

#: The project's own packages (``platforms`` once the crowd platforms leave ``annotation``).
OWN_PACKAGES = (*PRODUCT, "platforms")
#: The most function-level imports of the project's own modules the product may hold (406 on the day
#: this was counted, issue 55; 252 once pooling, metrics, core and publishing imported at the top what
#: start-up allows). The count only falls: lower this when you move imports to the top,
#: never raise it. An import that must stay in a function says why in one word, ``# start-up`` (it
#: would load a heavy library, :data:`core.startup.HEAVY_MODULES`, when Django starts, or close an
#: import circle at start-up), and is not counted.
FUNCTION_LEVEL_IMPORT_CEILING = 187


def function_level_imports(root: Path = ROOT) -> dict[str, list[int]]:
    """Per product file, the lines of its imports of the project's own modules (``core``, ``pooling`` …,
    or relative) made inside a function and not marked ``# start-up``."""

    found: dict[str, list[int]] = {}
    for package in OWN_PACKAGES:
        for path in sorted((root / package).rglob("*.py")) if (root / package).is_dir() else ():
            if "migrations" in path.parts:
                continue
            lazy = _lazy_lines(path.read_text(encoding="utf-8"))
            if lazy:
                found[path.relative_to(root).as_posix()] = lazy
    return found


def _lazy_lines(text: str) -> list[int]:
    """The lines of a module's unmarked function-level imports of our modules."""
    import ast

    lines = text.splitlines()
    lazy: list[int] = []

    def visit(node, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            lazy_import = in_function and isinstance(child, (ast.Import, ast.ImportFrom)) and _imports_ours(child)
            if lazy_import and not any("# start-up" in lines[n - 1] for n in range(child.lineno, child.end_lineno + 1)):
                lazy.append(child.lineno)
            visit(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

    visit(ast.parse(text), False)
    return lazy


def _imports_ours(node) -> bool:
    import ast

    if isinstance(node, ast.Import):
        return any(alias.name.split(".")[0] in OWN_PACKAGES for alias in node.names)
    return bool(node.level) or (node.module or "").split(".")[0] in OWN_PACKAGES


def test_function_level_imports_of_our_modules_only_fall():
    found = function_level_imports()
    count = sum(len(lines) for lines in found.values())
    worst = sorted(found.items(), key=lambda item: -len(item[1]))[:10]
    assert count <= FUNCTION_LEVEL_IMPORT_CEILING, (
        f"{count} function-level imports of the project's own modules, over the ceiling "
        f"{FUNCTION_LEVEL_IMPORT_CEILING}: import at the top, or mark one start-up needs with '# start-up'. "
        "Most: " + ", ".join(f"{path} ({len(lines)})" for path, lines in worst)
    )


def test_the_import_count_sees_function_level_imports_and_the_start_up_mark(tmp_path):
    """A deliberately lazy module: its function-level imports of our modules are counted (relative ones
    too), a marked one and those of other libraries are not, nor those at the top."""
    (tmp_path / "metrics").mkdir()
    (tmp_path / "metrics" / "lazy.py").write_text(
        "from core import errors\n"
        "import json\n\n\n"
        "def f():\n"
        "    from pooling import readers\n"
        "    import numpy\n"
        "    from . import plots\n"
        "    from metrics import ties  # start-up\n\n"
        "    def g():\n"
        "        import core.http\n"
        "    return lambda: __import__('x')\n",
        encoding="utf-8",
    )
    assert function_level_imports(tmp_path) == {"metrics/lazy.py": [6, 8, 12]}


if __name__ == "__main__":  # the sub-domain import graph, as the tests above compute it
    for app in SUB_DOMAIN_ORDER:
        print(f"{app}: {' < '.join('/'.join(tier) for tier in SUB_DOMAIN_ORDER[app])}")
        print(
            _sub_domain_listing(sub_domain_imports(_build(exclude_type_checking_imports=True), app), "-v" in sys.argv)
        )


# -- the kernel names no platform (issue 55) -------------------------------------------------------
#: The kernel: what every platform builds on. Its code names no platform; its docstrings and comments may
#: (``git grep -il "prolific\|mturk"`` over these finds documentation only).
KERNEL = ("core", "annotation/crowd", "annotation/quality", "annotation/machine")
#: Kernel files that still name a platform in code, each until its platform's part moves into the
#: platform's folder (a debt kept exact: an entry that names none any more fails the test, so delete it).
#: Prolific's connection kind, its settings and check (``core``), its bonus previews (``crowd``), and the
#: registry's lines until they are the platforms' INSTALLED_APPS lines.
STILL_NAMING: frozenset[str] = frozenset()
#: Names that are history, not a platform's knowledge: a migration's name, kept as it was written.
HISTORY = frozenset({'"0001_squashed_0019_prolific_groups_bonuses"'})


def platform_words() -> re.Pattern[str]:
    """The platforms' names, as code would name them: each external platform of the registry (its stored
    name, its label and short label, spaced or not), whatever the case."""
    from annotation.crowd.providers.registry import PLATFORMS

    words = set()
    for name in PLATFORMS:
        if name == "local":
            continue
        words.add(name)
        words.add(PLATFORM_LABELS.get(name, name))
    words |= {"mechanical turk", "task builder"}
    return re.compile("|".join(re.escape(w).replace(r"\ ", r"[ _]?") for w in sorted(words)), re.IGNORECASE)


#: What a platform is called besides its stored name (a label the registry's classes give it).
PLATFORM_LABELS = {"mturk": "mechanical turk", "taskbuilder": "task builder"}


def names_in_code(source: str, pattern: re.Pattern[str]) -> list[tuple[int, str]]:
    """``(line, text)`` of every name or string of ``source`` that matches ``pattern``, leaving out comments
    and documentation: docstrings and every other string standing alone as a statement (an attribute's)."""
    tree = ast.parse(source)
    documentation = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            documentation |= set(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    found = []
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type not in (tokenize.NAME, tokenize.STRING, getattr(tokenize, "FSTRING_MIDDLE", -1)):
            continue
        if token.type != tokenize.NAME and token.start[0] in documentation:
            continue
        if pattern.search(token.string) and token.string not in HISTORY:
            found.append((token.start[0], token.string))
    return found


def kernel_naming_platforms() -> dict[str, list[tuple[int, str]]]:
    pattern = platform_words()
    found = {}
    for folder in KERNEL:
        for path in sorted((ROOT / folder).rglob("*.py")):
            if "migrations" in path.parts:
                continue  # history: a migration keeps the names it was written with
            hits = names_in_code(path.read_text(encoding="utf-8"), pattern)
            if hits:
                found[path.relative_to(ROOT).as_posix()] = hits
    return found


def test_the_kernel_names_no_platform_in_code():
    """core, crowd, quality and machine ask the provider (``CrowdProvider``) what a platform does; they
    name no platform except in docstrings and comments."""
    found = kernel_naming_platforms()
    new = {path: hits for path, hits in found.items() if path not in STILL_NAMING}
    assert not new, "the kernel names a platform in code (ask its provider instead):\n" + "\n".join(
        f"  {path}:{line}: {text[:80]}" for path, hits in sorted(new.items()) for line, text in hits
    )
    cleared = sorted(STILL_NAMING - set(found))
    assert not cleared, f"these kernel files name no platform any more: delete them from STILL_NAMING: {cleared}"


def test_the_kernel_rule_tells_code_from_documentation():
    """The rule's reader: a docstring, an attribute's string and a comment may name a platform; a name,
    an argument, an f-string and a help text may not."""
    pattern = platform_words()
    source = '''\
"""Prolific and MTurk, in a docstring."""
# mturk in a comment
RATE = 1
"""An attribute docstring naming Task Builder."""
def f(batch):
    """Docstring: mturk."""
    if batch.provider == "mturk":
        return prolific_settings()
    raise ValueError(f"no {batch} on Mechanical Turk")
HELP = dict(help_text="see TaskBuilder")
'''
    assert [line for line, _ in names_in_code(source, pattern)] == [7, 8, 9, 10]


#: The platform's frameworks, which the library installs without (pyproject.toml's dependencies).
PLATFORM_PACKAGES = ("django", "rest_framework", "celery", "boto3", "botocore", "kombu")


#: pyproject.toml's extra for the library's own tests (pytest, the independent implementations they check
#: against): installed by bin/test's library stage, imported by no module of the library.
TEST_EXTRA = "test"


def _pins(requirements: list[str]) -> dict[str, str]:
    """``{normalised name: pinned version}`` of requirement lines (``name==version``, comments, extras)."""
    pins = {}
    for line in requirements:
        name, _, version = line.split("#")[0].strip().partition("==")
        if version:
            pins[re.sub(r"[-_.]+", "-", name.split("[")[0]).lower()] = version
    return pins


def _pyproject() -> dict:
    import tomllib

    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def _declared_dependencies() -> dict[str, str]:
    """pyproject.toml's dependencies and optional ones but the tests', ``{normalised name: pinned version}``."""
    project = _pyproject()
    declared = list(project["dependencies"])
    for name, extra in project.get("optional-dependencies", {}).items():
        if name != TEST_EXTRA:
            declared += extra
    return _pins(declared)


def test_the_library_imports_only_what_pyproject_declares(graph):
    """Every third-party package a module of ``genderbias`` imports (grimp: in functions too) is a
    dependency of pyproject.toml, each declared one is imported, each pinned as requirements.txt (or, for a
    package installed without its declared dependencies, requirements-no-deps.txt) pins it; and none of the
    platform's frameworks is reachable from the library."""
    from importlib.metadata import packages_distributions

    library = {m for m in graph.modules if m == "genderbias" or m.startswith("genderbias.")}
    imported = set()
    for module in library:
        for name in graph.find_modules_directly_imported_by(module):
            top = name.split(".")[0]
            if top not in APPS and top not in sys.stdlib_module_names and top != "tests":
                imported.add(top)
    distributions = packages_distributions()
    used = {re.sub(r"[-_.]+", "-", distributions[top][0]).lower() for top in imported}
    declared = _declared_dependencies()
    # ir_measures computes nDCG and its kin through pytrec_eval: declared beside it, imported by it
    assert used | {"pytrec-eval-terrier"} == set(declared), (used, set(declared))
    pinned = _pins([*(ROOT / "requirements.txt").read_text().splitlines(),
                    *(ROOT / "requirements-no-deps.txt").read_text().splitlines()])  # fmt: skip
    assert {name: pinned.get(name) for name in declared} == declared
    reached = [
        " -> ".join(chain)
        for framework in PLATFORM_PACKAGES
        if framework in graph.modules
        for module in library
        if (chain := graph.find_shortest_chain(importer=module, imported=framework)) is not None
    ]
    assert reached == []


def test_the_library_tests_extra_is_pinned_as_the_platform_venv():
    """pyproject.toml's ``test`` extra (bin/test's library stage) pins each package as requirements-dev.txt and
    requirements.txt pin it for the platform's venv: the library's tests run on the same versions in both."""
    extra = _pins(_pyproject()["optional-dependencies"][TEST_EXTRA])
    pinned = _pins([*(ROOT / "requirements.txt").read_text().splitlines(),
                    *(ROOT / "requirements-dev.txt").read_text().splitlines()])  # fmt: skip
    assert {name: pinned.get(name) for name in extra} == extra


def _top_level_imports(module: str) -> set[str]:
    """What a module of the checkout imports at its top level (read with ``ast``; not inside functions)."""
    path = ROOT / (module.replace(".", "/") + ".py")
    if not path.exists():
        path = ROOT / module.replace(".", "/") / "__init__.py"
    found = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
    return found


def test_the_library_tests_import_no_django_and_no_app(graph):
    """The library's tests (``tests/genderbias``) run in a venv with the library alone (bin/test's library
    stage): none of their modules imports Django, DRF, Celery or an app, even inside a function; what they
    import from the rest of ``tests/`` (``tests/conftest.py``'s ``reference_dir``, whose Django is inside its
    fixtures) imports none of them at its top level, nor another such module that does."""

    def platform(module: str) -> bool:
        top = module.split(".")[0]
        return top in PLATFORM_PACKAGES or (top in PRODUCT and top != "genderbias")

    library_tests = {m for m in graph.modules if m == "tests.genderbias" or m.startswith("tests.genderbias.")}
    wrong = []
    support = []
    for module in sorted(library_tests):
        for imported in sorted(graph.find_modules_directly_imported_by(module)):
            if platform(imported):
                wrong.append((module, imported))
            elif imported.split(".")[0] == "tests" and imported not in library_tests:
                support.append(imported)
    seen = set()
    while support:
        module = support.pop()
        if module in seen:
            continue
        seen.add(module)
        for imported in sorted(_top_level_imports(module)):
            if platform(imported):
                wrong.append((module, imported))
            elif imported.split(".")[0] == "tests" and imported not in library_tests:
                support.append(imported)
    assert wrong == [], "the library's tests reaching Django or an app:" + _listing(wrong)


#: The most lines a module of the library may have. Issue 65 asks for "no file of the library over about
#: 400 lines": a module that grows past that is doing more than one job (the crowd model grew to 804 lines
#: and five jobs in a day). 450 leaves a module at about 400 room for a fix without a split, and fails
#: one that has grown a second job; the cure is a split by job, never in halves.
MAX_LIBRARY_LINES = 450


def test_no_library_file_exceeds_the_bound():
    """No module of ``genderbias/`` has more than :data:`MAX_LIBRARY_LINES` lines (see there why)."""
    long = {
        str(path.relative_to(ROOT)): lines
        for path in sorted((ROOT / "genderbias").rglob("*.py"))
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LIBRARY_LINES
    }
    assert long == {}, f"library modules over {MAX_LIBRARY_LINES} lines (split them by job): {long}"


#: The computing libraries: statistics, agreement, effectiveness, machine learning. Only the library
#: (``genderbias``) imports them: an app that needs a figure calls the library's one function for it.
COMPUTING_PACKAGES = ("scipy", "krippendorff", "ir_measures", "sklearn", "statsmodels")
#: The app modules that still import one, each named with the package and why it must stay (exact: a
#: module that stops needing it fails the test until it is taken off the list).
COMPUTING_ALLOWED = {
    # A prelabeller (the machine the platform runs, like the LLM prelabellers): it fits its TF-IDF and
    # logistic regression and cross-validates them. scikit-learn is the platform's dependency
    # (requirements.txt), not the library's (pyproject.toml): the library installs without it.
    ("annotation.machine.prelabellers.trained", "sklearn"),
}
#: The app modules that import numpy, each with why (exact, as above). numpy in an app builds arrays for
#: the library or draws data; arithmetic on results (means, intervals, shares) is the library's.
NUMPY_ALLOWED = {
    # The synthetic collection, runs and qrels of the demo and the benchmarks: draws data, computes no figure.
    "pooling.synthetic",
    # The prelabeller above: the folds' scores, NaN for a fold that could not be fitted.
    "annotation.machine.prelabellers.trained",
    # Routing's plan and audit: the stages' confidences and labels as the [stage × query] arrays the
    # library's routing statistics take (genderbias.machine.*), filled from the database.
    "annotation.machine.services.routing.plan",
    "annotation.machine.services.routing.audit",
}


def _app_imports(graph, package: str) -> set[str]:
    """The modules of the apps (not the library, not the migrations) importing ``package`` directly."""
    return {
        module
        for module in graph.modules
        if _ours(module, (*(app for app in APPS if app != "genderbias"), "config"))
        and package in graph.find_modules_directly_imported_by(module)
    }


def test_the_apps_import_no_computing_package(graph):
    """The apps compute nothing the library computes: none imports scipy, krippendorff, ir_measures,
    scikit-learn or statsmodels (function-level imports included), but for :data:`COMPUTING_ALLOWED`."""
    found = {
        (module, package)
        for package in COMPUTING_PACKAGES
        if package in graph.modules
        for module in _app_imports(graph, package)
    }
    assert found == COMPUTING_ALLOWED, (
        "apps importing a computing package (call the library instead):"
        + _listing(sorted(found - COMPUTING_ALLOWED))
        + "\nlisted but no longer importing it (take it off COMPUTING_ALLOWED):"
        + _listing(sorted(COMPUTING_ALLOWED - found))
    )


def test_the_apps_use_numpy_only_where_listed(graph):
    """numpy in an app only where :data:`NUMPY_ALLOWED` says why; pandas and polars stay free, the frames
    the apps read files and the database into and hand the library."""
    found = _app_imports(graph, "numpy")
    assert found == NUMPY_ALLOWED, (
        "apps importing numpy (a figure belongs in the library):"
        + _listing(sorted((m, "numpy") for m in found - NUMPY_ALLOWED))
        + "\nlisted but no longer importing it:"
        + _listing(sorted((m, "numpy") for m in NUMPY_ALLOWED - found))
    )
