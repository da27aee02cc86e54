"""Prolific in the kernel's batch form and hooks: what the annotation app's pages and start-up do for a
Prolific batch, tested with Prolific (the kernel's own tests run without it: tests/test_platform_removal.py)."""

import pytest
from django.urls import reverse

from annotation.crowd.services import hooks
from annotation.models import Batch
from tests.annotation.crowd.test_site_batches import FORM

pytestmark = pytest.mark.django_db


def _names(functions) -> list[str]:
    return [f"{f.__module__}.{f.__qualname__}" for f in functions]


def test_the_prolific_app_plugs_its_hooks_in_when_ready():
    """platforms.prolific.PLUG_INS are imported as the apps are ready: no caller imports them first."""
    assert _names(hooks.sync_steps.for_provider("prolific")) == [
        "annotation.machine.services.held_out.reoffer_held_out",  # before the loop: held-out places re-offered
        "annotation.quality.services.loop.close_the_loop",
        "annotation.machine.services.after_sync.report_after_sync",
    ]
    assert _names(hooks.published.for_provider("prolific")) == [
        "platforms.prolific.webhooks.services.subscriptions.follow_published"
    ]
    assert _names([hooks.platform_syncs.get("prolific")]) == ["platforms.prolific.services.sync_prolific_batch"]


def test_prolific_eligibility_from_the_form_reaches_the_batch_and_is_refused_elsewhere(query_set, researcher, client):
    client.force_login(researcher)
    prolific = {"estimated_minutes": 7, "devices": ["desktop", "mobile"], "bonus": "0.25"}
    response = client.post(
        reverse("annotation:batch-create"), {**FORM, "name": "web", "queries": "gq", "provider": "prolific", **prolific}
    )
    assert response.status_code == 302
    options = Batch.objects.get(name="web").provider_options
    assert options.pop("completion_code")  # made at random for every Prolific batch
    assert options.pop("return_code")  # and the code that has Prolific return a participant with no task
    assert options == {
        "estimated_minutes": 7,
        "devices": ["desktop", "mobile"],
        "bonus_rule": {"kind": "flat", "amount": "0.25", "at_sync": True},  # the bonus: a flat rule paid at sync
    }
    response = client.post(reverse("annotation:batch-create"), {**FORM, "name": "web2", "queries": "gq", **prolific})
    assert response.status_code == 400
    assert "Prolific options only apply to the prolific provider" in response.content.decode()
