"""The qualification step for in-house annotators: training queries with feedback before the
first HIT of a batch; a worker below the pass fraction is not given the batch's HITs."""

import pytest

from annotation import services
from annotation.crowd.services.batch_settings import GoldQuery
from annotation.models import Qualification
from annotation.quality.services.training import submit_training
from core.errors import ServiceError
from platforms.inhouse.services.annotators import local_worker
from platforms.inhouse.services.handout import next_assignment

TRAINING = [
    GoldQuery("t1", "what is a mother", "f"),
    GoldQuery("t2", "what is a father", "m"),
    GoldQuery("t3", "how to boil rice", "n"),
    GoldQuery("t4", "do sisters or brothers argue more", "o"),
]


@pytest.fixture
def training_batch(query_set):
    batch = services.create_batch(
        "trained",
        services.BatchSettings(assignments_per_query=2, queries_per_hit=3, training_pass_fraction=0.75),
        query_set=query_set,
        training=TRAINING,
    )
    services.publish_batch(batch)
    batch.refresh_from_db()
    return batch


def _login(client, user):
    client.force_login(user)
    return client


def test_annotator_takes_the_training_first_and_is_told_what_was_wrong(training_batch, annotators, client):
    _login(client, annotators[0])
    first = client.get("/annotation/next/")
    assert first.status_code == 302 and first["Location"] == "/annotation/batches/trained/training/"
    page = client.get(first["Location"]).content.decode()
    assert "what is a mother" in page and 'name="q-4"' in page

    # 3 of 4 right: exactly the pass fraction of 0.75.
    result = client.post(first["Location"], {"q-1": "f", "q-2": "m", "q-3": "n", "q-4": "n"})
    body = result.content.decode()
    assert result.status_code == 200 and "3 of 4" in body and "You passed" in body
    assert (
        "&quot;do sisters or brothers argue more&quot; is Other or multiple genders, you answered Non-gendered" in body
    )
    assert client.get("/annotation/next/")["Location"].startswith("/annotation/assignments/")


def test_a_worker_who_fails_gets_no_hits_of_the_batch_and_cannot_retry(training_batch, annotators, client):
    _login(client, annotators[1])
    url = "/annotation/batches/trained/training/"
    failed = client.post(url, {"q-1": "m", "q-2": "f", "q-3": "n", "q-4": "o"})
    assert "2 of 4" in failed.content.decode() and "will not be given to you" in failed.content.decode()
    # A second try changes nothing: the first result stands.
    again = client.post(url, {"q-1": "f", "q-2": "m", "q-3": "n", "q-4": "o"})
    assert "2 of 4" in again.content.decode()
    assert Qualification.objects.get().passed is False
    assert next_assignment(annotators[1], training_batch) is None
    assert client.get("/annotation/next/").status_code == 200  # "No more HITs", not the training again


def test_training_page_checks_every_answer_and_the_service_scores_once(training_batch, annotators, client):
    _login(client, annotators[2])
    missing = client.post("/annotation/batches/trained/training/", {"q-1": "f"})
    assert missing.status_code == 400 and "Please choose a category" in missing.content.decode()
    assert not Qualification.objects.exists()
    worker = local_worker(annotators[2])
    result = submit_training(training_batch, worker, {"q-1": "f", "q-2": "m", "q-3": "n", "q-4": "o"})
    assert (result.correct, result.total, result.passed, result.feedback) == (4, 4, True, "4 of 4 right.")
    assert submit_training(training_batch, worker, {"q-1": "n", "q-2": "n", "q-3": "n", "q-4": "n"}).pk == result.pk


def test_batches_without_training_are_unchanged_and_researchers_cannot_take_it(
    local_batch, annotators, researcher, client
):
    _login(client, annotators[0])
    assert client.get("/annotation/next/")["Location"].startswith("/annotation/assignments/")
    assert client.get(f"/annotation/batches/{local_batch.name}/training/").status_code == 404
    _login(client, researcher)
    assert client.get(f"/annotation/batches/{local_batch.name}/training/").status_code == 403


def test_training_is_refused_where_it_does_not_run(query_set, toy_platform):
    """A platform whose workers do not come to this site first (``trains_workers`` False: the toy's) has no training step."""
    with pytest.raises(ServiceError, match=r"Toy platform workers do not come here before their first HIT"):
        services.create_batch("mt2", services.BatchSettings(provider="toy"), query_set=query_set, training=TRAINING)
    with pytest.raises(ServiceError, match="also asked in the batch"):
        services.create_batch(
            "clash", services.BatchSettings(), query_set=query_set, training=[GoldQuery("101", "x", "n")]
        )


def test_a_batch_with_a_team_trains_its_members_only(training_batch, query_set, annotators, client):
    """Issue 27.2: an annotator outside a batch's team was sent to its training first, saw its
    queries and (after answering) their answer key, and got no other work until they took it."""
    from platforms.inhouse.services import team
    from tests.annotation.conftest import make_batch

    other = make_batch(query_set, name="other")  # open to everyone, no training
    services.publish_batch(other)
    member, outsider = annotators[0], annotators[1]
    team.set_batch_team(training_batch, [member.username])

    _login(client, outsider)
    nxt = client.get("/annotation/next/")
    assert nxt.status_code == 302 and nxt["Location"].startswith("/annotation/assignments/")  # work of "other"
    url = "/annotation/batches/trained/training/"
    page = client.get(url)
    assert page.status_code == 404 and "what is a mother" not in page.content.decode()
    answered = client.post(url, {"q-1": "f", "q-2": "m", "q-3": "n", "q-4": "o"})
    assert answered.status_code == 404 and "is Other or multiple genders" not in answered.content.decode()
    assert not Qualification.objects.exists()

    _login(client, member)
    assert client.get("/annotation/next/")["Location"] == url  # the team's own annotator is trained first
    assert "what is a mother" in client.get(url).content.decode()
