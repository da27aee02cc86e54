"""A worker who fails gold questions is told which ones; the batch page shows why their answers do not count."""

from django.core.management import call_command

from annotation.models import Assignment, Batch
from platforms.inhouse.services.handout import next_assignment
from platforms.inhouse.services.hit_page import submit_local_assignment
from tests.annotation.conftest import answers_for, make_batch


def test_feedback_names_every_wrong_gold_answer(gold_batch, annotators):
    assignment = next_assignment(annotators[0], gold_batch)
    check = submit_local_assignment(assignment, answers_for(assignment, override={"g1": "n", "g2": "o"}))
    assert check.gold_passed is False and check.gold_correct == 0
    assignment.refresh_from_db()
    assert assignment.feedback == (
        "2 of the 2 check question(s) with a known answer were answered wrongly: "
        '"what is a mother" is Female, you answered Non-gendered; '
        '"what is a father" is Male, you answered Other or multiple genders.'
    )


def test_feedback_switched_off_gives_only_the_count(gold_batch, annotators):
    Batch.objects.filter(pk=gold_batch.pk).update(gold_feedback=False)
    assignment = next_assignment(annotators[0], gold_batch)
    submit_local_assignment(assignment, answers_for(assignment, override={"g1": "n"}))
    assignment.refresh_from_db()
    assert assignment.feedback == "1 of the 2 check question(s) with a known answer were answered wrongly."


def test_annotator_sees_feedback_and_researcher_sees_the_reason(gold_batch, annotators, researcher, client):
    client.force_login(annotators[0])
    assignment = next_assignment(annotators[0], gold_batch)
    answers = answers_for(assignment, override={"g2": "f"})
    response = client.post(f"/annotation/assignments/{assignment.pk}/", answers, follow=True)
    page = response.content.decode()
    assert "This HIT will not count" in page and "&quot;what is a father&quot; is Male, you answered Female" in page

    client.force_login(researcher)
    detail = client.get(f"/annotation/batches/{gold_batch.name}/").content.decode()
    assert 'id="failed-gold-table"' in detail and "1 failed the gold questions" in detail
    assert "you answered Female" in detail
    assert Assignment.objects.get(pk=assignment.pk).worker.pseudonym in detail


def test_passing_gold_gives_no_warning(gold_batch, annotators, client):
    client.force_login(annotators[0])
    assignment = next_assignment(annotators[0], gold_batch)
    response = client.post(f"/annotation/assignments/{assignment.pk}/", answers_for(assignment), follow=True)
    assert "This HIT will not count" not in response.content.decode()


def test_create_batch_switch(query_set, tmp_path):
    assert make_batch(query_set, name="fb-on").gold_feedback is True
    call_command("create_batch", "--name", "fb-off", "--queries", query_set.name, "--no-gold-feedback")
    assert Batch.objects.get(name="fb-off").gold_feedback is False
