"""A Prolific participant corrects the HIT they just submitted on the site (issue 45, item 3)."""

from django.urls import reverse

from annotation.crowd.services.sync import sync_batch
from annotation.models import Assignment, Judgment
from tests.annotation.conftest import TRUTH, answers_for
from tests.platforms.prolific import test_prolific as base
from tests.platforms.prolific.test_prolific import Participant, _publish

server, provider, sleeps, client_class = base.server, base.provider, base.sleeps, base.client_class
batch = base.batch

WRONG = {"n": "f", "f": "m", "m": "o", "o": "n"}


def test_a_participant_back_on_the_hit_page_may_correct_it_until_it_is_reviewed(server, provider, batch, client_class):
    _publish(batch, provider)
    participant = Participant(server, batch.hit_type_id, "a" * 24, client_class)
    hit_page = participant.arrival["Location"]
    done = participant.answer(override={qid: WRONG[label] for qid, label in TRUTH.items()})
    assert done.status_code == 302 and "cc=" in done["Location"]  # sent to Prolific with the code, as before
    assignment = participant.assignment
    correct_url = reverse("annotation:prolific-correct", args=[assignment.pk])

    back = participant.browser.get(hit_page)  # the browser's Back: the code again, or a correction
    assert back.status_code == 200
    assert f'href="{correct_url}"' in back.content.decode() and "cc=" in back.content.decode()
    # Someone else's browser (no such assignment in its session) is refused.
    assert client_class().get(correct_url).status_code == 403

    corrected = participant.browser.post(correct_url, answers_for(assignment))
    assert corrected.status_code == 302 and "cc=" in corrected["Location"]
    labels = dict(Judgment.objects.filter(assignment=assignment).values_list("batch_query__qid", "label"))
    assert {q: lab for q, lab in labels.items() if q in TRUTH} == {q: TRUTH[q] for q in labels if q in TRUTH}
    assert Judgment.objects.filter(assignment=assignment).count() == assignment.hit.hit_queries.count()

    participant.complete()
    sync_batch(batch, provider)  # reviewed and paid: used
    assert Assignment.objects.get(pk=assignment.pk).status == Assignment.Status.APPROVED
    again = participant.browser.get(hit_page)
    assert again.status_code == 302 and "cc=" in again["Location"]
    refused = participant.browser.post(correct_url, answers_for(assignment, override={"101": "o"}))
    assert refused.status_code == 409 and "already reviewed" in refused.content.decode()
