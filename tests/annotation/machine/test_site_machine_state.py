"""A machine-labelled batch's pages tell what it is: labels by source, money its crowd batches spent
and still commit, no Publish action and no estimate of its own counted anywhere.

The counts are checked against what the records say independently (the routing's accepted
qids, the sample's crowd labels, the derived batches' queries), and money against the
answered assignments at the batch's price.
"""

import re
from decimal import Decimal

import pytest
from django.urls import reverse

from annotation import services
from annotation.machine.selectors import calibration_batch
from annotation.machine.services.routing import plan_routing, route_batch
from annotation.models import Batch
from annotation.results.selectors import state as selectors
from annotation.results.selectors.labels import BatchAnswers
from tests.annotation.machine.test_prelabelling_pages import answer_until_in, machine_batch, sampled  # noqa: F401  (fixtures)

pytestmark = pytest.mark.slow  # a pre-labelled batch with an answered blind sample: seconds to build


@pytest.fixture
def routed(sampled):  # noqa: F811
    """``sampled``, its sample answered, routed at a target where some machine labels stand and some
    queries go to the crowd: on the point estimate (60 sample queries certify nothing with the
    guarantee), with a crowd (seed 1) under which a target splits the batch (on the simple random
    sample the default seed's answers agree with the rules 95% at every threshold: no split)."""
    answer_until_in(sampled, seed=1)  # routing waits for the sample's escalations (issue 58)
    for target in (0.9, 0.95, 0.85, 0.8, 0.99, 0.75, 0.7):
        plan = plan_routing(sampled, target, risk=None)
        if plan.accepted and plan.to_humans:
            route_batch(sampled, target, plan=plan)
            return sampled
    pytest.fail("no target splits the batch between the machine and the crowd")


def expected_counts(batch: Batch) -> dict:
    """The counts from the records, without the selector: sample crowd labels win over the machine."""
    routing = batch.routings.first()
    sample = calibration_batch(batch)
    crowd = set(BatchAnswers(batch).labels)
    accepted = set(routing.accepted) - crowd
    routed = routing.routed_batch.queries.filter(is_gold=False).count() if routing.routed_batch else 0
    return {
        "queries": 150,
        "accepted": len(accepted),
        "crowd": len(crowd),
        "sample": sample.queries.filter(is_gold=False).count(),
        "routed": routed,
        "unlabelled": 150 - len(accepted) - len(crowd),
    }


def _sample_spent(batch: Batch) -> Decimal:
    """The sample's answered assignments at the batch's $0.05, counted from the records."""
    from annotation.models import Assignment

    done = Assignment.objects.filter(
        hit__batch=calibration_batch(batch), status__in=[Assignment.Status.SUBMITTED, Assignment.Status.APPROVED]
    ).exclude(gold_passed=False)
    return (done.count() * Decimal("0.05")).quantize(Decimal("0.01"))


def test_the_state_counts_every_query_once_by_where_its_label_comes_from(routed):
    state = selectors.batch_state(routed)
    assert state["kind"] == "machine" and state["status"] == "machine-labelled"
    assert state["machine"] == expected_counts(routed)
    assert state["machine"]["sample"] == 60 and state["machine"]["crowd"] > 0
    assert state["estimate"] is None
    # Spent: the sample's answered assignments (its escalations' included) at $0.05; the routed batch is a draft.
    assert state["spent"] == _sample_spent(routed) == selectors.batch_state(calibration_batch(routed))["spent"]
    routed_batch = routed.routings.first().routed_batch
    assert state["committed"] == 0 and state["planned"] == Decimal(routed_batch.cost["total"]) > 0
    # Published, the routed batch's estimate is committed until answered.
    services.publish_batch(routed_batch)
    state = selectors.batch_state(routed)
    assert state["committed"] == Decimal(routed_batch.cost["total"]) and state["planned"] == 0


def test_the_batch_page_shows_the_machine_state_and_offers_no_publish(routed, researcher, client):
    client.force_login(researcher)
    html = client.get(reverse("annotation:batch-detail", args=[routed.name])).content.decode()
    counts = expected_counts(routed)
    assert '<strong id="batch-status">machine-labelled</strong>' in html
    assert f'<div class="value" id="machine-accepted">{counts["accepted"]}</div>' in html
    assert f'<div class="value" id="crowd-labelled">{counts["crowd"]}</div>' in html
    assert f'<div class="value" id="unlabelled">{counts["unlabelled"]}</div>' in html
    assert f"{counts['sample']} in the calibration sample, {counts['routed']} routed" in html
    assert f'<div class="value" id="spent">${_sample_spent(routed)}</div>' in html
    hits = re.sub(r'<h2 id="publish-dataset">.*?</form>', "", html, flags=re.S)  # publishing its labels is offered
    assert reverse("annotation:batch-publish", args=[routed.name]) not in html and "Publish " not in hits
    assert "estimated cost" not in html and 'id="cost"' not in html
    assert f"{routed.cost['total']}" in html.split('id="all-crowd-estimate"')[1]  # only as a comparison
    # The live fragment says the same.
    live = client.get(reverse("annotation:batch-live", args=[routed.name])).content.decode()
    assert '<strong id="batch-status">machine-labelled</strong>' in live and "estimated cost" not in live


def test_the_batch_list_and_the_dashboard_add_no_estimate_of_its_own(routed, researcher, client):
    client.force_login(researcher)
    counts = expected_counts(routed)
    listing = client.get(reverse("annotation:batch-list")).content.decode()
    row = listing.split(f'id="answered-{routed.name}"')[1].split("</tr>")[0]
    assert f"{counts['accepted']} machine · {counts['crowd']} crowd · {counts['unlabelled']} unlabelled" in row
    assert routed.cost["total"] not in row
    dashboard = client.get("/").content.decode()
    row = dashboard.split(f">{routed.name}</a>")[1].split("</tr>")[0]
    assert "Machine-labelled" in row and routed.cost["total"] not in row.replace('title="$0.90', "")
    assert f"{counts['accepted']} + {counts['crowd']} / 150" in row
    assert [r["estimate"] for r in selectors.batch_overview() if r["batch"] == routed] == [None]


def test_a_crowd_batch_keeps_its_estimate_and_publish_button(local_batch, researcher, client, query_set):
    draft = services.create_batch(
        "plain", services.BatchSettings(provider="local", queries_per_hit=3), query_set=query_set
    )
    client.force_login(researcher)
    html = client.get(reverse("annotation:batch-detail", args=[draft.name])).content.decode()
    assert '<strong id="batch-status">draft</strong>' in html and "Publish 2 HITs" in html
    assert f"${draft.cost['total']}</div>estimated cost" in html
    assert selectors.batch_state(draft)["estimate"] == draft.cost["total"]
