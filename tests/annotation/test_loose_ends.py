"""Loose ends of the routing work: the calibration report's cache key covers an extended sample
and the routing in force; the dataset card states the routing's guarantee (or that it has none)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation import services
from annotation.models import Batch
from annotation.services.calibration import calibration_report, create_calibration_sample, report_version
from annotation.services.routing import route_batch
from annotation.services.simulation import simulate_local_annotations
from pooling.models import QuerySet
from pooling.services import create_query_set

from .conftest import make_batch
from .test_calibration_flow import NoisyMachine, _texts


@pytest.fixture
def extended(db) -> tuple[Batch, Batch]:
    """A machine-labelled batch whose sample was extended: the extension answered, the first draw not yet."""
    query_set = create_query_set("mq", _texts(), origin=QuerySet.Origin.IMPORTED)
    batch = make_batch(query_set, name="mach", assignments_per_query=3, queries_per_hit=5)
    services.prelabel_batch(batch, NoisyMachine())
    first = create_calibration_sample(batch, 30, seed=1)
    services.publish_batch(first)
    extension = create_calibration_sample(batch, 20, seed=2, extend=True)
    services.publish_batch(extension)
    simulate_local_annotations(extension, annotators=3, accuracy=0.9, seed=3)
    return batch, first


@pytest.mark.slow
def test_the_report_refreshes_when_the_earlier_part_of_an_extended_sample_is_answered(extended, researcher, client):
    batch, first = extended
    before = report_version(batch)
    client.force_login(researcher)
    url = reverse("annotation:batch-calibration", args=[batch.name])
    shown = client.get(url).context["report"]
    assert shown["n"] == calibration_report(batch, bootstrap=0)["n"] <= 20  # only the extension is answered

    simulate_local_annotations(first, annotators=3, accuracy=0.9, seed=4)  # now the first draw's answers come in
    after = report_version(batch)
    assert after != before  # the key used to read the last link only: the first draw's answers left it as it was
    fresh = calibration_report(batch, bootstrap=0)
    assert fresh["n"] > shown["n"]
    assert client.get(url).context["report"]["n"] == fresh["n"]  # the page shows the new report, not the cached one

    # The routing in force is part of the key too (a routing decided on this sample).
    route_batch(batch, 0.5, risk=None)
    assert report_version(batch) not in (before, after)
