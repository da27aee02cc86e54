"""A report's plots are drawn once and then served as files, with an ETag and a private max-age."""

import pytest

from metrics import plots, services
from metrics.services.plot_cache import plot_key, plot_path
from pooling.models import QuerySet, Run


@pytest.fixture
def report(world):
    runs = [Run.objects.get(name=n) for n in ("a", "b")]
    settings = services.ReportSettings(cutoffs=(1, 2), bootstrap_samples=50)
    return services.build_report("drawn", QuerySet.objects.get(name="q"), runs, settings, bar=False)


@pytest.fixture
def researcher_client(client, django_user_model):
    client.force_login(django_user_model.objects.create_user("res", password="pw-secret-123", is_staff=True))
    return client


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("url", "figure"),
    [
        ("metric.svg?metric=ARaB&variant=tf", "metric_figure"),
        ("distribution.png?cutoff=2", "distribution_figure"),
        ("cutoffs.png", "cutoff_figure"),
    ],
)
@pytest.mark.slow
def test_drawn_once_then_served_from_the_file_and_revalidated_by_etag(
    report, researcher_client, monkeypatch, url, figure
):
    drawn = []
    original = getattr(plots, figure)
    monkeypatch.setattr(plots, figure, lambda *a, **k: drawn.append(1) or original(*a, **k))
    first = researcher_client.get(f"/metrics/{report.name}/{url}")
    second = researcher_client.get(f"/metrics/{report.name}/{url}")
    assert first.status_code == second.status_code == 200
    assert first.content == second.content and len(drawn) == 1
    assert "private" in first["Cache-Control"] and "max-age=86400" in first["Cache-Control"]
    again = researcher_client.get(f"/metrics/{report.name}/{url}", HTTP_IF_NONE_MATCH=first["ETag"])
    assert again.status_code == 304 and len(drawn) == 1


@pytest.mark.django_db
def test_bad_parameters_are_refused_and_nothing_is_stored(report, researcher_client):
    answer = researcher_client.get(f"/metrics/{report.name}/metric.svg?metric=Nope&variant=tf")
    assert answer.status_code == 404
    key = plot_key(report, "metric", {"metric": "Nope", "variant": "tf"})
    assert not plot_path(report, key, "svg").exists()


@pytest.mark.django_db
@pytest.mark.slow
def test_a_report_built_again_under_the_same_name_gets_new_figures(report, researcher_client):
    from metrics.models import Report

    first = researcher_client.get(f"/metrics/{report.name}/cutoffs.png")
    Report.objects.filter(pk=report.pk).delete()
    rebuilt = services.build_report(
        "drawn",
        QuerySet.objects.get(name="q"),
        [Run.objects.get(name="c")],
        services.ReportSettings(cutoffs=(1, 2), bootstrap_samples=50),
        bar=False,
    )
    second = researcher_client.get(f"/metrics/{rebuilt.name}/cutoffs.png")
    assert first["ETag"] != second["ETag"] and first.content != second.content


@pytest.mark.django_db
def test_parameters_a_figure_does_not_read_make_no_new_file(report, researcher_client):
    """Only the figure's own parameters key it: ?x=1, ?x=2 … never draw and store more files."""
    from pathlib import Path

    first = researcher_client.get(f"/metrics/{report.name}/metric.svg?metric=ARaB&variant=tf")
    other = researcher_client.get(f"/metrics/{report.name}/metric.svg?metric=ARaB&variant=tf&x=1&y=2")
    assert first["ETag"] == other["ETag"]
    folder = Path(plot_path(report, "k", "svg")).parent
    assert len(list(folder.glob("*.svg"))) == 1
