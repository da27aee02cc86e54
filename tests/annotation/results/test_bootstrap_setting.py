"""One bootstrap setting behind every 95% CI of alpha: command, data card, page and API
show the same interval and say how many resamples it rests on."""

import json
import re
from io import StringIO

import pytest
from django.core.management import call_command

from annotation.exports.services import export_for_download
from annotation.results.selectors.agreement import agreement
from platforms.inhouse.services.handout import next_assignment
from platforms.inhouse.services.hit_page import submit_local_assignment
from tests.annotation.conftest import answers_for


@pytest.fixture
def answered(local_batch, annotators):
    for index, user in enumerate(annotators[:2]):
        while (assignment := next_assignment(user, local_batch)) is not None:
            # The second annotator disagrees on two queries: alpha < 1 and its interval has width.
            override = {"101": "f", "105": "m"} if index == 1 else None
            submit_local_assignment(assignment, answers_for(assignment, override=override))
    return local_batch


def test_every_interval_uses_the_setting_and_says_so(answered, researcher, client, settings):
    settings.AGREEMENT_BOOTSTRAP_RESAMPLES = 37
    expected = agreement(answered, bootstrap=37)
    assert expected["bootstrap_resamples"] == 37 and expected["alpha_ci"][0] is not None
    assert agreement(answered, bootstrap=38)["alpha_ci"] != expected["alpha_ci"]  # the count matters

    client.force_login(researcher)
    api = client.get("/api/annotation/batches/b1/agreement/").json()
    assert (api["alpha_ci"], api["bootstrap_resamples"]) == (expected["alpha_ci"], 37)

    page = client.get("/annotation/batches/b1/agreement/").content.decode()
    low, high = (f"{v:.3f}" for v in expected["alpha_ci"])
    assert re.search(rf"95% CI {low}–{high} \(37 bootstrap resamples\)", page)

    out = StringIO()
    call_command("agreement", "b1", "--json", stdout=out)
    command = json.loads(out.getvalue())
    assert (command["alpha_ci"], command["bootstrap_resamples"]) == (expected["alpha_ci"], 37)

    export = export_for_download(answered, "all", "tsv")
    assert "| Bootstrap resamples behind the interval | 37 |" in export.card


def test_the_default_is_a_thousand_resamples(settings):
    from config.settings import AGREEMENT_BOOTSTRAP_RESAMPLES

    assert AGREEMENT_BOOTSTRAP_RESAMPLES == 1000
