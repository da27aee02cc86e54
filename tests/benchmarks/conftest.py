"""The benchmarks' tests borrow the annotation tests' small world (a query set, a published local batch)."""

from tests.annotation.conftest import local_batch, query_set  # noqa: F401 (fixtures)
