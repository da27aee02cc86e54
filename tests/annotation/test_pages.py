"""Researcher pages: batch list, detail, agreement with drill-down, escalation plan, actions as jobs."""

import re

import pytest
from django.contrib.messages import get_messages
from django.urls import reverse

from annotation.crowd.services.batches import cancel_batch
from annotation.models import Batch
from annotation.results.selectors.agreement import agreement
from core.models import Job
from platforms.inhouse.services.annotators import local_worker
from platforms.inhouse.services.handout import next_assignment
from platforms.inhouse.services.hit_page import submit_local_assignment
from tests.annotation.conftest import answers_for, make_batch


@pytest.fixture
def disputed(local_batch, annotators):
    """104 gets one Other and one Female vote: disputed."""
    for user, override in zip(annotators[:2], [{}, {"104": "f"}], strict=True):
        while (assignment := next_assignment(user, local_batch)) is not None:
            submit_local_assignment(assignment, answers_for(assignment, override=override))
    return local_batch


def test_pages_are_for_staff(disputed, annotators, client):
    client.force_login(annotators[0])
    for name in ("annotation:batch-detail", "annotation:batch-agreement", "annotation:batch-escalate"):
        response = client.get(reverse(name, args=["b1"]))
        assert response.status_code == 403
    for path in ("/", "/api/pooling/query-sets/", "/api/pooling/pools/", "/metrics/", "/api/metrics/reports/"):
        response = client.get(path)
        assert response.status_code == 403 or b"next task" in response.content, path


def test_batch_list_and_detail(disputed, researcher, client):
    client.force_login(researcher)
    page = client.get(reverse("annotation:batch-list")).content.decode()
    assert reverse("annotation:batch-detail", args=["b1"]) in page
    page = client.get(reverse("annotation:batch-detail", args=["b1"])).content.decode()
    assert "$0.20" in page and "4 / 4" in page
    assert 'id="hits"' in page and page.count("preview</a>") == 2


def test_agreement_page_drills_down_to_pseudonymous_votes(disputed, researcher, annotators, client):
    client.force_login(researcher)
    page = client.get(reverse("annotation:batch-agreement", args=["b1"])).content.decode()
    assert 'id="set-aside-count">1<' in page
    link = reverse("annotation:batch-query", args=["b1", "104"])
    assert link in page
    detail = client.get(link).content.decode()
    assert "do boys or girls learn faster" in detail and "disputed" in detail
    for user in annotators[:2]:
        assert local_worker(user).pseudonym in detail
        assert user.username not in detail
    assert "Other or multiple genders" in detail and "Female" in detail


def test_escalation_page_shows_the_cost_before_anything_happens(
    disputed, researcher, client, django_capture_on_commit_callbacks
):
    client.force_login(researcher)
    url = reverse("annotation:batch-escalate", args=["b1"])
    page = client.get(url + "?max_assignments=3").content.decode()
    assert "Total extra cost" in page and "$0.05" in page  # in-house: the reward only
    assert disputed.hits.filter(max_assignments=3).count() == 0
    confirmed = re.search(r'name="hits" value="([\d,]*)"', page).group(1)
    assert confirmed
    # A confirmation naming no HITs pays for nothing, whatever the plan is now.
    with django_capture_on_commit_callbacks(execute=True):
        client.post(url, {"max_assignments": "3", "confirm": "on", "hits": ""})
    assert disputed.hits.filter(max_assignments=3).count() == 0
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(url, {"max_assignments": "3", "confirm": "on", "hits": confirmed})
    job = Job.objects.get(pk=int(response.url.rstrip("/").rsplit("/", 1)[1]))
    assert job.status == Job.Status.DONE and job.result["extra_assignments"] == 1
    assert disputed.hits.filter(max_assignments=3).count() == 1


def test_escalation_page_shows_the_budget_and_takes_a_posterior_target(disputed, researcher, client):
    from decimal import Decimal

    from annotation.quality.services.budget import set_extra_budget

    set_extra_budget(disputed, Decimal("0.05"))
    client.force_login(researcher)
    url = reverse("annotation:batch-escalate", args=["b1"])
    page = client.get(url + "?max_assignments=3").content.decode()
    assert "Budget left for extra assignments: $0.05 of $0.05" in page
    refused = client.get(url + "?until=posterior:2")
    assert refused.status_code == 302  # back to the batch with the message
    messages = [str(m) for m in get_messages(refused.wsgi_request)]
    assert any("majority or posterior:P" in m for m in messages)
    page = client.get(url + "?max_assignments=3&until=posterior:0.6").content.decode()
    assert "settled when: posterior:0.6" in page


def test_publish_and_cancel_buttons(query_set, researcher, client, django_capture_on_commit_callbacks):
    batch = make_batch(query_set, name="draft")
    client.force_login(researcher)
    with django_capture_on_commit_callbacks(execute=True):
        client.post(reverse("annotation:batch-publish", args=["draft"]))
    batch.refresh_from_db()
    assert batch.status == Batch.Status.PUBLISHED
    client.post(reverse("annotation:batch-cancel", args=["draft"]))
    batch.refresh_from_db()
    assert batch.status == Batch.Status.CANCELLED


def test_hit_preview_is_the_self_contained_page(local_batch, researcher, client):
    client.force_login(researcher)
    page = client.get(reverse("annotation:hit-preview", args=["b1", 1])).content.decode()
    assert "<fieldset" in page and 'name="assignmentId"' in page
    assert not re.search(r'(src|href)="(https?:)?//', page) and "<script src" not in page  # nothing external
    assert "csrfmiddlewaretoken" not in page


def test_actions_on_a_cancelled_batch_are_refused_on_the_page(query_set, researcher, client):
    batch = make_batch(query_set, name="gone")
    cancel_batch(batch)
    client.force_login(researcher)
    response = client.post(reverse("annotation:batch-publish", args=["gone"]), follow=True)
    assert b"is cancelled" in response.content
    assert not Job.objects.exists()


def test_agreement_shows_each_workers_estimated_confusion(disputed, researcher, client):
    report = agreement(disputed, bootstrap=0)
    assert len(report["worker_confusion"]) == 2
    for worker in report["worker_confusion"]:
        assert worker["labels"] == ["n", "f", "m", "o"]
        for row in worker["matrix"]:
            assert sum(row) == pytest.approx(1.0, abs=1e-3)  # shares of the true category's row
        assert 0.0 <= worker["accuracy"] <= 1.0
    client.force_login(researcher)
    page = client.get(reverse("annotation:batch-agreement", args=["b1"])).content.decode()
    assert 'id="worker-confusion"' in page
    assert page.count('class="card worker-confusion"') == 2
