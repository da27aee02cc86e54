"""The platforms' tests live in the small world of the annotation tests (tests/annotation/conftest.py),
the toy platform included (a platform that is not the one under test)."""

from tests.annotation.conftest import *  # noqa: F403 (its fixtures: its __all__)
