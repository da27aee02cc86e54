"""Block thresholds on Prolific, over the Prolific-compatible server: a participant below the
block threshold is put in the workspace's blocked group once, and gets no more HITs here."""

from annotation import services
from annotation.models import Batch, WorkerFlag
from annotation.services import prolific as prolific_services

from .test_prolific import Participant, _publish, batch, client_class, provider, server, sleeps  # noqa: F401  (fixtures)


def test_participant_below_the_block_threshold_joins_the_blocked_group_once(
    server,  # noqa: F811
    provider,  # noqa: F811
    batch,  # noqa: F811
    client_class,  # noqa: F811
):
    Batch.objects.filter(pk=batch.pk).update(block_gold_accuracy=0.5, min_answers_judged=1)
    batch.refresh_from_db()
    _publish(batch, provider)
    good = Participant(server, batch.hit_type_id, "PIDGOOD", client_class)
    careless = Participant(server, batch.hit_type_id, "PIDCARELESS", client_class)
    good.answer()
    good.complete()
    careless.answer(override={"g1": "f"})  # the check question is Male
    careless.complete()

    result = services.sync_batch(batch, provider)

    flag = WorkerFlag.objects.get()
    assert result.blocked == [flag.worker.pseudonym] and flag.provider_blocked
    assert flag.reason == "gold accuracy 0.00 < 0.50 over 1 answers"
    (group,) = [g for g in server.groups.values() if g["name"] == prolific_services.BLOCKED_GROUP]
    assert group["participants"] == {"PIDCARELESS"}
    adds = server.calls.count("add_participants")
    services.sync_batch(batch, provider)
    assert server.calls.count("add_participants") == adds  # never asked twice

    # Back through the study link, the blocked participant is given nothing.
    assert prolific_services.arrive(batch, "PIDCARELESS", batch.hit_type_id, "another-session") is None
    assert prolific_services.arrive(batch, "PIDNEW", batch.hit_type_id, "new-session") is not None  # the freed place
