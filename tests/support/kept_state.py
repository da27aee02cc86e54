"""Rows a test module's tests share, built once for the module; each test runs in a savepoint of them.

Django's ``TestCase.setUpTestData`` for pytest fixtures. ``kept("world", build)`` declares two fixtures:
``_kept_world`` (module scope) opens a transaction and builds the rows once; ``world`` (function scope)
hands each test a deep copy of what the build returned (as ``setUpTestData`` does) and a copy of the
files it cached. pytest-django's own transaction for the test is then a savepoint inside the kept one,
rolled back after the test, so every test starts from the same rows, and the module's rollback leaves the
database as it found it.

What a test sees is what it asked for, never more: before each test (:func:`before_test`, run by
``pytest_runtest_setup``) the kept rows it does not use are rolled back, and those it uses are built
again if an earlier test made them roll back. A test on a transactional database (a live server,
``transaction=True``) cannot run inside a transaction: every kept transaction is rolled back first, and its
fixture builds the rows afresh in the test's own database, as a function-scoped fixture does.
"""

from __future__ import annotations

import copy
import inspect
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

#: The kept states of the module being run, parents before their children.
_KEPT: list[Keeper] = []
#: Those open, in the order their transactions (savepoints) were opened: only the last can end.
_OPEN: list[Keeper] = []
#: The test being set up: whether it is transactional, and the settings its builds run under.
_CURRENT: dict[str, Any] = {"transactional": True, "settings": {}}

_TRANSACTIONAL_FIXTURES = {
    "transactional_db",
    "live_server",
    "django_db_reset_sequences",
    "django_db_serialized_rollback",
}


def transactional(item: pytest.Item) -> bool:
    """Whether pytest-django runs ``item`` on a transactional database (its rule, in _django_db_helper)."""
    marker = item.get_closest_marker("django_db")
    if marker is not None and (marker.kwargs.get("transaction") or marker.kwargs.get("reset_sequences")):
        return True
    return bool(_TRANSACTIONAL_FIXTURES & set(getattr(item, "fixturenames", ())))


def before_test(item: pytest.Item, settings: dict[str, Any]) -> None:
    """Roll back the kept rows ``item`` does not use and build again those it uses."""
    _CURRENT.update(transactional=transactional(item), settings=settings)
    names = set(getattr(item, "fixturenames", ()))
    if (
        not _CURRENT["transactional"]
        and item.get_closest_marker("django_db") is None
        and "_django_db_helper" not in names
    ):
        return  # a test without the database: what it cannot read cannot change what it sees
    wanted: set[int] = set()
    if not _CURRENT["transactional"]:
        for keeper in _KEPT:
            if keeper.name in names:
                wanted.update(id(k) for k in keeper.lineage())
    unwanted = [keeper for keeper in _OPEN if id(keeper) not in wanted or keeper.stale]
    if unwanted:
        _release_down_to(unwanted[0])
    for keeper in _KEPT:
        if not keeper.is_open and id(keeper) in wanted and all(parent.is_open for parent in keeper.parents):
            keeper.open()


def _release_down_to(keeper: Keeper) -> None:
    """Roll back ``keeper`` and every savepoint opened after it (they are nested in it), the last first."""
    while keeper.is_open:
        _OPEN[-1].release()


@dataclass
class Keeper:
    """One kept state: its build, its transaction (a savepoint under its parents') and its files."""

    name: str
    build: Callable[[Path], Any]
    folder: Path
    blocker: Any
    parents: tuple[Keeper, ...] = ()
    value: Any = None
    #: A test changed the files the rows name: the rows are built again before the next test that uses them.
    stale: bool = False
    _atomic: Any = field(default=None, repr=False)
    _files: dict[Path, tuple[int, int]] = field(default_factory=dict, repr=False)

    @property
    def is_open(self) -> bool:
        return self._atomic is not None

    @property
    def cache(self) -> Path:
        return self.folder / "cache"

    def lineage(self) -> list[Keeper]:
        return [self, *(keeper for parent in self.parents for keeper in parent.lineage())]

    def open(self) -> None:
        from django.db import transaction
        from django.test import override_settings

        shutil.rmtree(self.folder, ignore_errors=True)  # what earlier tests left there too
        self.folder.mkdir(parents=True)
        self.cache.mkdir()
        for parent in self.parents:
            shutil.copytree(parent.cache, self.cache, dirs_exist_ok=True)
        with self.blocker.unblock():
            self._atomic = transaction.atomic()
            self._atomic.__enter__()
            _OPEN.append(self)
            try:
                with override_settings(**_CURRENT["settings"], CACHE_DIR=self.cache):
                    self.value = self.build(self.folder)
            except BaseException:
                self.release()
                raise
        self._files = self._stat()

    def _stat(self) -> dict[Path, tuple[int, int]]:
        return {
            path: (path.stat().st_size, path.stat().st_mtime_ns)
            for path in self.folder.rglob("*")
            if path.is_file() and self.cache not in path.parents
        }

    def changed_files(self) -> list[Path]:
        """The files the build wrote that a test has since changed or removed (a new file is no change)."""
        now = self._stat()
        return sorted(path for path, stat in self._files.items() if now.get(path) != stat)

    def release(self) -> None:
        from django.db import transaction

        atomic, self._atomic, self.value, self.stale = self._atomic, None, None, False
        if atomic is not None:
            assert _OPEN[-1] is self, "a kept savepoint ends before those opened after it"
            _OPEN.pop()
            with self.blocker.unblock():
                transaction.set_rollback(True)
                atomic.__exit__(None, None, None)

    def handed_to(self, cache_dir: Path) -> Any:
        """What the build returned, deep-copied for one test, with the files it cached copied to the test's."""
        shutil.copytree(self.cache, cache_dir, dirs_exist_ok=True)
        return copy.deepcopy(self.value)


def kept(name: str, build: Callable[[Path], Any], *, after: tuple[str, ...] = ()):
    """The two fixtures of a kept state ``name``: assign them as ``_kept_<name>, <name> = kept(...)``.

    ``build(folder)`` makes the rows (and any files, in ``folder``) and returns what the tests get;
    ``after`` names the kept states it builds on (their rows are there when ``build`` runs). A module or
    conftest that imports ``<name>`` from another imports ``_kept_<name>`` with it (pytest finds fixtures by
    the names a module holds), and those of the states it builds on unless a conftest above holds them."""

    @pytest.fixture(scope="module", name=f"_kept_{name}")
    def module_fixture(request, django_db_setup, django_db_blocker, tmp_path_factory):
        parents = tuple(request.getfixturevalue(f"_kept_{parent}") for parent in after)
        keeper = Keeper(name, build, tmp_path_factory.mktemp(f"kept-{name}"), django_db_blocker, parents)
        _KEPT.append(keeper)
        if not _CURRENT["transactional"] and all(parent.is_open for parent in parents):
            keeper.open()
        yield keeper
        _release_down_to(keeper)
        _KEPT.remove(keeper)

    def test_fixture(request, db, settings, tmp_path, **module_fixture):
        (keeper,) = module_fixture.values()
        if not keeper.is_open:
            for parent in after:
                request.getfixturevalue(parent)
            yield build(tmp_path)
            return
        yield keeper.handed_to(Path(settings.CACHE_DIR))
        if changed := keeper.changed_files():
            keeper.stale = True
            pytest.fail(
                f"the test changed files the kept {name!r} rows name, which the module's other tests read:"
                f" {', '.join(map(str, changed))}; build one of its own for it",
                pytrace=False,
            )

    # The module fixture is named in the signature, not fetched: pytest sets up what a test names by scope,
    # so the kept transaction opens before the test's own (``db``), which nests in it.
    test_fixture.__signature__ = inspect.Signature(
        inspect.Parameter(arg, inspect.Parameter.POSITIONAL_OR_KEYWORD)
        for arg in ("request", "db", "settings", "tmp_path", f"_kept_{name}")
    )
    return module_fixture, pytest.fixture(test_fixture, name=name)
