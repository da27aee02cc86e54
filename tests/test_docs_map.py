"""docs/architecture.md's map cannot go stale: every module, command and background job is in it,
and everything it names exists.

The doc names

- a module by its path from the checkout, in backticks: `` `genderbias/machine/routing_statistics.py` ``
  (every ``.py`` file of ``genderbias``, ``core``, ``pooling``, ``annotation``, ``platforms``, ``metrics``, ``publishing`` and ``benchmarks`` but
  ``__init__.py``, ``apps.py``, migrations and the commands themselves);
- a command as `` `manage.py NAME` `` (every module of a ``management/commands/`` folder not
  starting with ``_``);
- a background job by its kind in the first column of the table under the heading
  "Background jobs" (every kind of :func:`core.jobs.declared_jobs`, and no other);
- an object by its dotted name (`` `annotation.crowd.services.locking` ``,
  `` `core.jobs.sweeper` ``, `` `annotation.selectors.batch_state` ``): its module must exist and
  the rest be attributes of it (a job's kind, such as ``annotation.publish``, and its Celery
  task's historic name, such as ``annotation.tasks.publish_batch_task``, are names, not modules).
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "architecture.md"
MAPPED = ("genderbias", "core", "pooling", "annotation", "platforms", "metrics", "publishing", "benchmarks")
TOP_LEVEL = (*MAPPED, "config", "tests")


BACKTICKED = re.compile(r"`([^`\n]+)`")
PATH = re.compile(rf"^(?:{'|'.join(TOP_LEVEL)})/[\w/]+\.py$")
DOTTED = re.compile(rf"^(?:{'|'.join((*MAPPED, 'config'))})(?:\.\w+)+$")
COMMAND = re.compile(r"^manage\.py (\w+)")


def _doc() -> str:
    return DOC.read_text(encoding="utf-8")


def _tokens() -> set[str]:
    return set(BACKTICKED.findall(_doc()))


def _modules() -> set[str]:
    found = set()
    for app in MAPPED:
        for path in (ROOT / app).rglob("*.py"):
            rel = path.relative_to(ROOT).as_posix()
            parts = rel.split("/")
            if path.name in ("__init__.py", "apps.py") or "migrations" in parts:
                continue
            if parts[-2] == "commands" and not path.name.startswith("_"):
                continue  # a command: named as ``manage.py NAME``
            found.add(rel)
    return found


def _commands() -> set[str]:
    return {
        path.stem
        for app in MAPPED
        for path in (ROOT / app).glob("**/management/commands/*.py")
        if not path.name.startswith("_")
    }


def _job_kinds_in_doc() -> set[str]:
    """First cells of the table under the heading "Background jobs"."""
    section = re.search(r"^#+ [^\n]*Background jobs[^\n]*\n(.*?)(?=^#)", _doc() + "\n#", re.M | re.S)
    assert section, "docs/architecture.md has no section headed 'Background jobs'"
    kinds = set()
    for line in section.group(1).splitlines():
        cell = re.match(r"^\|\s*`([^`]+)`\s*\|", line)
        if cell:
            kinds.add(cell.group(1))
    return kinds


def test_every_module_is_on_the_map():
    named = {t for t in _tokens() if PATH.match(t)}
    missing = sorted(_modules() - named)
    assert missing == [], "modules docs/architecture.md does not name (as `path/to/module.py`):\n  " + "\n  ".join(
        missing
    )


def test_every_command_is_on_the_map():
    named = {m.group(1) for t in _tokens() if (m := COMMAND.match(t))}
    missing = sorted(_commands() - named)
    assert missing == [], "commands docs/architecture.md does not name (as `manage.py NAME`):\n  " + "\n  ".join(
        missing
    )


def test_every_job_kind_is_on_the_map_and_no_other():
    from core.jobs import declared_jobs

    declared = set(declared_jobs())
    listed = _job_kinds_in_doc()
    missing, stale = sorted(declared - listed), sorted(listed - declared)
    assert (missing, stale) == ([], []), (
        f"the doc's 'Background jobs' table lacks the declared kinds {missing} and lists undeclared kinds {stale}"
    )


def test_every_path_the_map_names_exists():
    stale = sorted(t for t in _tokens() if PATH.match(t) and not (ROOT / t).is_file())
    assert stale == [], "paths docs/architecture.md names that do not exist:\n  " + "\n  ".join(stale)


def test_every_command_the_map_names_exists():
    from django.core.management import get_commands

    known = set(get_commands())
    stale = sorted({m.group(1) for t in _tokens() if (m := COMMAND.match(t))} - known)
    assert stale == [], "commands docs/architecture.md names that do not exist:\n  " + "\n  ".join(stale)


def _module_path(dotted: str) -> Path | None:
    base = ROOT.joinpath(*dotted.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _stale_dotted(token: str, names: set[str]) -> str | None:
    """Why a dotted name is stale, or None: its longest module prefix must exist and the rest be attributes."""
    if token in names:
        return None
    parts = token.split(".")
    for cut in range(len(parts), 0, -1):
        path = _module_path(".".join(parts[:cut]))
        if path is None:
            continue
        if cut == 1:
            return f"{token}: no module {'.'.join(parts[:2])}"
        obj = importlib.import_module(".".join(parts[:cut]))
        for attribute in parts[cut:]:
            if not hasattr(obj, attribute):
                return f"{token}: {'.'.join(parts[:cut])} has no {'.'.join(parts[cut:])}"
            obj = getattr(obj, attribute)
        return None
    return f"{token}: no such module"


def test_every_dotted_name_the_map_names_exists():
    from core.jobs import declared_jobs

    # A job's kind and its task's historic name are names, not modules.
    names = {declaration.task for declaration in declared_jobs().values()} | set(declared_jobs())
    stale = sorted(filter(None, (_stale_dotted(t, names) for t in _tokens() if DOTTED.match(t))))
    assert stale == [], "dotted names docs/architecture.md names that do not exist:\n  " + "\n  ".join(stale)
