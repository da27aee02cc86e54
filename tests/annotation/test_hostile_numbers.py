"""Numbers in a request read as plain ASCII digits (issue 44.5): ``"²".isdigit()`` is true and
``int("²")`` raises, so a check by ``isdigit`` let a superscript through to a 500."""

import pytest
from django.urls import reverse


def test_a_superscript_content_length_is_refused_not_a_500(client, db):
    url = reverse("annotation:prolific-webhook")
    answer = client.post(url, b"{}", content_type="application/json", CONTENT_LENGTH="²")
    assert answer.status_code == 413 and answer.json()["error"] == "too_large"


def test_a_superscript_escalation_cap_in_the_link_is_ignored_not_a_500(local_batch, researcher, client):
    client.force_login(researcher)
    url = reverse("annotation:batch-escalate", args=[local_batch.name])
    assert client.get(url, {"max_assignments": "²"}).status_code == 200  # the default cap, as for any bad value
    assert client.get(url, {"max_assignments": "3"}).status_code == 200


def test_a_cascade_floor_is_a_plain_decimal():
    """``float()`` read ``rules:٠.٥`` as a floor of 0.5; every number is plain ASCII (genderbias.numbers)."""
    import pytest

    from annotation.machine.services.routing import parse_cascade
    from core.errors import ServiceError

    assert parse_cascade(["rules:0.5", "trained"]) == [("rules", 0.5), ("trained", None)]
    assert parse_cascade(["rules:5e-1", "trained:.75"]) == [("rules", 0.5), ("trained", 0.75)]  # as pasted (issue 53)
    for item in ("rules:٠.٥", "rules:nan", "rules:5_0e-2", "rules:1.5"):
        with pytest.raises(ServiceError, match="must be a confidence in"):
            parse_cascade([item])


def test_an_escalations_posterior_is_a_plain_decimal():
    import pytest

    from annotation.quality.services.escalation import parse_until
    from core.errors import ServiceError

    assert parse_until("posterior:0.9") == 0.9 and parse_until("majority") is None
    assert parse_until("posterior:9e-1") == 0.9 and parse_until("posterior:.95") == 0.95  # as pasted (issue 53)
    for text in ("posterior:٠.٩", "posterior:9_0e-2", "posterior:nan"):
        with pytest.raises(ServiceError, match="--until"):
            parse_until(text)


@pytest.mark.parametrize("cap", ["1_0", "٣", "²", "①", "+3", "3.0"])
def test_the_escalate_page_and_api_refuse_a_cap_python_would_read(
    cap, local_batch, annotators, researcher, client, django_capture_on_commit_callbacks
):
    """Issue 53: the page's ``forms.IntegerField`` and the API's DRF field read ``1_0`` as 10 and
    ``٣`` as 3, and started the paid escalation; both now read through ``genderbias.numbers``."""
    from annotation.models import Hit
    from core.models import Job
    from platforms.inhouse.services.handout import next_assignment
    from platforms.inhouse.services.hit_page import submit_local_assignment
    from tests.annotation.conftest import answers_for

    for index, user in enumerate(annotators[:2]):
        while (assignment := next_assignment(user, local_batch)) is not None:
            override = {"101": "f"} if index == 1 else None  # one disputed query: escalation has work
            submit_local_assignment(assignment, answers_for(assignment, override=override))
    before = dict(Hit.objects.values_list("pk", "max_assignments"))
    client.force_login(researcher)
    url = reverse("annotation:batch-escalate", args=[local_batch.name])
    hits = ",".join(str(pk) for pk in before)
    with django_capture_on_commit_callbacks(execute=True):
        page = client.post(url, {"max_assignments": cap, "until": "majority", "confirm": "on", "hits": hits})
        api = client.post(
            f"/api/annotation/batches/{local_batch.name}/escalate/",
            {"max_assignments": cap},
            content_type="application/json",
        )
    assert page.status_code == 200 and "is not a whole number" in page.content.decode()
    assert api.status_code == 400 and "max_assignments" in api.json(), api.content
    assert not Job.objects.filter(kind__contains="escalat").exists()
    assert dict(Hit.objects.values_list("pk", "max_assignments")) == before
