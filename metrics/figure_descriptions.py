"""What a report's figures show, in words from their data: the ``\\Description`` of each figure of a
paper bundle (ACM's accessibility text), for readers who cannot see it. Pure (pandas only, no drawing)."""

from __future__ import annotations

import pandas as pd

from .plots import panels


def _listed(names: list[str], most: int = 8) -> str:
    shown = names[:most] + ([f"{len(names) - most} more"] if len(names) > most else [])
    return ", ".join(shown[:-1]) + f" and {shown[-1]}" if len(shown) > 1 else "".join(shown)


def _extremes(values: pd.Series) -> str:
    """``highest RUN 0.123, lowest RUN -0.045`` of a run-indexed series (NaN left out)."""
    values = values.dropna()
    if not len(values):
        return "no value"
    if len(values) == 1:
        return f"{values.index[0]} {values.iloc[0]:.3f}"
    return f"highest {values.idxmax()} {values.max():.3f}, lowest {values.idxmin()} {values.min():.3f}"


def cutoff_description(summary: pd.DataFrame, only: list[tuple[str, str]] | None = None) -> str:
    """What :func:`metrics.plots.cutoff_figure` draws, from its data: the runs, the cutoffs and, per panel, the
    highest and lowest run at the largest cutoff."""
    shown = panels(summary) if only is None else list(only)
    runs = list(dict.fromkeys(summary["run"]))
    cutoffs = sorted(int(c) for c in set(summary["cutoff"]))
    last = cutoffs[-1] if cutoffs else None
    words = [
        f"Line charts, one panel per metric ({_listed([f'{m} [{v}]' for m, v in shown])}), of {len(runs)} "
        f"run{'s' if len(runs) != 1 else ''} ({_listed([str(r) for r in runs])}) against the cutoff "
        f"({_listed([str(c) for c in cutoffs])})."
    ]
    for metric, variant in shown:
        at = summary[(summary["metric"] == metric) & (summary["variant"] == variant) & (summary["cutoff"] == last)]
        words.append(f"{metric} [{variant}] at {last}: {_extremes(at.set_index('run')['value'].astype(float))}.")
    return " ".join(words)


def distribution_description(per_query: pd.DataFrame, cutoff: int, only: list[tuple[str, str]] | None = None) -> str:
    """What :func:`metrics.plots.distribution_figure` draws, from its data: per panel, the runs' medians over the
    queries, highest and lowest."""
    data = per_query[per_query["cutoff"] == cutoff]
    shown = panels(data) if only is None else list(only)
    runs = list(pd.unique(per_query["run"]))
    words = [
        f"Box plots of the per-query values at cutoff {cutoff} of {len(runs)} run{'s' if len(runs) != 1 else ''} "
        f"({_listed([str(r) for r in runs])}), one panel per metric ({_listed([f'{m} [{v}]' for m, v in shown])})."
    ]
    for metric, variant in shown:
        panel = data[(data["metric"] == metric) & (data["variant"] == variant)]
        medians = panel.groupby("run", sort=False)["value"].median().astype(float)
        queries = panel["qid"].nunique() if "qid" in panel else None
        over = f" over {queries:,} queries" if queries else ""
        words.append(f"{metric} [{variant}] medians{over}: {_extremes(medians)}.")
    return " ".join(words)


def tradeoff_description(summary: pd.DataFrame, x: tuple[str, str, int], y: tuple[str, str, int]) -> str:
    """What :func:`metrics.plots.tradeoff_figure` draws, from its data: each run's point (up to 12; else the extremes)."""
    keyed = summary.set_index(["run", "metric", "variant", "cutoff"])
    points = []
    for run in dict.fromkeys(summary["run"]):
        if (run, *x) in keyed.index and (run, *y) in keyed.index:
            a, b = float(keyed.loc[(run, *x), "value"]), float(keyed.loc[(run, *y), "value"])
            if a == a and b == b:
                points.append((str(run), a, b))
    words = [
        f"Scatter plot of {len(points)} run{'s' if len(points) != 1 else ''}: {y[0]}@{y[2]} [{y[1]}] (vertical) "
        f"against {x[0]}@{x[2]} [{x[1]}] (horizontal), with 95% intervals both ways."
    ]
    if len(points) <= 12:
        words += [f"{run} at ({a:.3f}, {b:.3f})." for run, a, b in points]
    elif points:
        best = max(points, key=lambda p: p[1])
        words.append(f"Most effective: {best[0]} at ({best[1]:.3f}, {best[2]:.3f}).")
    return " ".join(words)
