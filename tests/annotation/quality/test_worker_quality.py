"""Per-worker quality of a batch: gold accuracy, agreement, Dawid-Skene accuracy, time per query."""

import datetime as dt

from django.db.models import F

from annotation.models import Assignment
from annotation.quality.selectors import worker_quality
from platforms.inhouse.services.annotators import local_worker
from platforms.inhouse.services.handout import next_assignment
from platforms.inhouse.services.hit_page import submit_local_assignment
from tests.annotation.conftest import answers_for


def test_worker_quality_by_hand(gold_batch, annotators, researcher, client):
    # ann-a answers everything right; ann-b gets gold g1 wrong on their first HIT (which then does not count).
    for user, wrong_first in ((annotators[0], False), (annotators[1], True)):
        first = True
        while (assignment := next_assignment(user, gold_batch)) is not None:
            override = {"g1": "n"} if wrong_first and first else {}
            submit_local_assignment(assignment, answers_for(assignment, override=override))
            first = False
    # Every HIT has 3 queries + 2 gold = 5 questions; ann-a took 50 s per HIT: 10 s per query.
    a_worker = local_worker(annotators[0])
    Assignment.objects.filter(worker=a_worker).update(accepted_at=F("submitted_at") - dt.timedelta(seconds=50))

    rows = {row["worker"]: row for row in worker_quality(gold_batch)}
    a = rows[a_worker.pseudonym]
    b = rows[local_worker(annotators[1]).pseudonym]
    assert (a["assignments"], a["gold_correct"], a["gold_total"], a["gold_accuracy"]) == (2, 4, 4, 1.0)
    assert (b["assignments"], b["gold_correct"], b["gold_total"], b["gold_accuracy"]) == (2, 3, 4, 0.75)
    assert a["seconds_per_query"] == 10.0
    # On the 3 queries both answered usably (the second HIT), they agree with each other.
    assert a["agreement"] == 1.0 and b["agreement"] == 1.0
    assert 0.5 < a["ds_accuracy"] <= 1.0 and 0.5 < b["ds_accuracy"] <= 1.0
    assert not a["blocked"] and not b["blocked"]

    client.force_login(researcher)
    api = client.get(f"/api/annotation/batches/{gold_batch.name}/workers/")
    assert api.status_code == 200
    assert {r["worker"]: r["gold_accuracy"] for r in api.json()} == {a["worker"]: 1.0, b["worker"]: 0.75}
    page = client.get(f"/annotation/batches/{gold_batch.name}/agreement/").content.decode()
    assert 'id="worker-quality-table"' in page and "0.75 (3/4)" in page
    client.force_login(annotators[0])
    assert client.get(f"/api/annotation/batches/{gold_batch.name}/workers/").status_code == 403
