"""A stored report keeps the methods that computed it (issue 67, item 2): its page and its paper's methods
text describe it by its recorded versions (core.methods), and when today's version of a method it
used differs, the page says so, shows both, and offers to build it again."""

from __future__ import annotations

import pytest
from django.utils.html import escape

from core import methods
from genderbias.stats import intervals
from metrics import services
from metrics.models import Report
from metrics.selectors import report_summary
from pooling.models import Run
from publishing.metrics_text import metrics_paragraph
from publishing.services.records import report_settings

SETTINGS = services.ReportSettings(cutoffs=(1, 2), bootstrap_samples=200, seed=3)
#: The words of the interval construction the report is computed with (genderbias.stats.intervals), read
#: from its own table, not from core.methods.
BUILT_WITH = intervals.DESCRIPTIONS[intervals.LABEL_INTERVAL]
LATER = "percentile bootstrap interval of a later method, named only by this test"


@pytest.fixture
def built(batch, world):
    runs = [Run.objects.get(name=n) for n in ("a", "b", "c")]
    return services.build_batch_report("kept", batch, runs, SETTINGS, baseline=runs[0], bar=False)


@pytest.fixture
def later_interval(monkeypatch):
    """A new version of the interval construction, as a change that moves the figures would declare it."""
    monkeypatch.setitem(methods.METHODS, "label_interval", {**methods.METHODS["label_interval"], "later": LATER})
    monkeypatch.setitem(methods.CURRENT, "label_interval", "later")


@pytest.mark.django_db
def test_a_report_built_before_a_method_change_keeps_its_methods_text_and_offers_the_rebuild(
    built, client, django_user_model, later_interval, django_capture_on_commit_callbacks
):
    assert built.methods["label_interval"] == intervals.LABEL_INTERVAL
    client.force_login(django_user_model.objects.create_user("r", password="pw", is_staff=True))
    page = client.get(f"/metrics/{built.name}/").content.decode()
    note = page.split('id="labels-note"', 1)[1].split("</p>", 1)[0]
    assert escape(BUILT_WITH) in note and LATER not in note
    changes = page.split('id="method-changes"', 1)[1].split("</div>", 1)[0]
    assert escape(BUILT_WITH) in changes and LATER in changes and 'id="rebuild"' in changes
    # The paper's methods text: the report's own construction, not today's.
    text = metrics_paragraph(report_settings(built, report_summary(built)))
    assert BUILT_WITH in text
    assert LATER not in text

    with django_capture_on_commit_callbacks(execute=True):
        answer = client.post(f"/metrics/{built.name}/rebuild/")
    assert answer.status_code == 302
    rebuilt = Report.objects.get(name="kept-rebuilt")
    assert rebuilt.methods["label_interval"] == "later" and rebuilt.label_batch == built.label_batch
    assert (rebuilt.cutoffs, rebuilt.seed, rebuilt.bootstrap_samples, rebuilt.baseline) == (
        built.cutoffs, built.seed, built.bootstrap_samples, built.baseline
    )  # fmt: skip
    built.refresh_from_db()
    assert built.methods["label_interval"] == intervals.LABEL_INTERVAL  # the old report is left as it was
    again = client.get(f"/metrics/{built.name}/").content.decode()
    assert "/metrics/kept-rebuilt/" in again
    assert 'id="method-changes"' not in client.get("/metrics/kept-rebuilt/").content.decode()


@pytest.mark.django_db
def test_a_report_of_todays_methods_shows_no_change(built, client, django_user_model):
    client.force_login(django_user_model.objects.create_user("r", password="pw", is_staff=True))
    page = client.get(f"/metrics/{built.name}/").content.decode()
    assert 'id="method-changes"' not in page and escape(BUILT_WITH) in page
