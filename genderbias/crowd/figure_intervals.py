"""Which interval each label-corrected figure of a batch gets, and the one sentence that says why (issue 81).

The crowd model's intervals (:mod:`.label_uncertainty`) assume a query's answers independent given its true
label; real crowds share errors by query and those intervals can miss by many widths (docs/quality.md,
"Audit samples"). With an expert audit sample every figure gets the PPI++ interval
(:mod:`genderbias.machine.proportions`), resting only on the sample being random. Without one the crowd
model's interval stands unless the shared-errors check fires; then no figure is printed as a 95% interval.
Every surface (report, CSV, API, captions, paper) prints :func:`interval_choice`'s sentence.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np
import pandas as pd

from genderbias.crowd.label_probabilities import LabelModel
from genderbias.crowd.label_uncertainty import _finite, _holm_by_family, label_share
from genderbias.machine.proportions import audit_class_mean, audit_difference
from genderbias.ranking.defaults import LEVEL
from genderbias.stats import intervals

__all__ = ["AUDIT", "CROWD", "MAY_NOT_COVER", "choose_intervals", "interval_choice", "shared_errors_verdict"]

#: The interval kinds (:func:`interval_choice`): PPI++ on an audit sample, the crowd model's, or none printed.
AUDIT, CROWD, MAY_NOT_COVER = "audit", "crowd", "may_not_cover"
#: The class the label-corrected figures are means over (the non-gendered queries).
FIGURE_CLASS = "n"
#: The crowd model in a sentence's words.
CROWD_MODEL_WORDS = "Dawid-Skene, gold-seeded"


def interval_choice(
    *,
    audit_size: int = 0,
    audit_of_class: int = 0,
    shared: Mapping | None = None,
    crowd_model: str = CROWD_MODEL_WORDS,
) -> dict:
    """Which interval every label-corrected figure of a batch gets, and the sentence that says why.

    PPI++ when the audit sample holds at least 2 queries of :data:`FIGURE_CLASS` (``audit_of_class`` of
    ``audit_size``); else the crowd model's, unless ``shared`` (:func:`shared_errors_verdict`; None: not run)
    fires: then "may not cover", with the audit size that would settle it. The crowd model's sentence names the
    construction its figures took where ``shared`` says whether the model is ``trusted``. Returns ``{"kind", "sentence",
    "audit_size", "suggested_audit"}`` (``suggested_audit`` None unless the figure may not cover)."""
    if audit_size < 0 or audit_of_class < 0 or audit_of_class > audit_size:
        raise ValueError(f"audit_of_class ({audit_of_class}) must be within 0 and audit_size ({audit_size}).")
    if audit_of_class >= 2:
        kind, suggested = AUDIT, None
        sentence = f"PPI++ on an audit sample of {audit_size} expert labels: rests on no crowd model"
    elif shared and shared.get("fires"):
        size = shared["suggested_audit"]
        kind, suggested = MAY_NOT_COVER, int(size)
        sentence = f"may not cover: errors shared by query; an audit sample of about {size} would settle it"
    else:
        small = (
            f"an audit sample of {audit_size} holds {audit_of_class} non-gendered quer{'y' if audit_of_class == 1 else 'ies'}, "
            "fewer than the 2 a PPI++ interval needs"
            if audit_size
            else "no audit sample"
        )
        kind, suggested = CROWD, None
        sentence = f"crowd model ({crowd_model}): assumes independent errors; {small}"
        if shared and "trusted" in shared:  # which of the rule's constructions the figures took, and why
            construction = intervals.describe(intervals.construction_for(trusted=shared["trusted"]))
            why = "trusted, no warning and no sign of errors shared by query" if shared["trusted"] else "not trusted"
            sentence += f"; {why}: {construction}"
    return {"kind": kind, "sentence": sentence, "audit_size": audit_size, "suggested_audit": suggested}


def shared_errors_verdict(model: LabelModel | None) -> dict | None:
    """:func:`.shared_errors.crowd_shared_errors` on the crowd model's own fit, as :func:`interval_choice`
    reads it (``{"fires", "suggested_audit", "trusted"}``); None without crowd answers."""
    found = None if model is None else model.shared_errors()
    if found is None:
        return None
    return {"fires": bool(found.fires), "suggested_audit": int(found.audit_size), "trusted": model.trusted()}


#: The columns :func:`audit_summary` and :func:`withheld_summary` replace.
_CORRECTED = ("corrected", "combined_low", "combined_high", "label_share")
_DIFFERENCE = ("difference_corrected", "difference_combined_low", "difference_combined_high", "difference_label_share")
#: The precision of the p that inverts the PPI++ interval (:func:`_audit_p`).
P_TOLERANCE = 1e-4


def audit_summary(
    summary: pd.DataFrame,
    wide: Mapping[str, pd.DataFrame],
    predicted: Mapping[str, str | None],
    audit: Mapping[str, str],
    baseline: str | None = None,
    level: float = LEVEL,
    label: str = FIGURE_CLASS,
) -> pd.DataFrame:
    """``summary`` with each label-corrected figure replaced by its PPI++ figure on the audit sample (mean over
    the queries truly ``label``, paired difference against ``baseline``), ``p_value`` by the Holm-adjusted p
    that inverts the difference's interval.

    ``wide``: per run, judged qid × ``(metric, variant, cutoff)`` values; ``predicted``: every judged query's
    crowd label (None: disputed); ``audit``: qid → expert label. A figure whose sample holds fewer than 2
    queries of ``label`` with a value has no interval (–), never the crowd model's."""
    alpha = 1 - level
    qids = [q for q in predicted]
    position = {q: i for i, q in enumerate(qids)}
    sampled = [(position[q], audit[q]) for q in audit if q in position]
    labels_of = [predicted[q] for q in qids]
    columns = sorted({key for table in wide.values() for key in table.columns})
    aligned = {run: wide[run].reindex(index=qids, columns=columns).to_numpy(dtype=np.float64) for run in wide}

    def figure(values: np.ndarray, base: np.ndarray | None) -> tuple:
        finite = np.isfinite(values) & (np.isfinite(base) if base is not None else True)
        kept = np.flatnonzero(finite)
        renumber = {int(i): j for j, i in enumerate(kept)}
        audited = [(renumber[i], t) for i, t in sampled if i in renumber]
        if sum(t == label for _, t in audited) < 2:
            return None, None, None, None
        args = ([t for _, t in audited], [labels_of[i] for i in kept], [i for i, _ in audited])
        if base is None:
            found = audit_class_mean(*args, values[kept], label=label, alpha=alpha)
            return found["estimate"], *found["ci"], None
        found = audit_difference(*args, base[kept], values[kept], label=label, alpha=alpha)
        p = _audit_p(lambda a: audit_difference(*args, base[kept], values[kept], label=label, alpha=a)["ci"])
        return found["estimate"], *found["ci"], p

    out = summary.copy()
    keys = list(zip(out["run"], out["metric"], out["variant"], out["cutoff"].astype(int), strict=True))
    index = {key: i for i, key in enumerate(columns)}
    rows: dict[tuple, dict] = {}
    tests: dict[tuple, float] = {}
    has_baseline = baseline is not None and baseline in wide
    for key in keys:
        run, column = key[0], index.get(key[1:])
        if column is None or run not in aligned:
            continue
        row = dict(zip(_CORRECTED[:3], figure(aligned[run][:, column], None), strict=False))
        if has_baseline and run != baseline:
            *difference, p = figure(aligned[run][:, column], aligned[baseline][:, column])
            row |= dict(zip(_DIFFERENCE[:3], difference, strict=True))
            if p is not None:
                tests[key] = p
        rows[key] = row
    adjusted = _holm_by_family(tests)
    for column in (*_CORRECTED[:3], *(_DIFFERENCE[:3] if has_baseline else ())):
        out[column] = [_finite(rows.get(key, {}).get(column)) for key in keys]
    if has_baseline:
        out["difference_label_share"] = [
            _finite(x)
            for x in label_share(
                _floats(out, "difference_high") - _floats(out, "difference_low"),
                _floats(out, "difference_combined_high") - _floats(out, "difference_combined_low"),
            )
        ]
        out["p_value"] = pd.Series([adjusted.get(key) for key in keys], index=out.index, dtype=object)
    share = label_share(
        _floats(out, "ci_high") - _floats(out, "ci_low"), _floats(out, "combined_high") - _floats(out, "combined_low")
    )
    out["label_share"] = [_finite(x) for x in share]
    return out


def withheld_summary(summary: pd.DataFrame) -> pd.DataFrame:
    """``summary`` with the label-corrected intervals, label shares and combined p withheld (the estimates
    kept), so that no surface prints them as a 95% interval or a significance."""
    out = summary.copy()
    for column in (*_CORRECTED[1:], *_DIFFERENCE[1:]):
        if column in out:
            out[column] = None
    if "p_value" in out and "query_p_value" in out:
        out["p_value"] = pd.Series([None] * len(out), index=out.index, dtype=object)
    return out


def _audit_p(interval: Callable[[float], list[float]]) -> float:
    """The two-sided p inverting the PPI++ interval: the smallest α whose ``interval(α)`` excludes 0, by
    bisection to :data:`P_TOLERANCE` (1 when even the narrowest holds 0)."""

    def excludes(alpha: float) -> bool:
        low, high = interval(alpha)
        return low > 0 or high < 0

    if not excludes(1 - 1e-9):
        return 1.0
    if excludes(1e-12):
        return 0.0
    low, high = 1e-12, 1 - 1e-9
    while high - low > P_TOLERANCE:
        middle = (low + high) / 2
        low, high = (low, middle) if excludes(middle) else (middle, high)
    return high


def _floats(frame: pd.DataFrame, column: str) -> np.ndarray:
    return pd.to_numeric(frame[column], errors="coerce").to_numpy(dtype=np.float64)


def choose_intervals(
    summary: pd.DataFrame,
    wide: Mapping[str, pd.DataFrame],
    predicted: Mapping[str, str | None],
    audit: Mapping[str, str] | None = None,
    shared: Mapping | None = None,
    baseline: str | None = None,
    level: float = LEVEL,
) -> tuple[pd.DataFrame, dict]:
    """``(summary with each figure's chosen interval, the choice)``: :func:`audit_summary` with an audit,
    :func:`withheld_summary` when the figures may not cover, else ``summary`` (the crowd model's) as it is."""
    audit = {q: t for q, t in (audit or {}).items() if q in predicted}
    choice = interval_choice(
        audit_size=len(audit), audit_of_class=sum(t == FIGURE_CLASS for t in audit.values()), shared=shared
    )
    if choice["kind"] == AUDIT:
        return audit_summary(summary, wide, predicted, audit, baseline, level), choice
    if choice["kind"] == MAY_NOT_COVER:
        return withheld_summary(summary), choice
    return summary, choice
