"""Each background job is declared once (core.jobs.background_job), in its app's services.

Services start jobs without importing their app's tasks module (no import cycle
services <-> tasks), the kinds and task names that existing Job rows hold stay what they
were, and every declaration has its Celery task.
"""

import ast
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from config.celery import app
from core.jobs import background_job, declared_jobs
from core.tasks import task_for

ROOT = Path(__file__).resolve().parents[3]
APPS = ("core", "pooling", "annotation", "metrics", "publishing")

#: Kind -> Celery task name, as Job rows record them: neither may change.
RECORDED = {
    "annotation.publish": "annotation.tasks.publish_batch_task",
    "annotation.sync": "annotation.tasks.sync_batch_task",
    "annotation.escalate": "annotation.tasks.escalate_batch_task",
    "annotation.pay_bonuses": "annotation.tasks.pay_bonuses_task",
    "annotation.prelabel": "annotation.tasks.prelabel_task",
    "annotation.calibration_report": "annotation.tasks.calibration_report_task",
    "annotation.prolific.resync": "annotation.tasks.prolific_resync_task",
    "annotation.prolific.rehearse": "annotation.tasks.prolific_rehearse_task",
    "pool": "pooling.tasks.build_pool_task",
    "import": "pooling.tasks.import_task",
    "report": "metrics.tasks.build_report_task",
    "label-sensitivity": "metrics.tasks.label_sensitivity_task",
    "metrics.crbo": "metrics.tasks.crbo_task",
    "genderbias.stats.preference": "metrics.tasks.preference_task",
    "genderbias.ranking.counterfactual": "metrics.tasks.counterfactual_collection_task",
    "metrics.paper": "metrics.tasks.paper_bundle_task",
    "metrics.per_query_csv": "metrics.tasks.per_query_csv_task",
    "core.test_connection": "core.tasks.test_connection_task",
    "import.named_set": "pooling.tasks.named_set_task",
    "metrics.compare_sets": "metrics.tasks.compare_sets_task",
}


def _imported_modules(path: Path, package: str) -> set[str]:
    """Every module ``path`` imports, at its top or inside a function, as absolute names."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            names.add(module)
            names.update(f"{module}.{alias.name}" for alias in node.names)
    return names


@pytest.mark.parametrize("app_name", APPS)
def test_no_service_imports_its_apps_tasks_module(app_name):
    services = ROOT / app_name / "services"
    files = sorted(services.rglob("*.py")) if services.is_dir() else [ROOT / app_name / "services.py"]
    for path in (f for f in files if f.exists()):
        package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
        imported = _imported_modules(path, package)
        assert not {f"{app}.tasks" for app in APPS[1:]} & imported, f"{path.relative_to(ROOT)} imports a tasks module"


def test_the_import_graph_has_no_path_from_services_to_tasks():
    grimp = pytest.importorskip("grimp")
    graph = grimp.build_graph(*APPS, include_external_packages=False, cache_dir=None)
    for app_name in APPS[1:]:
        if f"{app_name}.tasks" not in graph.modules:
            continue
        for module in graph.find_descendants(f"{app_name}.services") | {f"{app_name}.services"}:
            assert graph.find_shortest_chain(importer=module, imported=f"{app_name}.tasks") is None, module


def test_every_kind_is_declared_once_with_the_name_its_rows_record_and_a_registered_task():
    declared = declared_jobs()
    assert {kind: job.task for kind, job in declared.items()} == RECORDED
    for kind, job in declared.items():
        assert job.kind == kind
        assert "services" in job.work.__module__.split(".")[1:], job.work.__module__
        task = task_for(kind)
        assert task.name == job.task and app.tasks[job.task] is task


def test_a_kind_or_task_name_declared_twice_is_refused():
    def other(job):
        pass

    with pytest.raises(ImproperlyConfigured, match=r"annotation\.publish"):
        background_job("annotation.publish", task="somewhere.else")(other)
    with pytest.raises(ImproperlyConfigured, match=r"pooling\.tasks\.build_pool_task"):
        background_job("new-kind", task="pooling.tasks.build_pool_task")(other)
    assert "new-kind" not in declared_jobs()


def test_a_job_without_a_task_name_is_refused():
    """Job rows record the task's name, so it is declared, never derived from a module path that moves."""
    with pytest.raises(ImproperlyConfigured, match=r"'unnamed-kind' needs a task name"):
        background_job("unnamed-kind", task="")(lambda job: None)
    assert "unnamed-kind" not in declared_jobs()


def test_the_declarations_make_no_import_circle_in_core_even_through_type_checking_imports():
    """``core.jobs.registry`` imports neither ``core.jobs`` nor ``core.tasks``; no circle among core's modules."""
    grimp = pytest.importorskip("grimp")
    graph = grimp.build_graph(
        "core", include_external_packages=False, exclude_type_checking_imports=False, cache_dir=None
    )
    assert graph.find_modules_directly_imported_by("core.jobs.registry") & {"core.jobs", "core.tasks"} == set()
    for module in sorted(m for m in graph.modules if ".migrations" not in m):
        for imported in graph.find_modules_directly_imported_by(module):
            back = graph.find_shortest_chain(importer=imported, imported=module)
            assert back is None, f"{module} -> {' -> '.join(back)}"
