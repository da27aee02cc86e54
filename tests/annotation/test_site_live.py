"""Live parts (htmx polling that stops when done) and the annotator's confirmation and count."""

import re

from django.urls import reverse

from annotation.crowd.services.batches import cancel_batch
from annotation.crowd.services.sync import sync_batch
from annotation.models import Assignment
from core.jobs import create_job
from core.models import Job
from platforms.inhouse.services.handout import next_assignment
from platforms.inhouse.services.hit_page import submit_local_assignment
from tests.annotation.conftest import answers_for

POLL = 'hx-trigger="every 2s"'


def test_a_published_batch_page_polls_its_progress_and_agreement_until_completed(
    local_batch, annotators, researcher, client
):
    client.force_login(researcher)
    page = client.get(reverse("annotation:batch-detail", args=["b1"])).content.decode()
    assert POLL in page and reverse("annotation:batch-live", args=["b1"]) in page
    for user in annotators[:2]:
        while (assignment := next_assignment(user, local_batch)) is not None:
            submit_local_assignment(
                assignment, answers_for(assignment, override={"102": "o"} if user == annotators[1] else None)
            )
    live = client.get(reverse("annotation:batch-live", args=["b1"])).content.decode()
    assert 'id="answered">4 / 4<' in live
    # Krippendorff's nominal alpha, by hand: 12 labels, one disagreeing pair (102: f vs o), so
    # D_o = 2/12; label totals n=4, f=3, m=2, o=3 give D_e = 1 - (4*3 + 3*2 + 2*1 + 3*2) / (12*11).
    expected = 1 - (2 / 12) / (1 - (4 * 3 + 3 * 2 + 2 * 1 + 3 * 2) / (12 * 11))
    assert f'id="alpha-so-far">{expected:.3f}<' in live
    assert POLL in live  # published, not yet reviewed
    sync_batch(local_batch, approve_all=True)
    live = client.get(reverse("annotation:batch-live", args=["b1"])).content.decode()
    assert 'id="batch-status">completed<' in live and POLL not in live


def test_a_draft_batch_page_does_not_poll(query_set, researcher, client):
    from tests.annotation.conftest import make_batch

    make_batch(query_set, name="draft")
    client.force_login(researcher)
    page = client.get(reverse("annotation:batch-detail", args=["draft"])).content.decode()
    assert POLL not in page


def test_the_job_page_polls_until_done_then_leads_on_to_the_result(researcher, client):
    client.force_login(researcher)
    job = create_job("import", "Import query set q")
    page = client.get(reverse("core:job-detail", args=[job.pk])).content.decode()
    assert POLL in page and "This page updates itself" in page
    Job.objects.filter(pk=job.pk).update(status=Job.Status.DONE, result={"url": "/#queries"})
    fragment = client.get(reverse("core:job-progress-fragment", args=[job.pk]), HTTP_HX_REQUEST="true")
    assert fragment["HX-Redirect"] == "/#queries"
    assert POLL not in fragment.content.decode() and 'href="/#queries"' in fragment.content.decode()
    page = client.get(reverse("core:job-detail", args=[job.pk])).content.decode()
    assert POLL not in page and "Open the result" in page


def test_a_failed_job_stops_polling_and_shows_why(researcher, client):
    client.force_login(researcher)
    job = create_job("import", "Import query set q")
    Job.objects.filter(pk=job.pk).update(status=Job.Status.FAILED, message="q.tsv:2: expected qid<TAB>query")
    fragment = client.get(reverse("core:job-progress-fragment", args=[job.pk]), HTTP_HX_REQUEST="true")
    assert not fragment.has_header("HX-Redirect")
    assert "q.tsv:2: expected qid&lt;TAB&gt;query" in fragment.content.decode()


def test_the_annotator_gets_a_confirmation_and_their_own_count_after_each_submission(local_batch, annotators, client):
    client.force_login(annotators[0])
    first = client.get(reverse("annotation:next"), follow=True)
    assert 'id="my-count">You have submitted 0 HITs<' in first.content.decode()
    # Open on their first HIT of the batch (issue 45); collapsed from the second on (below).
    assert '<details class="instructions" id="instructions" open>' in first.content.decode()
    # The confirmation numbers the HIT as the page's header did (issue 45: one numbering, not the HIT's position).
    number = re.search(r'id="hit-progress">HIT (\d+) of', first.content.decode()).group(1)
    assignment = Assignment.objects.get(worker__identity__user=annotators[0])
    response = client.post(reverse("annotation:assignment", args=[assignment.pk]), answers_for(assignment), follow=True)
    html = response.content.decode()
    assert f"Thank you: your answers to HIT {number} of b1 were recorded. You have submitted 1 HIT." in html
    assert 'id="my-count">You have submitted 1 HIT<' in html
    assert '<details class="instructions" id="instructions">' in html
    # The next HIT's header goes on from there, and so does its confirmation.
    second = Assignment.objects.filter(worker__identity__user=annotators[0]).exclude(pk=assignment.pk).first()
    page = client.get(reverse("annotation:assignment", args=[second.pk])).content.decode()
    after = re.search(r'id="hit-progress">HIT (\d+) of', page).group(1)
    assert int(after) == int(number) + 1
    done = client.post(reverse("annotation:assignment", args=[second.pk]), answers_for(second), follow=True)
    assert f"your answers to HIT {after} of b1 were recorded" in done.content.decode()


def test_the_batch_list_polls_while_a_batch_is_published(local_batch, researcher, client):
    client.force_login(researcher)
    page = client.get(reverse("annotation:batch-list")).content.decode()
    assert POLL in page and reverse("annotation:batch-list-live") in page
    cancel_batch(local_batch)
    table = client.get(reverse("annotation:batch-list-live")).content.decode()
    assert "cancelled" in table and POLL not in table


def test_the_batch_list_table_is_for_researchers_only(local_batch, annotators, client):
    client.force_login(annotators[0])
    assert client.get(reverse("annotation:batch-list-live")).status_code == 403
