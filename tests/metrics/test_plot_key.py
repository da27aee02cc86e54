"""A figure cached by older drawing code is never served by newer code: the key holds the drawing's version."""

import pytest

from metrics import plots, services
from metrics.services.plot_cache import plot_key
from pooling.models import QuerySet, Run


@pytest.mark.django_db
def test_a_new_drawing_version_draws_again(world, client, django_user_model, monkeypatch):
    report = services.build_report(
        "keyed", QuerySet.objects.get(name="q"), [Run.objects.get(name="a")],
        services.ReportSettings(cutoffs=(1, 2), bootstrap_samples=20), bar=False,
    )  # fmt: skip
    client.force_login(django_user_model.objects.create_user("res", password="pw-secret-123", is_staff=True))
    url = f"/metrics/{report.name}/metric.svg?metric=ARaB&variant=tf"
    first = client.get(url)
    params = {"metric": "ARaB", "variant": "tf"}
    assert first["ETag"] == f'"{plot_key(report, "metric", params)}"'
    drawn = []
    original = plots.metric_figure
    monkeypatch.setattr(plots, "metric_figure", lambda *a, **k: drawn.append(1) or original(*a, **k))
    monkeypatch.setattr(plots, "DRAWING", plots.DRAWING + 1)
    second = client.get(url, HTTP_IF_NONE_MATCH=first["ETag"])
    assert second.status_code == 200 and second["ETag"] != first["ETag"] and drawn == [1]
