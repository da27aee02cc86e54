"""The library's tests: they import the library and what its extra ``test`` installs, never Django or an app.

They mirror the package (``tests/genderbias/ranking/test_ties.py`` tests ``genderbias/ranking/ties.py``) and run
in two places: with the rest of the suite in the platform's venv, and alone in bin/test's library stage, in a
venv made by ``pip install ".[test]"`` that holds no Django. There ``--confcutdir tests/genderbias`` keeps
``tests/conftest.py`` (Django's fixtures, the database stages) from loading; this file is then the only
conftest, and gives the one fixture of the suite's the library's tests use, the reference data
(``tests/conftest.py``'s own: importing it sets up no Django). tests/test_architecture.py checks that no
module here imports Django or an app.
"""

import os

import pytest

from tests.conftest import REFERENCE_DIR, reference_dir, slow_first

__all__ = ["REFERENCE_DIR", "reference_dir"]


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items):
    """Under pytest-xdist, slow tests first, as ``tests/conftest.py`` orders the whole suite (which this stage
    does not load): with ``--dist loadfile --no-loadscope-reorder`` the files holding the minute-long
    simulations start at once on different workers instead of arriving last on one."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        slow_first(items)
