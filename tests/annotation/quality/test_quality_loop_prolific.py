"""Block thresholds and the training step on Prolific, over the Prolific-compatible server: a
participant below the block threshold is put in the workspace's blocked group once and gets no
more HITs here; a participant takes the training on the site before their first HIT."""

import re

from annotation import services
from annotation.crowd.services.batch_settings import GoldQuery
from annotation.crowd.services.sync import sync_batch
from annotation.models import Batch, WorkerFlag
from platforms.prolific import provider as prolific_rules
from platforms.prolific import services as prolific_services
from platforms.prolific.models import ProlificSession
from tests.platforms.prolific.fake_server import hexid
from tests.platforms.prolific.test_prolific import (  # noqa: F401  (fixtures)
    Participant,
    _publish,
    batch,
    client_class,
    provider,
    server,
    sleeps,
)


def test_participant_below_the_block_threshold_joins_the_blocked_group_once(
    server,  # noqa: F811
    provider,  # noqa: F811
    batch,  # noqa: F811
    client_class,  # noqa: F811
):
    Batch.objects.filter(pk=batch.pk).update(block_gold_accuracy=0.5, min_answers_judged=1)
    batch.refresh_from_db()
    _publish(batch, provider)
    good = Participant(server, batch.hit_type_id, hexid("PIDGOOD"), client_class)
    careless = Participant(server, batch.hit_type_id, hexid("PIDCARELESS"), client_class)
    good.answer()
    good.complete()
    careless.answer(override={"g1": "f"})  # the check question is Male
    careless.complete()

    result = sync_batch(batch, provider)

    flag = WorkerFlag.objects.get()
    assert result.blocked == [flag.worker.pseudonym] and flag.provider_blocked
    assert flag.reason == "gold accuracy 0.00 < 0.50 over 1 answers"
    (group,) = [g for g in server.groups.values() if g["name"] == prolific_rules.BLOCKED_GROUP]
    assert group["participants"] == {hexid("PIDCARELESS")}
    adds = server.calls.count("add_participants")
    sync_batch(batch, provider)
    assert server.calls.count("add_participants") == adds  # never asked twice

    # Back through the study link with a new session, the blocked participant is given nothing.
    blocked_again = Participant(server, batch.hit_type_id, hexid("PIDCARELESS"), client_class)
    assert blocked_again.arrival.status_code == 200 and b"No task for you right now" in blocked_again.arrival.content
    newcomer = Participant(server, batch.hit_type_id, hexid("PIDNEW"), client_class)
    assert newcomer.arrival.status_code == 302  # the freed place


def test_participants_take_the_training_on_the_site_first(server, provider, query_set, client_class):  # noqa: F811
    from decimal import Decimal

    trained = services.create_batch(
        "pro-trained",
        services.BatchSettings(
            provider="prolific",
            assignments_per_query=2,
            queries_per_hit=3,
            reward=Decimal("0.90"),
            provider_options={"estimated_minutes": 4},
            training_pass_fraction=1.0,
        ),
        query_set=query_set,
        training=[GoldQuery("t1", "what is a mother", "f"), GoldQuery("t2", "how to boil rice", "n")],
    )
    _publish(trained, provider)
    keen = Participant(server, trained.hit_type_id, hexid("PIDKEEN"), client_class)
    assert keen.arrival["Location"] == f"/annotation/prolific/{trained.name}/training/"
    training = keen.browser.get(keen.arrival["Location"]).content.decode()
    assert "what is a mother" in training and 'name="q-2"' in training
    passed = keen.browser.post(keen.arrival["Location"], {"q-1": "f", "q-2": "n"}).content.decode()
    assert "2 of 2" in passed and "You passed" in passed
    onward = re.search(r'href="([^"]*prolific/pro-trained/\?[^"]*)"', passed).group(1).replace("&amp;", "&")
    hit = keen.browser.get(onward)
    assert hit.status_code == 302 and "/annotation/prolific/hits/" in hit["Location"]

    hasty = Participant(server, trained.hit_type_id, hexid("PIDHASTY"), client_class)
    failed = hasty.browser.post(hasty.arrival["Location"], {"q-1": "m", "q-2": "n"}).content.decode()
    assert "1 of 2" in failed and "Please return the study on Prolific" in failed and "Start annotating" not in failed
    assert prolific_services.arrive(trained, ProlificSession.objects.get(session_id=hasty.session)) is None
    # Following the link again shows the result, not a HIT.
    again = hasty.browser.get(
        f"/annotation/prolific/{trained.name}/?PROLIFIC_PID={hexid('PIDHASTY')}&STUDY_ID={trained.hit_type_id}&SESSION_ID={hasty.session}"
    )
    assert again["Location"].endswith("/training/")
    # A browser that did not follow the study link is refused.
    assert client_class().get(f"/annotation/prolific/{trained.name}/training/").status_code == 403
