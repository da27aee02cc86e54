"""The keys of the shared results cache change with everything the cached figures read (from the
review of issue 31's caching: each test failed before its fix)."""

import pytest

from annotation.machine.prelabellers.interface import Prediction
from annotation.machine.report.selectors import calibration_report, report_version
from annotation.machine.services.prelabels import prelabel_batch
from annotation.machine.services.routing import route_batch
from annotation.models import Assignment
from annotation.results.selectors import cache
from annotation.results.selectors import labels as results
from genderbias.labels import LABELS
from tests.annotation.machine.test_routing_service import (  # noqa: F401
    SureMachine,
    _answered_sample,
    _kept_routed_batch,
    routed_batch,
)


class SameIdentityOtherLabels(SureMachine):
    """The same labeller, model and prompt version labelling every query otherwise (a run again
    after its answer cache was cleared): its rows are rewritten in place, ids unchanged."""

    def label(self, queries):
        return [
            Prediction(LABELS[(LABELS.index(p.label) + 1) % len(LABELS)], p.confidence, p.detail)
            for p in super().label(queries)
        ]


def test_machine_labels_rewritten_in_place_change_the_answers_version(routed_batch, settings):  # noqa: F811
    _answered_sample(routed_batch)
    route_batch(routed_batch, 0.9)
    before = results.answers_version(routed_batch)
    results.query_results(routed_batch)  # cached under the old key
    prelabel_batch(routed_batch, SameIdentityOtherLabels())
    assert results.answers_version(routed_batch) != before
    cached = {r["qid"]: r["label"] for r in results.query_results(routed_batch)}
    settings.CACHES = settings.CACHES | {"results": {"BACKEND": "django.core.cache.backends.dummy.DummyCache"}}
    assert cached == {r["qid"]: r["label"] for r in results.query_results(routed_batch)}


def test_voided_sample_answers_change_the_calibration_reports_key(routed_batch):  # noqa: F811
    sample = _answered_sample(routed_batch)
    before, n_before = report_version(routed_batch), calibration_report(routed_batch, bootstrap=10)["n"]
    voided = Assignment.objects.filter(hit__batch=sample, status=Assignment.Status.SUBMITTED)[:10]
    Assignment.objects.filter(pk__in=list(voided.values_list("pk", flat=True))).update(status=Assignment.Status.VOID)
    assert report_version(routed_batch) != before
    assert calibration_report(routed_batch, bootstrap=10)["n"] < n_before


@pytest.mark.django_db
def test_what_another_version_of_the_code_kept_is_not_served(monkeypatch):
    assert cache.remembered("a-key", lambda: "computed by this code") == "computed by this code"
    assert cache.remembered("a-key", lambda: "not called") == "computed by this code"
    monkeypatch.setattr(cache, "code_key", lambda: "a-later-deployment")
    assert cache.remembered("a-key", lambda: "computed by the new code") == "computed by the new code"
