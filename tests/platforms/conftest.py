"""The platforms' tests live in the small world of the annotation tests (tests/annotation/conftest.py),
the toy platform included (a platform that is not the one under test)."""

from tests.annotation.conftest import (  # noqa: F401
    _kept_annotators,
    _kept_local_batch,
    _kept_query_set,
    _kept_researcher,
    annotators,
    gold_batch,
    local_batch,
    query_set,
    researcher,
    toy_platform,
)
