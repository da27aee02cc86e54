"""The figures of the studies beside a report, drawn as PNGs on their own pages: label sensitivity, CRBO
(a run against its counterfactual) and the variants' preference. Drawn as :mod:`metrics.plots` draws."""

from __future__ import annotations

import pandas as pd
from matplotlib.figure import Figure

from genderbias.ranking.vocabulary import is_rab_like, note

from .plots import panels, png_bytes, with_tie_ranges, wrap_label


def sensitivity_figure(table: pd.DataFrame, cutoff: int) -> bytes:
    """Label sensitivity at one cutoff: one panel per metric and variant, one point per
    (aggregation, disputed policy) and run, with its bootstrap 95% CI as an error bar; the
    majority/drop configuration (the SIGIR 2020 choice) is first and shaded."""
    data = table[table["cutoff"] == cutoff] if len(table) else table
    shown = panels(data)
    configurations = list(dict.fromkeys(zip(data["aggregation"], data["disputed"], strict=True))) if len(data) else []
    runs = list(dict.fromkeys(data["run"])) if len(data) else []
    columns = min(2, max(1, len(shown)))
    rows = max(1, -(-len(shown) // columns))
    figure = Figure(figsize=(6.4 * columns, 3.6 * rows), layout="constrained")
    positions = {configuration: i for i, configuration in enumerate(configurations)}
    width = 0.8 / max(1, len(runs))
    for p, (metric, variant) in enumerate(shown):
        axes = figure.add_subplot(rows, columns, p + 1)
        panel = data[(data["metric"] == metric) & (data["variant"] == variant)]
        axes.axvspan(-0.5, 0.5, color="0.92")
        for r, run in enumerate(runs):
            points = panel[panel["run"] == run]
            x = [
                positions[(a, d)] - 0.4 + width * (r + 0.5)
                for a, d in zip(points["aggregation"], points["disputed"], strict=True)
            ]
            values = points["value"].astype(float).to_numpy()
            low = values - points["ci_low"].astype(float).to_numpy()
            high = points["ci_high"].astype(float).to_numpy() - values
            axes.errorbar(x, values, yerr=[low, high], fmt="o", markersize=3, capsize=2, label=run)
        if is_rab_like(metric):
            axes.axhline(0.0, color="0.6", linewidth=0.8)
        axes.set_title(f"{metric}@{cutoff} [{variant}]")
        axes.set_xticks(
            range(len(configurations)),
            [f"{a}/{d}" for a, d in configurations],
            rotation=60,
            ha="right",
            rotation_mode="anchor",
            fontsize="x-small",
        )
        axes.set_ylabel(wrap_label(note(metric), 32), fontsize="small")
    if shown:
        handles, labels = figure.axes[0].get_legend_handles_labels()
        handles, labels = with_tie_ranges(figure, handles, labels)
        figure.legend(handles, labels, loc="outside lower center", ncols=min(len(runs), 6))
    return png_bytes(figure)


def crbo_figure(values: list[float], depth: int) -> bytes:
    """Per-query RBO between a run and its counterfactual run: a histogram, with the mean
    (CRBO) marked; 1 means swapping genders left the top ``depth`` unchanged."""
    figure = Figure(figsize=(6.0, 3.4), layout="constrained")
    axes = figure.add_subplot()
    if values:
        axes.hist(values, bins=20, range=(0.0, 1.0), color="#4c72b0")
        mean = sum(values) / len(values)
        axes.axvline(mean, color="#c44e52", linewidth=1.5, label=f"CRBO {mean:.3f}")
        axes.legend(loc="upper left")
    axes.set_xlim(0.0, 1.0)
    axes.set_xlabel(f"RBO@{depth} of a query (1: unchanged by the swap)")
    axes.set_ylabel("queries")
    return png_bytes(figure)


def preference_figure(fractions: dict[str, float | None]) -> bytes:
    """Share of the decided cases each version won; an even split is drawn as a line."""
    figure = Figure(figsize=(5.0, 3.2), layout="constrained")
    axes = figure.add_subplot()
    versions = list(fractions)
    axes.bar(versions, [fractions[v] or 0.0 for v in versions], color="#4c72b0")
    if versions:
        axes.axhline(1 / len(versions), color="0.5", linewidth=0.8, linestyle="--", label="no preference")
        axes.legend(loc="upper right")
    axes.set_ylim(0.0, 1.0)
    axes.set_xlabel("version scored highest")
    axes.set_ylabel("share of decided cases")
    return png_bytes(figure)
