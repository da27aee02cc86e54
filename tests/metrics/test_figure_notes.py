"""What the report says of a figure travels with it (issue 67): the results CSV and the API carry the
tie range and the sign warning the page shows, and the plots draw the tie range beside the interval.
Expected ranges are written out from the definitions on :mod:`tests.metrics.test_report_ties`' hand-made
passages: RaB@1 [tf] of the run ``tied`` is over its three queries (−ln 4 or +ln 4, 0, +ln 4) / 3, from 0
to 2 ln 4 / 3."""

from __future__ import annotations

import csv
import io
import math

import pytest

from metrics import plots, selectors
from metrics.models import Report

from .test_report_ties import LN4, report_command, tied_world  # noqa: F401

RANGE = (0.0, 2 * LN4 / 3)


def drawn_tie_ranges(monkeypatch, draw) -> list[tuple[float, float, float]]:
    """(x, low, high) of every tie range a figure draws (its artists with the tie ranges' gid)."""
    figures = []
    save = plots._save

    def keep(figure, format):
        figures.append(figure)
        return save(figure, format)

    monkeypatch.setattr(plots, "_save", keep)
    draw()
    (figure,) = figures
    return [
        (float(segment[0][0]), float(min(segment[:, 1])), float(max(segment[:, 1])))
        for axes in figure.axes
        for collection in axes.collections
        if collection.get_gid() == plots.TIE_RANGE_GID
        for segment in collection.get_segments()
    ]


@pytest.mark.django_db
def test_csv_and_api_say_what_the_page_says(tied_world, admin_client):  # noqa: F811
    report_command(tied_world, name="r")
    text = admin_client.get("/metrics/r/results.csv").content.decode()
    rows = {(r["run"], r["metric"], r["variant"], r["cutoff"]): r for r in csv.DictReader(io.StringIO(text))}
    rab = rows[("tied", "RaB", "tf", "1")]
    assert rab["notes"].startswith(f"ties {RANGE[0]:.4f} … {RANGE[1]:.4f}")
    assert rows[("plain", "RaB", "tf", "1")]["notes"] == ""
    detail = admin_client.get("/api/metrics/reports/r/").json()
    page = admin_client.get("/metrics/r/").content.decode()
    for result in detail["results"]:
        low, high = result["tie_low"], result["tie_high"]
        undecided = result["metric"] in ("RaB", "ARaB") and low is not None and low <= 0 <= high
        assert result["sign_undecided"] is undecided
        assert ("holds 0: the ranking does not decide the sign" in " ".join(result["notes"])) is undecided
        row = rows[(result["run"], result["metric"], result["variant"], str(result["cutoff"]))]
        assert row["notes"] == "; ".join(result["notes"])
    flagged = sum(r["sign_undecided"] for r in detail["results"])
    assert (f"{flagged} figure" in page) == bool(flagged)


@pytest.mark.django_db
def test_the_plots_draw_the_tie_range_beside_the_interval(tied_world, monkeypatch):  # noqa: F811
    report_command(tied_world, name="r")
    summary = selectors.report_summary(Report.objects.get(name="r"))
    moved = summary[summary["tie_low"].notna()]
    for draw in (
        lambda: plots.cutoff_figure(summary[summary["metric"] == "RaB"]),
        lambda: plots.cutoff_figure(summary[summary["metric"] == "RaB"], format="pdf"),
        lambda: plots.metric_figure(summary, "RaB", "tf"),
    ):
        drawn = drawn_tie_ranges(monkeypatch, draw)
        monkeypatch.undo()
        assert any(
            math.isclose(low, RANGE[0], abs_tol=1e-12) and math.isclose(high, RANGE[1]) and 1 <= x < 2
            for x, low, high in drawn
        ), drawn
    everything = drawn_tie_ranges(monkeypatch, lambda: plots.cutoff_figure(summary))
    assert len(everything) == len(moved)
