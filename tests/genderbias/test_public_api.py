"""The library declares its public names (issue 83, item 4): every public module of ``genderbias`` (no part of
its name starting with ``_``) defines ``__all__``, every name in it exists, and ``from module import *`` gives
them all; every name docs/library.md imports from the library or names as ``genderbias.<module>.<name>`` is in
that module's ``__all__`` (a submodule is imported as itself); ``py.typed`` ships with the package (PEP 561).
The expected names are the modules' own and the guide's, read here."""

import importlib
import pkgutil
import re
import tomllib
from pathlib import Path

import pytest

import genderbias

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "library.md"


def public_modules() -> list[str]:
    """``genderbias`` and every module below it whose dotted name has no part starting with ``_``."""
    found = [
        info.name
        for info in pkgutil.walk_packages(genderbias.__path__, "genderbias.")
        if not any(part.startswith("_") for part in info.name.split("."))
    ]
    return ["genderbias", *sorted(found)]


MODULES = public_modules()


def test_the_walk_finds_the_library():
    assert len(MODULES) > 80
    assert {"genderbias.api.calc", "genderbias.crowd.simulation.studies", "genderbias.datasets"} <= set(MODULES)


@pytest.mark.parametrize("name", MODULES)
def test_every_public_module_declares_names_that_exist_and_star_import(name):
    module = importlib.import_module(name)
    assert "__all__" in vars(module), f"{name} defines no __all__"
    declared = list(module.__all__)
    assert len(set(declared)) == len(declared), f"{name}.__all__ names one twice"
    assert [n for n in declared if not hasattr(module, n)] == [], f"{name}.__all__ names what it lacks"
    namespace: dict = {}
    exec(f"from {name} import *", namespace)
    assert set(declared) <= set(namespace)


def guide_names(text: str) -> list[tuple[str, str]]:
    """``(module, name)`` of every ``from genderbias… import …`` line of the guide and every dotted
    ``genderbias.….name`` it writes (the module: the longest dotted prefix that is a public module)."""
    found = []
    for module, names in re.findall(r"^\s*from (genderbias[\w.]*) import ([\w, ]+)$", text, flags=re.M):
        found += [(module, name.strip()) for name in names.split(",") if name.strip()]
    for dotted in re.findall(r"\bgenderbias(?:\.\w+)+", text):
        module, *rest = dotted.split(".")
        while rest and f"{module}.{rest[0]}" in MODULES:
            module = f"{module}.{rest.pop(0)}"
        if rest:
            found.append((module, rest[0]))
    return found


def test_every_name_the_guide_uses_is_declared():
    used = guide_names(GUIDE.read_text(encoding="utf-8"))
    assert ("genderbias", "calc_aggregate") in used and ("genderbias", "datasets") in used  # the guide is read
    undeclared = [
        f"{module}.{name}"
        for module, name in used
        if f"{module}.{name}" not in MODULES and name not in importlib.import_module(module).__all__
    ]
    assert undeclared == []


def test_py_typed_ships_with_the_package():
    assert (Path(genderbias.__file__).parent / "py.typed").is_file()
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "py.typed" in config["tool"]["setuptools"]["package-data"]["genderbias"]
