"""The removal test (issue 55): an external crowd platform is a folder that can go.

For each external platform (MTurk, Prolific, Task Builder; the in-house platform is the product's
own), a copy of the tree is made without that platform -- its folder, its registry line, its tests
and whatever of it still lives outside its folder -- and in that copy, as a maintainer would find it:

1. every module of the product and of ``benchmarks`` imports (Django set up);
2. ``manage.py check`` and ``manage.py makemigrations --check --dry-run`` pass (no model change);
3. the kernel's fast tests and the other platforms' pass (:data:`KERNEL_TESTS` and each remaining
   platform's ``quick_tests``): the kernel works without the platform.

A platform another is built on (Task Builder studies are Prolific studies, through Prolific's client)
goes with it: removing Prolific removes Task Builder too.

The layout is read from :data:`EXTERNAL` alone: when the platforms become top-level apps
(``platforms/<name>/`` and an ``INSTALLED_APPS`` line each), only that table changes.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Platform:
    """What removing an external platform deletes, and how the rest is tested without it."""

    #: The platform's folder.
    folder: str
    #: Its registry line (its INSTALLED_APPS line) and its URL includes: each the file and the line's text
    #: (stripped) removed from it.
    registry: tuple[tuple[str, str], ...]
    #: Its tests (folders or files).
    tests: tuple[str, ...]
    #: Its files still outside its folder (a debt: each moves into the folder in time).
    elsewhere: tuple[str, ...] = ()
    #: Platforms it is built on: removing one of them removes this one too.
    built_on: tuple[str, ...] = ()
    #: Its fast tests, run when another platform is removed.
    quick_tests: tuple[str, ...] = ()
    #: Why removing it still fails today (the test is then expected to fail, strictly: it is told when it passes).
    not_yet: str = ""


REGISTRY = "config/settings.py"  # a platform is an INSTALLED_APPS line
URLS = "config/urls.py"  # and its URL includes

#: The external platforms: the one table the test reads.
EXTERNAL: dict[str, Platform] = {
    "mturk": Platform(
        folder="platforms/mturk",
        registry=((REGISTRY, '"platforms.mturk",'),),
        tests=("tests/platforms/mturk", "tests/annotation/quality/test_quality_loop_mturk.py"),
        quick_tests=(
            "tests/platforms/mturk/test_prices.py",
            "tests/platforms/mturk/test_question_xml.py",
        ),
    ),
    "prolific": Platform(
        folder="platforms/prolific",
        registry=(
            (REGISTRY, '"platforms.prolific",'),
            (URLS, 'path("", include("platforms.prolific.urls")),'),
            (URLS, 'path("", include("platforms.prolific.api_urls")),'),
        ),
        tests=("tests/platforms/prolific", "tests/annotation/quality/test_quality_loop_prolific.py"),
        elsewhere=("benchmarks/burst.py",),  # its launch-burst benchmark (benchmark_load --burst)
        quick_tests=("tests/platforms/prolific/test_prices.py",),
    ),
    "taskbuilder": Platform(
        folder="platforms/taskbuilder",
        registry=((REGISTRY, '"platforms.taskbuilder",'),),
        tests=("tests/platforms/taskbuilder",),
        built_on=("prolific",),
        quick_tests=("tests/platforms/taskbuilder/test_taskbuilder.py",),
    ),
}

#: The kernel's fast tests that show it works without any one external platform (each uses in-house
#: batches or the toy platform of tests/annotation/toy_platform.py).
KERNEL_TESTS = (
    "tests/annotation/crowd/test_costs.py",
    "tests/annotation/crowd/test_hooks.py",
    "tests/annotation/crowd/test_site_batches.py",
    "tests/annotation/quality/test_training.py",
    "tests/platforms/inhouse/test_local_provider.py",
    "tests/core/test_lazy_registry.py",
)

#: What of the checkout the copy holds (no .git, no virtualenv, no var/).
COPIED = (
    "annotation",
    "benchmarks",
    "genderbias",
    "config",
    "core",
    "metrics",
    "platforms",
    "pooling",
    "publishing",
    "static",
    "templates",
    "tests",
    "manage.py",
    "pyproject.toml",
)

#: Imports every module of the product and of benchmarks, then Django's checks; prints what failed.
IMPORT_EVERYTHING = """
import importlib, sys
from pathlib import Path
import tests.pytest_environment  # noqa: F401 (what a deployment sets)
import django
django.setup()
failed = []
for top in ("genderbias", "config", "core", "pooling", "annotation", "platforms", "metrics", "publishing", "benchmarks"):
    for path in sorted(Path(top).rglob("*.py")):
        name = ".".join(path.with_suffix("").parts).removesuffix(".__init__")
        try:
            importlib.import_module(name)
        except Exception as exc:
            failed.append(f"{name}: {type(exc).__name__}: {exc}")
print(len(failed), "modules failed to import")
print("\\n".join(failed))
if failed:
    sys.exit(1)
from django.core.management import call_command
call_command("check")
call_command("makemigrations", check=True, dry_run=True, verbosity=0)
"""


def removed_with(name: str) -> list[str]:
    """``name`` and every platform built on it (and on those), in :data:`EXTERNAL`'s order."""
    gone = {name}
    while True:
        more = {other for other, p in EXTERNAL.items() if set(p.built_on) & gone} - gone
        if not more:
            return [other for other in EXTERNAL if other in gone]
        gone |= more


def copy_without(target: Path, names: list[str]) -> None:
    """The checkout copied to ``target`` without the platforms ``names``: folder, tests, files elsewhere
    and registry line each (a missing line or path fails: the table is out of date)."""
    for part in COPIED:
        source = ROOT / part
        if source.is_dir():
            shutil.copytree(source, target / part, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(source, target / part)
    for name in names:
        platform = EXTERNAL[name]
        for part in (platform.folder, *platform.tests, *platform.elsewhere):
            path = target / part
            assert path.exists(), f"{name}: {part} is not in the checkout (update EXTERNAL)"
            shutil.rmtree(path) if path.is_dir() else path.unlink()
        for registry, line in platform.registry:
            path = target / registry
            lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
            kept = [text for text in lines if text.strip() != line]
            assert len(kept) == len(lines) - 1, f"{name}: its registry line {line!r} is not in {registry}"
            path.write_text("".join(kept), encoding="utf-8")


def run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """``args`` run with this Python in ``cwd``, on an SQLite database of its own there."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "DATABASE_URL", "DJANGO_SETTINGS"))}
    env |= {"VAR_DIR": str(cwd / "var"), "DJANGO_SETTINGS_MODULE": "config.settings", "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


def _cases() -> list:
    return [
        pytest.param(name, marks=[pytest.mark.xfail(reason=p.not_yet, strict=True)] if p.not_yet else [], id=name)
        for name, p in EXTERNAL.items()
    ]


@pytest.mark.slow
@pytest.mark.embedded
@pytest.mark.parametrize("name", _cases())
def test_the_product_works_without_the_platform(name, tmp_path):
    gone = removed_with(name)
    tree = tmp_path / "tree"
    copy_without(tree, gone)

    imported = run(["-c", IMPORT_EVERYTHING], tree)
    assert imported.returncode == 0, f"without {', '.join(gone)}:\n{imported.stdout[-4000:]}{imported.stderr[-4000:]}"

    remaining = [t for other, p in EXTERNAL.items() if other not in gone for t in p.quick_tests]
    tests = [*KERNEL_TESTS, *remaining]
    passed = run(["-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "not slow and not browser", *tests], tree)
    assert passed.returncode == 0, f"without {', '.join(gone)}:\n{passed.stdout[-6000:]}{passed.stderr[-2000:]}"


def test_the_table_names_what_is_in_the_checkout():
    """Every path and registry line of :data:`EXTERNAL` exists (so a move that forgets the table fails
    here, at once, and not only in the slow test), every quick and kernel test too, and the
    table's platforms are the registry's, the in-house one aside."""
    from annotation.crowd.providers.registry import PLATFORMS

    assert set(EXTERNAL) == set(PLATFORMS) - {"local"}
    for name, platform in EXTERNAL.items():
        for part in (platform.folder, *platform.tests, *platform.elsewhere, *platform.quick_tests):
            assert (ROOT / part).exists(), f"{name}: {part}"
        for registry, line in platform.registry:
            assert line in [text.strip() for text in (ROOT / registry).read_text(encoding="utf-8").splitlines()]
        assert set(platform.built_on) <= set(EXTERNAL)
    for part in KERNEL_TESTS:
        assert (ROOT / part).exists(), part
    assert removed_with("prolific") == ["prolific", "taskbuilder"] and removed_with("mturk") == ["mturk"]
