"""The platforms' tests live in the small world of the annotation tests (tests/annotation/conftest.py)."""

from tests.annotation.conftest import annotators, gold_batch, local_batch, query_set, researcher  # noqa: F401
