"""The publishing tests' worlds: the annotation tests' (a query set, researchers, annotators, batches)
and the metrics tests' (a collection, runs and a batch of in-house answers), as they were beside them."""

from tests.annotation.conftest import annotators, gold_batch, local_batch, query_set, researcher  # noqa: F401
from tests.metrics.conftest import _no_screenshots_unless_browser, batch, world  # noqa: F401
