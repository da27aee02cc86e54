"""The plot cache keys on the parameters' values, refuses numbers not in ASCII digits with a 400
naming the field, and holds at most ``PLOT_CACHE_MAX_BYTES`` (issue 44.2)."""

import os

import pytest

from metrics import plots, services
from metrics.services.plot_cache import PlotParameterError, cached_plot, evict, normalised, plot_key, plot_path
from pooling.models import QuerySet, Run


@pytest.fixture
def report(world):
    settings = services.ReportSettings(cutoffs=(1, 2, 10), bootstrap_samples=20)
    return services.build_report(
        "keyed", QuerySet.objects.get(name="q"), [Run.objects.get(name="a")], settings, bar=False
    )


@pytest.fixture
def researcher_client(client, django_user_model):
    client.force_login(django_user_model.objects.create_user("res", password="pw-secret-123", is_staff=True))
    return client


def test_numbers_are_keyed_by_their_value_and_text_as_stripped():
    assert (
        normalised({"cutoff": "10"})
        == normalised({"cutoff": "010"})
        == normalised({"cutoff": " 10 "})
        == {"cutoff": 10}
    )
    assert normalised({"metric": " ARaB ", "variant": "tf"}) == {"metric": "ARaB", "variant": "tf"}


@pytest.mark.parametrize("typed", ["١٠", "1_0", "+10", "²", "①", "1e1", "10.0", "", "9" * 10, "１０"])
def test_a_number_not_in_ascii_digits_is_refused_naming_the_field(typed):
    with pytest.raises(PlotParameterError) as err:
        normalised({"cutoff": typed})
    assert err.value.field == "cutoff" and str(err.value).startswith("cutoff: ")


@pytest.mark.django_db
@pytest.mark.slow
def test_one_figure_for_every_spelling_of_one_cutoff(report, researcher_client, monkeypatch):
    drawn = []
    original = plots.distribution_figure
    monkeypatch.setattr(plots, "distribution_figure", lambda *a, **k: drawn.append(1) or original(*a, **k))
    tags = set()
    for typed in ("10", "010", "0010", " 10"):
        answer = researcher_client.get(f"/metrics/{report.name}/distribution.png", {"cutoff": typed})
        assert answer.status_code == 200
        tags.add(answer["ETag"])
    assert len(tags) == 1 and drawn == [1]
    assert tags == {f'"{plot_key(report, "distribution", {"cutoff": "10"})}"'}


@pytest.mark.django_db
@pytest.mark.parametrize("typed", ["١٠", "1_0", "+10", "²"])
def test_the_plot_endpoints_answer_400_naming_the_field_and_store_nothing(report, researcher_client, typed):
    folder = plot_path(report, "x", "png").parent
    before = set(folder.iterdir())
    for url in (f"/metrics/{report.name}/distribution.png", f"/metrics/{report.name}/labels.svg"):
        answer = researcher_client.get(url, {"cutoff": typed, "metric": "ARaB", "variant": "tf"})
        assert answer.status_code == 400, answer.content
        assert answer.content.decode().startswith("cutoff: ")
    assert set(folder.iterdir()) == before


@pytest.mark.django_db
def test_the_files_stay_under_the_bound_least_recently_drawn_first(report, settings):
    settings.PLOT_CACHE_MAX_BYTES = 2500
    paths = []
    for i in range(8):  # 8 figures of 1,000 bytes, each older than the next
        path, _ = cached_plot(report, "test", {"n": str(i)}, "png", lambda: b"x" * 1000)
        os.utime(path, (1_000_000 + i, 1_000_000 + i))
        paths.append(path)
        held = [p for p in plot_path(report, "x", "png").parent.parent.rglob("*") if p.is_file()]
        assert sum(p.stat().st_size for p in held) <= 2500
    assert [p.exists() for p in paths] == [False] * 6 + [True] * 2
    # A figure evicted is drawn again when asked for.
    drawn = []
    cached_plot(report, "test", {"n": "0"}, "png", lambda: drawn.append(1) or b"y" * 1000)
    assert drawn == [1]
    assert not paths[6].exists() and paths[7].exists()  # the redrawn figure pushed out the oldest left
    assert evict(max_bytes=0) == 2 and evict(max_bytes=0) == 0
