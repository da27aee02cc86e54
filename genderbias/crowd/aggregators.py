"""The crowd models as crowd-kit's aggregators: ``fit`` a frame of ``task, worker, label``, read ``labels_``, ``probas_``.

Pure (pandas; no Django). The field aggregates crowd answers with crowd-kit
(``crowdkit.aggregation.DawidSkene().fit(df).labels_``); these classes give the project's own
estimators (:mod:`genderbias.crowd.aggregation`) the same contract, so a notebook can put one beside
the other on the same frame:

- ``fit(data)`` takes a frame with columns ``task``, ``worker``, ``label`` (one row per answer) and
  returns the fitted aggregator;
- ``labels_``: a Series indexed by task (``agg_label``), the aggregated label;
- ``probas_``: a DataFrame task × label, each row the label probabilities;
- ``fit_predict(data)`` and ``fit_predict_proba(data)`` return them.

Where they differ from crowd-kit's: a tie of a majority or of Wawa's weights is no label (None, its
probabilities split evenly), never a coin flip or the first label; :class:`DawidSkene` has priors
on the workers' rows and the class shares (:mod:`genderbias.crowd.estimation`) and keeps gold
tasks at their known labels (``true_labels``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from genderbias.crowd.aggregation import (
    count_validated,
    dawid_skene,
    majority_of_counts,
    validate_judgments,
    wawa,
    wawa_weights,
)
from genderbias.labels import LABELS

#: crowd-kit's names: the task column, and the aggregated label's Series.
TASK, AGGREGATED = "task", "agg_label"


def judgments(data: pd.DataFrame) -> pd.DataFrame:
    """crowd-kit's frame (``task, worker, label``) as the library's judgments (``item, worker, label``)."""
    if not isinstance(data, pd.DataFrame):
        raise TypeError(f"answers must be a pandas DataFrame, not {type(data).__name__}")
    missing = [c for c in (TASK, "worker", "label") if c not in data.columns]
    if missing:
        raise ValueError(f"answers lack column(s): {', '.join(missing)} (expected task, worker, label)")
    return data.loc[:, [TASK, "worker", "label"]].rename(columns={TASK: "item"})


def _by_task(frame: pd.DataFrame) -> pd.DataFrame:
    out = frame.copy()
    out.index = out.index.astype(str)
    out.index.name = TASK
    out.columns.name = "label"
    return out


class _Aggregator:
    """``fit_predict`` and ``fit_predict_proba`` from ``fit``."""

    labels_: pd.Series
    probas_: pd.DataFrame

    def fit(self, data: pd.DataFrame) -> Any:  # pragma: no cover - each aggregator defines it
        raise NotImplementedError

    def fit_predict(self, data: pd.DataFrame, *args: Any, **kwargs: Any) -> pd.Series:
        return self.fit(data, *args, **kwargs).labels_

    def fit_predict_proba(self, data: pd.DataFrame, *args: Any, **kwargs: Any) -> pd.DataFrame:
        return self.fit(data, *args, **kwargs).probas_

    def _set(self, labels: pd.Series, probas: pd.DataFrame) -> None:
        self.probas_ = _by_task(probas)
        self.labels_ = pd.Series(labels.to_numpy(dtype=object), index=self.probas_.index, name=AGGREGATED)


class MajorityVote(_Aggregator):
    """The strict-plurality label (:func:`genderbias.crowd.aggregation.majority_vote`): ``probas_`` each
    task's vote shares, ``labels_`` None where the top votes tie."""

    def __init__(self, labels: Sequence[str] = LABELS) -> None:
        self.labels = tuple(labels)

    def fit(self, data: pd.DataFrame) -> MajorityVote:
        frame = validate_judgments(judgments(data), self.labels)
        table = count_validated(frame, self.labels)  # counted once, for the shares and the majority
        counts = table.astype(float)
        shares = counts.div(counts.sum(axis=1), axis=0)
        self._set(majority_of_counts(table, self.labels)["label"], shares)
        return self


class Wawa(_Aggregator):
    """Worker Agreement With Aggregate (:func:`genderbias.crowd.aggregation.wawa`): ``probas_`` each task's
    labels weighted by their voters' skills, ``labels_`` None where the top weights tie."""

    def __init__(self, labels: Sequence[str] = LABELS) -> None:
        self.labels = tuple(labels)

    def fit(self, data: pd.DataFrame) -> Wawa:
        frame = validate_judgments(judgments(data), self.labels)
        weights = wawa_weights(frame, self.labels)
        total = weights.sum(axis=1).replace(0.0, np.nan)
        self.skills_ = weights.attrs["skills"]
        self._set(wawa(frame, self.labels)["label"], weights.div(total, axis=0).fillna(1.0 / len(self.labels)))
        return self


class DawidSkene(_Aggregator):
    """The project's crowd model (:func:`genderbias.crowd.aggregation.dawid_skene`: Dawid–Skene with
    priors, one coin per worker or full rows as the answers choose, ``model``). ``fit(data,
    true_labels)``: ``true_labels`` (task → label, crowd-kit's name) are gold tasks, held at their
    labels. ``probas_``: the posteriors; ``held_out_probas_``: each task's posterior under the model
    fitted on the others (what every label-corrected interval reads); ``result_``: the whole fit."""

    def __init__(
        self, n_iter: int = 100, tol: float = 1e-6, model: str = "auto", labels: Sequence[str] = LABELS
    ) -> None:
        self.n_iter, self.tol, self.model, self.labels = n_iter, tol, model, tuple(labels)

    def fit(self, data: pd.DataFrame, true_labels: Mapping[str, str] | pd.Series | None = None) -> DawidSkene:
        gold = {str(task): str(label) for task, label in dict(true_labels if true_labels is not None else {}).items()}
        result = dawid_skene(judgments(data), self.labels, self.n_iter, self.tol, gold=gold, model=self.model)
        self.result_ = result
        self._set(result.labels, result.posteriors)
        self.held_out_probas_ = _by_task(result.held_out)
        return self
