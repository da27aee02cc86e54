"""Numbers in a request read as plain ASCII digits (issue 44.5): ``"²".isdigit()`` is true and
``int("²")`` raises, so a check by ``isdigit`` let a superscript through to a 500."""

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
    """``float()`` read ``rules:٠.٥`` as a floor of 0.5; every number is plain ASCII (core.numbers)."""
    import pytest

    from annotation.machine.services.routing import parse_cascade
    from core.errors import ServiceError

    assert parse_cascade(["rules:0.5", "trained"]) == [("rules", 0.5), ("trained", None)]
    for item in ("rules:٠.٥", "rules:nan", "rules:5e-1", "rules:1.5"):
        with pytest.raises(ServiceError, match="must be a confidence in"):
            parse_cascade([item])


def test_an_escalations_posterior_is_a_plain_decimal():
    import pytest

    from annotation.quality.services.escalation import parse_until
    from core.errors import ServiceError

    assert parse_until("posterior:0.9") == 0.9 and parse_until("majority") is None
    for text in ("posterior:٠.٩", "posterior:9e-1", "posterior:nan"):
        with pytest.raises(ServiceError, match="--until"):
            parse_until(text)
