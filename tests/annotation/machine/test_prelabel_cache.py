"""The chat labeller's answer cache: bounded (test_prelabel_hostile) and cleared from the page,
the API and a command (issue 27.4). The cache is filled over real HTTP from the fake endpoint."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse

from annotation.machine.services.prelabels import prelabel_batch
from annotation.models import PreLabel, PreLabelAnswer
from core.converters import encode_key
from tests.annotation.machine.test_prelabel import batch, fake_openai  # noqa: F401  (fixtures)

OTHER = "org/other-model:7b"  # a model name with characters a URL segment cannot hold as they are


@pytest.fixture
def cached(fake_openai, batch):  # noqa: F811
    """Six queries' answers of the fake's model, and two stored rows of another model."""
    prelabel_batch(batch, "openai")
    for text in ("a", "b"):
        PreLabelAnswer.objects.create(model=OTHER, prompt_version="v9", text_sha256=text * 64, text=text, answers=["n"])
    return fake_openai


def test_the_api_lists_and_clears_one_models_cache(cached, batch, client, researcher):  # noqa: F811
    client.force_login(researcher)
    listed = client.get("/api/annotation/prelabel-cache/").json()
    assert [(r["model"], r["prompt_version"], r["queries"]) for r in listed] == [
        (OTHER, "v9", 2),
        ("test-model", "gender-v2", 6),
    ]
    url = f"/api/annotation/prelabel-cache/{encode_key(OTHER)}/"
    answer = client.delete(url)
    assert answer.status_code == 200 and answer.json() == {"model": OTHER, "prompt_version": None, "deleted": 2}
    assert set(PreLabelAnswer.objects.values_list("model", flat=True)) == {"test-model"}
    again = client.delete(url)
    assert again.status_code == 404 and "no cached answers" in again.json()["detail"]
    wrong = client.delete("/api/annotation/prelabel-cache/test-model/?prompt_version=nope")
    assert wrong.status_code == 404 and PreLabelAnswer.objects.count() == 6


def test_after_clearing_a_run_asks_again_and_labels_are_kept(cached, batch, client, researcher):  # noqa: F811
    client.force_login(researcher)
    assert client.delete("/api/annotation/prelabel-cache/test-model/?prompt_version=gender-v2").json()["deleted"] == 6
    assert PreLabel.objects.filter(labeller="openai").count() == 6  # stored labels stay
    requests = len(cached.requests)
    prelabel_batch(batch, "openai")
    assert len(cached.requests) == requests + 6


def test_only_researchers_clear_the_cache(cached, client, django_user_model):
    client.force_login(django_user_model.objects.create_user("annotator", password="x"))
    assert client.delete("/api/annotation/prelabel-cache/test-model/").status_code == 403
    assert client.get("/api/annotation/prelabel-cache/").status_code == 403
    assert PreLabelAnswer.objects.count() == 8


def test_the_machine_page_shows_and_clears_the_cache(cached, batch, client, researcher):  # noqa: F811
    client.force_login(researcher)
    page = client.get(reverse("annotation:batch-machine", args=[batch.name])).content.decode()
    assert 'id="cache-table"' in page and "org/other-model:7b" in page
    url = reverse("annotation:batch-prelabel-cache", args=[batch.name])
    answer = client.post(url, {"model": OTHER, "prompt_version": "v9"}, follow=True)
    assert "Forgot the cached answers to 2 queries of org/other-model:7b (v9)." in answer.content.decode()
    assert not PreLabelAnswer.objects.filter(model=OTHER).exists()
    refused = client.post(url, {"model": "nothing-here"}, follow=True)
    assert "no cached answers of &#x27;nothing-here&#x27;" in refused.content.decode()
    assert client.get(url).status_code == 405


def test_the_command_lists_and_clears(cached):
    out = StringIO()
    call_command("prelabel_cache", stdout=out)
    assert f"{OTHER}\tv9\t2 queries" in out.getvalue() and "test-model\tgender-v2\t6 queries" in out.getvalue()
    out = StringIO()
    call_command("prelabel_cache", "--clear", "--model", "test-model", stdout=out)
    assert "6 query text(s) of test-model" in out.getvalue()
    assert set(PreLabelAnswer.objects.values_list("model", flat=True)) == {OTHER}
    with pytest.raises(CommandError, match="no cached answers of 'test-model'"):
        call_command("prelabel_cache", "--clear", "--model", "test-model")
    with pytest.raises(CommandError, match="name the model"):
        call_command("prelabel_cache", "--clear")


def test_the_commands_explain_their_options():
    from annotation.management.commands import prelabel, prelabel_cache

    text = " ".join(prelabel.Command().create_parser("manage.py", "prelabel").format_help().split())
    assert "--labeller {openai,rules,trained} the machine: rules" in text and "PRELABEL_JOB_DEADLINE" in text
    text = " ".join(prelabel_cache.Command().create_parser("manage.py", "prelabel_cache").format_help().split())
    assert "--clear forget the cached answers of --model" in text
