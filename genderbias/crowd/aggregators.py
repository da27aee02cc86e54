"""The crowd models as crowd-kit's aggregators, so a notebook can put them beside crowd-kit's on one frame.

``fit(data)`` takes ``task, worker, label`` rows and returns the aggregator; ``labels_`` (a Series by task,
``agg_label``) and ``probas_`` (task × label) hold the result; ``fit_predict``, ``fit_predict_proba``,
``get_params()`` and ``repr()`` as crowd-kit's and scikit-learn's. ``labels``: any hashable labels (None: the
answers' own, sorted; default :data:`genderbias.labels.LABELS`). Unlike crowd-kit's: a tie is no label (None,
probabilities split evenly), never a coin flip; :class:`DawidSkene` has priors (:mod:`.estimation`) and keeps
gold tasks at their known labels (``true_labels``).
"""

from __future__ import annotations

import inspect
from collections.abc import Hashable, Mapping, Sequence
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
from genderbias.crowd.difficulty import fit_difficulty
from genderbias.crowd.model_choice import encode
from genderbias.labels import LABELS

__all__ = ["GLAD", "DawidSkene", "MajorityVote", "Wawa"]

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


def _codes(labels: Sequence[Hashable]) -> dict[Hashable, str]:
    """Each label's code, the text the crowd models read (``str(label)``); two labels one code are refused."""
    codes: dict[Hashable, str] = {}
    for label in labels:
        code = str(label)
        if code in codes.values():
            raise ValueError(f"labels {labels!r}: two labels read as {code!r}")
        codes[label] = code
    return codes


def _by_task(frame: pd.DataFrame) -> pd.DataFrame:
    out = frame.copy()
    out.index = out.index.astype(str)
    out.index.name = TASK
    out.columns.name = "label"
    return out


class _Aggregator:
    """``fit_predict`` and ``fit_predict_proba`` from ``fit``; the labels coded for the crowd models
    (:meth:`_coded`) and back (:meth:`_set`); ``get_params`` and ``repr`` from ``__init__``."""

    labels_: pd.Series
    probas_: pd.DataFrame

    def __init__(self, labels: Sequence[Hashable] | None = LABELS) -> None:
        self.labels = tuple(labels) if labels is not None else None

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The parameters ``__init__`` took, by name (scikit-learn's ``get_params``)."""
        names = [p for p in inspect.signature(type(self).__init__).parameters if p != "self"]
        return {name: getattr(self, name) for name in names}

    def __repr__(self) -> str:
        params = ", ".join(f"{name}={value!r}" for name, value in self.get_params().items())
        return f"{type(self).__name__}({params})"

    def _coded(self, data: pd.DataFrame) -> tuple[pd.DataFrame, tuple[str, ...]]:
        """``data`` as the crowd models read it (``item, worker, label``, each label its code) and the codes."""
        frame = judgments(data)
        labels = (
            self.labels
            if self.labels is not None
            else tuple(sorted(frame["label"].dropna().unique().tolist(), key=str))
        )
        self._decode = {code: label for label, code in _codes(labels).items()}
        encode = {label: code for code, label in self._decode.items()}
        unknown = [label for label in frame["label"].dropna().unique().tolist() if label not in encode]
        if unknown:
            raise ValueError(
                f"unknown label(s) {', '.join(map(repr, unknown))}; expected one of {', '.join(map(repr, labels))}"
            )
        return frame.assign(label=frame["label"].map(encode, na_action="ignore")), tuple(self._decode)

    def _gold(self, true_labels: Mapping[Any, Hashable] | pd.Series | None) -> dict[str, str]:
        """``true_labels`` (task → label) as gold codes; a label outside the coded ones is refused."""
        encode = {label: code for code, label in self._decode.items()}
        gold = {}
        for task, label in dict(true_labels if true_labels is not None else {}).items():
            if label not in encode:
                raise ValueError(f"task {task!r}'s true label {label!r} is not one of {', '.join(map(repr, encode))}")
            gold[str(task)] = encode[label]
        return gold

    def fit(self, data: pd.DataFrame) -> Any:  # pragma: no cover - each aggregator defines it
        raise NotImplementedError

    def fit_predict(self, data: pd.DataFrame, *args: Any, **kwargs: Any) -> pd.Series:
        return self.fit(data, *args, **kwargs).labels_

    def fit_predict_proba(self, data: pd.DataFrame, *args: Any, **kwargs: Any) -> pd.DataFrame:
        return self.fit(data, *args, **kwargs).probas_

    def _set(self, labels: pd.Series, probas: pd.DataFrame) -> None:
        self.probas_ = _by_task(probas.rename(columns=self._decode))
        decoded = [self._decode.get(label) if label is not None else None for label in labels.to_numpy(dtype=object)]
        self.labels_ = pd.Series(decoded, index=self.probas_.index, name=AGGREGATED, dtype=object)


class MajorityVote(_Aggregator):
    """The strict-plurality label (:func:`genderbias.crowd.aggregation.majority_vote`): ``probas_`` each
    task's vote shares, ``labels_`` None where the top votes tie."""

    def fit(self, data: pd.DataFrame) -> MajorityVote:
        coded, codes = self._coded(data)
        frame = validate_judgments(coded, codes)
        table = count_validated(frame, codes)  # counted once, for the shares and the majority
        counts = table.astype(float)
        shares = counts.div(counts.sum(axis=1), axis=0)
        self._set(majority_of_counts(table, codes)["label"], shares)
        return self


class Wawa(_Aggregator):
    """Worker Agreement With Aggregate (:func:`genderbias.crowd.aggregation.wawa`): ``probas_`` each task's
    labels weighted by their voters' skills, ``labels_`` None where the top weights tie."""

    def fit(self, data: pd.DataFrame) -> Wawa:
        coded, codes = self._coded(data)
        frame = validate_judgments(coded, codes)
        weights = wawa_weights(frame, codes)
        total = weights.sum(axis=1).replace(0.0, np.nan)
        self.skills_ = weights.attrs["skills"]
        self._set(wawa(frame, codes)["label"], weights.div(total, axis=0).fillna(1.0 / len(codes)))
        return self


class DawidSkene(_Aggregator):
    """The project's crowd model (:func:`.aggregation.dawid_skene`, ``model``). ``fit(data, true_labels)``:
    gold tasks held at their labels. ``probas_``: the posteriors; ``held_out_probas_``: the held-out ones
    (what every label-corrected interval reads); ``result_``: the whole fit."""

    def __init__(
        self, n_iter: int = 100, tol: float = 1e-6, model: str = "auto", labels: Sequence[Hashable] | None = LABELS
    ) -> None:
        self.n_iter, self.tol, self.model = n_iter, tol, model
        self.labels = tuple(labels) if labels is not None else None

    def fit(self, data: pd.DataFrame, true_labels: Mapping[Any, Hashable] | pd.Series | None = None) -> DawidSkene:
        coded, codes = self._coded(data)
        gold = self._gold(true_labels)
        result = dawid_skene(coded, codes, self.n_iter, self.tol, gold=gold, model=self.model)
        self.result_ = result
        self._set(result.labels, result.posteriors)
        self.held_out_probas_ = _by_task(result.held_out)
        return self


class GLAD(_Aggregator):
    """The item-difficulty crowd model (:mod:`.difficulty`), crowd-kit's ``GLAD`` but with class shares and the
    log easiness's prior mean estimated (crowd-kit's fixed values: ``priors``, ``easiness_mean``) and errors
    along the crowd's pattern (crowd-kit's: ``pattern="even"``). ``fit(data, true_labels)``: gold tasks held.
    ``alphas_`` by worker, ``betas_`` (log easiness) by task, ``result_``."""

    def __init__(
        self,
        n_iter: int = 100,
        tol: float = 1e-6,
        pattern: str = "crowd",
        priors: Sequence[float] | None = None,
        easiness_mean: float | None = None,
        labels: Sequence[Hashable] | None = LABELS,
    ) -> None:
        self.n_iter, self.tol, self.pattern, self.priors = n_iter, tol, pattern, priors
        self.easiness_mean = easiness_mean
        self.labels = tuple(labels) if labels is not None else None

    def fit(self, data: pd.DataFrame, true_labels: Mapping[Any, Hashable] | pd.Series | None = None) -> GLAD:
        coded, codes = self._coded(data)
        gold = self._gold(true_labels)
        frame = validate_judgments(coded, codes, repeatable=gold)
        encoded = encode(frame, codes, gold, model="one-coin")
        priors = None if self.priors is None else np.asarray(self.priors, dtype=np.float64)
        result = fit_difficulty(
            encoded,
            pattern=self.pattern,
            priors=priors,
            easiness_mean=self.easiness_mean,
            max_iter=self.n_iter,
            tol=self.tol,
        )
        self.result_ = result
        probas = pd.DataFrame(result.posteriors, index=pd.Index(encoded.items, name="item"), columns=list(codes))
        top = probas.to_numpy()
        tied = (np.isclose(top, top.max(axis=1, keepdims=True))).sum(axis=1) > 1
        labels = pd.Series(np.where(tied, None, np.array(codes, dtype=object)[top.argmax(axis=1)]), index=probas.index)
        self._set(labels, probas)
        self.alphas_ = pd.Series(result.alpha, index=pd.Index(encoded.workers, name="worker"), name="alpha")
        self.betas_ = pd.Series(np.log(result.easiness), index=self.probas_.index, name="beta")
        return self
