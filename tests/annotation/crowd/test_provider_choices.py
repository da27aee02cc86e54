"""The stored provider's choices come from the platforms' registry (issue 42, item 1: "the list of
providers is derived from the registry"): every platform of ``PLATFORMS`` is a choice, labelled by its
provider class, the stored names unchanged, and a new platform needs no migration."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command

from annotation.crowd.providers import base
from annotation.crowd.providers.base import provider_class
from annotation.crowd.providers.registry import PLATFORMS, platform_choices
from annotation.models import Batch, Provider, Worker, WorkerIdentity

STORED = [(Batch, "provider"), (Worker, "provider"), (WorkerIdentity, "provider")]


@pytest.mark.parametrize(("model", "name"), STORED)
def test_every_platform_is_a_choice_labelled_by_its_provider(model, name):
    field = model._meta.get_field(name)
    assert list(field.choices) == [(platform, provider_class(platform).label) for platform in PLATFORMS]
    assert ("taskbuilder", "Prolific Task Builder (hosted by Prolific)") in field.choices
    field.clean("taskbuilder", None)  # a Task Builder worker or batch is valid
    with pytest.raises(ValidationError, match="not a valid choice"):
        field.clean("crowdflower", None)


def test_the_stored_names_are_unchanged_and_the_members_follow_the_registry():
    assert (Provider.LOCAL, Provider.MTURK, Provider.PROLIFIC) == ("local", "mturk", "prolific")
    assert Provider.TASKBUILDER == "taskbuilder"
    assert Provider.values == list(PLATFORMS)
    assert [(value, str(label)) for value, label in Provider.choices] == platform_choices()
    assert Provider("mturk").label == "Amazon Mechanical Turk"


def test_a_batch_shows_its_platform_by_its_label():
    assert Batch(provider="taskbuilder").get_provider_display() == "Prolific Task Builder (hosted by Prolific)"
    assert Batch(provider="local").get_provider_display() == "In-house annotators (this site)"


@pytest.mark.django_db
def test_a_new_platform_needs_no_migration(monkeypatch):
    """The fields keep a reference to ``platform_choices``, not its list: one more line in ``PLATFORMS``
    (its provider registered) leaves the models as the migrations end them."""

    class Elsewhere(base.CrowdProvider):
        label = "Somewhere else"

    monkeypatch.setitem(base._REGISTRY._classes, "elsewhere", Elsewhere)
    monkeypatch.setitem(PLATFORMS, "elsewhere", "platforms.elsewhere")
    assert ("elsewhere", "Somewhere else") in Batch._meta.get_field("provider").choices
    call_command("makemigrations", "annotation", check=True, dry_run=True, verbosity=0)
