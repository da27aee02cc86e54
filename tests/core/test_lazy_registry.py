"""core.lazy_registry.LazyRegistry: built-in members imported on first ask, plug-ins by decorator, clear errors.

Each test writes a small package of its own (a registry in ``base``, members in other
modules) so that what is imported, and when, is seen in ``sys.modules``.
"""

from __future__ import annotations

import importlib
import sys
import uuid
from pathlib import Path

import pytest

from core.lazy_registry import LazyRegistry, UnknownName


@pytest.fixture
def package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A fresh package: ``base.REGISTRY`` with built-ins ``one`` (module ``one``), ``two``
    (module ``two``) and ``silent`` (a module that registers nothing)."""
    name = f"regpkg_{uuid.uuid4().hex}"
    root = tmp_path / name
    root.mkdir()
    (root / "__init__.py").write_text("")
    (root / "base.py").write_text(
        "from core.lazy_registry import LazyRegistry\n"
        f"REGISTRY = LazyRegistry('widget', {{'one': '{name}.one', 'two': '{name}.two', 'silent': '{name}.silent'}})\n"
    )
    (root / "one.py").write_text(
        "from .base import REGISTRY\n\n"
        "@REGISTRY.register('one')\n"
        "class One:\n"
        "    def __init__(self, size=1):\n"
        "        self.size = size\n"
    )
    (root / "two.py").write_text("from .base import REGISTRY\n\n@REGISTRY.register('two')\nclass Two:\n    pass\n")
    (root / "silent.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name
    for module in [m for m in sys.modules if m == name or m.startswith(f"{name}.")]:
        del sys.modules[module]


def _registry(package: str) -> LazyRegistry:
    return importlib.import_module(f"{package}.base").REGISTRY


def test_a_built_in_member_is_imported_on_first_ask_only(package):
    registry = _registry(package)
    assert registry.names() == ["one", "silent", "two"]
    assert "one" in registry and "three" not in registry
    assert f"{package}.one" not in sys.modules  # names() and `in` import nothing

    one = registry.get_class("one")
    assert one.__module__ == f"{package}.one" and one.name == "one"
    assert f"{package}.one" in sys.modules and f"{package}.two" not in sys.modules
    assert registry["one"] is one
    assert registry.get_class("two").__name__ == "Two"


def test_create_makes_a_new_object_with_the_keyword_arguments(package):
    registry = _registry(package)
    first, second = registry.create("one", size=7), registry.create("one")
    assert (type(first).__name__, first.size, second.size) == ("One", 7, 1)
    assert first is not second


def test_a_plug_in_registers_any_name_and_a_later_registration_replaces(package):
    registry = _registry(package)

    @registry.register("extra")
    class Extra:
        pass

    assert Extra.name == "extra" and registry.get_class("extra") is Extra
    assert registry.names() == ["extra", "one", "silent", "two"]

    @registry.register("extra")
    class Newer:
        pass

    assert registry.get_class("extra") is Newer


def test_an_unknown_name_is_refused_with_the_known_names(package):
    registry = _registry(package)
    with pytest.raises(UnknownName, match=r"^unknown widget 'three'; known: one, silent, two$"):
        registry.get_class("three")
    with pytest.raises(ValueError, match="unknown widget"):
        registry.create("three")
    with pytest.raises(LookupError):
        registry["three"]


def test_a_built_in_module_that_registers_nothing_is_an_unknown_name(package):
    registry = _registry(package)
    with pytest.raises(UnknownName, match=r"unknown widget 'silent'; known: one, silent, two"):
        registry.get_class("silent")
    assert f"{package}.silent" in sys.modules  # it was imported, and registered nothing


def test_a_failing_import_propagates(package, tmp_path):
    (tmp_path / package / "one.py").write_text("import a_module_that_does_not_exist_anywhere\n")
    with pytest.raises(ModuleNotFoundError, match="a_module_that_does_not_exist_anywhere"):
        _registry(package).get_class("one")


def test_without_a_name_attribute_the_class_is_left_as_it_is():
    registry: LazyRegistry[object] = LazyRegistry("thing", {}, name_attribute=None)

    @registry.register("plain")
    class Plain:
        pass

    assert not hasattr(Plain, "name") and registry.create("plain").__class__ is Plain
    assert registry.names() == ["plain"]
