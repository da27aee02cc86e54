"""Loose ends of the routing work: the calibration report's cache key covers an extended sample
and the routing in force; the dataset card states the routing's guarantee (or that it has none)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation import services
from annotation.crowd.services.batches import cancel_batch
from annotation.exports.services import export_queries
from annotation.machine.report.selectors import calibration_report, report_version
from annotation.machine.services.calibration import create_calibration_sample
from annotation.machine.services.prelabels import prelabel_batch
from annotation.machine.services.routing import route_batch
from annotation.models import Batch
from platforms.inhouse.services.simulation import simulate_local_annotations
from pooling.models import QuerySet
from pooling.services import create_query_set
from tests.annotation.conftest import make_batch
from tests.annotation.machine.test_calibration_flow import NoisyMachine, _texts


@pytest.fixture
def extended(db) -> tuple[Batch, Batch]:
    """A machine-labelled batch whose sample was extended: the extension answered, the first draw not yet."""
    query_set = create_query_set("mq", _texts(), origin=QuerySet.Origin.IMPORTED)
    batch = make_batch(query_set, name="mach", assignments_per_query=3, queries_per_hit=5)
    prelabel_batch(batch, NoisyMachine())
    first = create_calibration_sample(batch, 30, seed=1, extendable=True)
    services.publish_batch(first)
    extension = create_calibration_sample(batch, 20, seed=2, extend=True)
    services.publish_batch(extension)
    simulate_local_annotations(extension, annotators=3, accuracy=0.9, seed=3)
    return batch, first


@pytest.mark.slow
def _shown(client, url: str, capture) -> dict:
    """The report the page shows once the job its view started (computed at the commit) is done."""
    with capture(execute=True):
        client.get(url)
    return client.get(url).context["report"]


@pytest.mark.slow
def test_the_report_refreshes_when_the_earlier_part_of_an_extended_sample_is_answered(
    extended, researcher, client, django_capture_on_commit_callbacks
):
    batch, first = extended
    before = report_version(batch)
    client.force_login(researcher)
    url = reverse("annotation:batch-calibration", args=[batch.name])
    shown = _shown(client, url, django_capture_on_commit_callbacks)
    assert shown["n"] == calibration_report(batch, bootstrap=0)["n"] <= 20  # only the extension is answered

    simulate_local_annotations(first, annotators=3, accuracy=0.9, seed=4)  # now the first draw's answers come in
    after = report_version(batch)
    assert after != before  # the key used to read the last link only: the first draw's answers left it as it was
    fresh = calibration_report(batch, bootstrap=0)
    assert fresh["n"] > shown["n"]
    # the page shows the new report, not the cached one
    assert _shown(client, url, django_capture_on_commit_callbacks)["n"] == fresh["n"]

    # The routing in force is part of the key too (a routing decided on this sample, once it is in: issue 58).
    from tests.annotation.machine.test_calibration_flow import answer_sample_until_in

    answer_sample_until_in(batch)
    after = report_version(batch)
    route_batch(batch, 0.5, risk=None)
    assert report_version(batch) not in (before, after)


# --- the dataset card states the routing's guarantee ------------------------------------------------


def _machine_section(card: str) -> dict[str, str]:
    """The card's "Machine labels" table as fact -> value (as rendered)."""
    section = card.split("## Machine labels", 1)[1].split("\n## ", 1)[0]
    rows = [line.strip("| ").split(" | ", 1) for line in section.splitlines() if line.startswith("| ")]
    return {fact: value for fact, value in rows[2:]}  # the header and the rule line left out


@pytest.mark.slow
def test_the_card_states_the_guarantee_or_that_there_is_none(db, tmp_path):
    from tests.annotation.machine.test_routing_service import SureMachine, _answered_sample
    from tests.annotation.machine.test_routing_service import _texts as sure_texts

    query_set = create_query_set("rq", sure_texts(), origin=QuerySet.Origin.IMPORTED)
    batch = make_batch(query_set, name="rb", assignments_per_query=3, queries_per_hit=10)
    prelabel_batch(batch, SureMachine())
    _answered_sample(batch)

    routing = route_batch(batch, 0.9)  # the default: the guarantee at δ = 0.05
    assert (routing.risk, routing.threshold) == (0.05, 0.97)
    facts = _machine_section(export_queries(batch, "all", tmp_path / "a.tsv", "tsv").card)
    assert facts["target accuracy"] == "0.900" and facts["risk δ"] == "0.050"
    assert facts["guarantee"] == (
        "with probability ≥ 0.95 (1 − δ) over the blind sample, the machine-accepted labels are at least 0.9 "
        "right (fixed-sequence test) against the reference label: the sample's crowd label from 3 votes (a strict "
        "majority); a query without one counts as the machine's error. Echo check: none of the sample's 3 "
        "workers follows the machine more than people do."  # the sample's 3 answer their own way
    )

    cancel_batch(routing.routed_batch)  # routed again on the point estimate: the card says so
    estimate = route_batch(batch, 0.9, risk=None)
    assert estimate.risk is None and estimate.threshold is not None
    facts = _machine_section(export_queries(batch, "all", tmp_path / "b.tsv", "tsv").card)
    assert facts["guarantee"] == "no guarantee (point estimate)" and facts["risk δ"] == "none (no guarantee)"
    assert facts["target accuracy"] == "0.900"


def test_a_guarantee_that_certified_nothing_promises_nothing_about_accepted_labels():
    from annotation.results.export_formats import guarantee_fact

    certified = {"target_accuracy": 0.95, "risk": 0.1, "threshold": 0.8}
    assert guarantee_fact(certified).startswith("with probability ≥ 0.9 (1 − δ) over the blind sample")
    assert "at least 0.95 right" in guarantee_fact(certified)
    nothing = certified | {"threshold": None}
    assert guarantee_fact(nothing) == (
        "no threshold could be certified at target 0.95 and risk δ = 0.1: no machine label accepted"
    )
    old = {"target_accuracy": 0.9, "risk": None, "threshold": 0.7, "conservative": True}
    assert guarantee_fact(old) == "no guarantee (point estimate; the CI's lower bound met the target)"
