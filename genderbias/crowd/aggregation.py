"""Turning crowd judgments into one gender label per query (pure pandas/numpy).

A judgments frame has one row per answer: ``item`` (query id), ``worker`` and ``label`` (one of :data:`LABELS`).
Three aggregators, :func:`majority_vote` (a tie is disputed, never broken at random), :func:`dawid_skene` and
:func:`wawa` (docs/metrics.md, "Label sensitivity: how labelling choices move the results"), each giving a labelled
item a confidence in ``[0, 1]`` that label sensitivity thresholds. (crowd-kit has these too but pulls in
transformers, nltk and scikit-learn.)
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from genderbias.crowd import estimation, model_choice
from genderbias.labels import CATEGORY_SLUGS, LABEL_NAMES, LABELS  # noqa: F401  (one definition, re-exported)

__all__ = [
    "DS_SMOOTHING", "DawidSkeneResult", "compare_methods", "count_validated", "dawid_skene", "label_counts",
    "majority_of_counts", "majority_vote", "one_answer_per_worker", "validate_judgments", "wawa", "wawa_weights",
]  # fmt: skip

REQUIRED_COLUMNS: tuple[str, ...] = ("item", "worker", "label")

#: Pseudo-count on every cell of the pooled vote distribution (:func:`.reliability.crowd_vote`), so that a
#: label nobody gave keeps a small probability. (Dawid-Skene's own priors: :mod:`.estimation`.)
DS_SMOOTHING: float = 0.01


def validate_judgments(
    judgments: pd.DataFrame, labels: Sequence[str] = LABELS, repeatable: Collection[str] = ()
) -> pd.DataFrame:
    """A clean copy with string columns and one answer per worker and item (:func:`one_answer_per_worker`).

    Raises ``ValueError`` naming missing columns, missing values and labels outside ``labels``. Every
    aggregator and crowd model reads judgments through here, so the repeated-answer rule lives in one place.
    """
    if not isinstance(judgments, pd.DataFrame):
        raise TypeError(f"judgments must be a pandas DataFrame, not {type(judgments).__name__}")
    missing = [c for c in REQUIRED_COLUMNS if c not in judgments.columns]
    if missing:
        raise ValueError(f"judgments lack column(s): {', '.join(missing)}")
    frame = judgments.loc[:, list(REQUIRED_COLUMNS)]
    if frame.isna().to_numpy().any():
        bad = [c for c in REQUIRED_COLUMNS if frame[c].isna().any()]
        raise ValueError(f"judgments have missing values in column(s): {', '.join(bad)}")
    frame = frame.astype(str)
    unknown = sorted(set(frame["label"].unique()) - set(labels))
    if unknown:
        raise ValueError(
            f"unknown label(s) {', '.join(map(repr, unknown))}; expected one of {', '.join(map(str, labels))}"
        )
    return one_answer_per_worker(frame, repeatable)


def one_answer_per_worker(judgments: pd.DataFrame, repeatable: Collection[str] = ()) -> pd.DataFrame:
    """A worker who answered an item more than once: **the latest answer counts** (rows in answer
    order), except on ``repeatable`` items, whose every answer is kept.

    Why: the crowd model takes votes as independent given the true label; a second answer to the same
    query is not, and counting both would make the query look more certain. A gold question's label is
    known, so each answer to it is one more observation of the worker's confusion matrix.
    """
    if not len(judgments):
        return judgments.reset_index(drop=True)
    repeat = judgments.duplicated(["item", "worker"], keep="last")
    if len(repeatable):
        repeat &= ~judgments["item"].isin(set(map(str, repeatable)))
    return judgments.loc[~repeat.to_numpy()].reset_index(drop=True)


def label_counts(judgments: pd.DataFrame, labels: Sequence[str] = LABELS) -> pd.DataFrame:
    """Items × labels table of vote counts (index sorted, every label a column even if unused)."""
    return count_validated(validate_judgments(judgments, labels), labels)


def count_validated(frame: pd.DataFrame, labels: Sequence[str] = LABELS) -> pd.DataFrame:
    """:func:`label_counts` of an already validated frame (a report validates once, not once per figure)."""
    labels = list(labels)
    # One bincount over (item, label) codes: pd.crosstab on a Categorical goes group by group in Python.
    items, names = pd.factorize(frame["item"], sort=True)
    codes = pd.Categorical(frame["label"], categories=labels).codes.astype(np.int64)
    flat = np.bincount(items * len(labels) + codes, minlength=len(names) * len(labels))
    return pd.DataFrame(
        flat.reshape(len(names), len(labels)).astype(np.int64),
        index=pd.Index(names, name="item"),
        columns=pd.Index(labels, name=None),
    )


def majority_vote(judgments: pd.DataFrame, labels: Sequence[str] = LABELS) -> pd.DataFrame:
    """One row per item: ``label`` (the strict-plurality label, ``None`` when tied), ``votes``,
    ``top_votes``, ``disputed`` and a count column per label. A 2-1 split wins; 1-1-1 and 2-2 are
    disputed: a random tie-break would put a coin flip into the published query set.
    """
    return majority_of_counts(label_counts(judgments, labels), labels)


def majority_of_counts(counts: pd.DataFrame, labels: Sequence[str] = LABELS) -> pd.DataFrame:
    """:func:`majority_vote` of an items × labels count table (:func:`label_counts`)."""
    values = counts.to_numpy()
    top = values.max(axis=1) if len(values) else np.zeros(0, dtype=np.int64)
    n_at_top = (values == top[:, None]).sum(axis=1)
    disputed = n_at_top > 1
    winner = np.asarray(labels, dtype=object)[values.argmax(axis=1)] if len(values) else np.zeros(0, dtype=object)
    winner = np.where(disputed, None, winner)
    result = pd.DataFrame(
        {
            "label": pd.Series(winner, index=counts.index, dtype=object),
            "votes": values.sum(axis=1),
            "top_votes": top,
            "disputed": disputed,
        },
        index=counts.index,
    )
    return pd.concat([result, counts], axis=1)


@dataclass
class DawidSkeneResult:
    """What Dawid-Skene EM learnt. ``confusion[worker]``: true × given label, rows sum to one (a
    reliable worker has a heavy diagonal, a spammer nearly identical rows)."""

    labels: pd.Series
    posteriors: pd.DataFrame
    confusion: dict[str, pd.DataFrame]
    priors: pd.Series
    iterations: int
    converged: bool
    #: The judgments as the model read them (:mod:`.model_choice`): what a bootstrap refits (:mod:`.resampling`).
    encoded: estimation.Encoded | None = None
    #: Each item's posterior under the model fitted on the other items (:func:`.estimation.held_out_posteriors`):
    #: calibrated where ``posteriors`` are over-confident; every interval built on the labels uses these.
    held_out: pd.DataFrame | None = None

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(posteriors [N × K], priors [K], confusion [W × K × K])`` in ``encoded``'s order."""
        labels = list(self.encoded.labels)
        posteriors = self.posteriors.reindex(index=self.encoded.items, columns=labels).to_numpy(dtype=np.float64)
        priors = self.priors.reindex(labels).to_numpy(dtype=np.float64)
        confusion = np.stack(
            [self.confusion[str(w)].reindex(index=labels, columns=labels).to_numpy(dtype=np.float64)
             for w in self.encoded.workers]
        )  # fmt: skip
        return posteriors, priors, confusion

    def worker_accuracy(self, worker: str) -> float:
        """The chance ``worker`` answers right: Σ_t prior_t · confusion[worker][t, t]."""
        matrix = self.confusion[worker]
        return float((self.priors * pd.Series(np.diag(matrix.to_numpy()), index=matrix.index)).sum())

    def label_table(self) -> pd.DataFrame:
        """One row per item: ``label`` and its ``posterior`` (the confidence an exported label carries)."""
        posterior = self.posteriors.max(axis=1) if len(self.posteriors) else pd.Series(dtype=float)
        table = pd.DataFrame({"label": self.labels.astype(object), "posterior": posterior.astype(float)})
        table.index.name = "item"
        return table


def dawid_skene(
    judgments: pd.DataFrame,
    labels: Sequence[str] = LABELS,
    max_iter: int = 100,
    tol: float = 1e-6,
    gold: Mapping[str, str] | None = None,
    model: str = "auto",
) -> DawidSkeneResult:
    """Dawid & Skene (1979) EM with the priors of :mod:`.estimation` (MAP; the EM itself is there).

    Stops when the log-likelihood changes by less than ``tol`` (relative) or after ``max_iter`` rounds.
    ``gold`` (item → known label) fixes those items' posteriors, so answers on them estimate the
    confusion matrices against the truth (semi-supervised EM). ``model``: ``"auto"``
    (:func:`.model_choice.choose_shrinkage`) or one of :data:`.estimation.MODELS`.
    """
    if max_iter < 1:
        raise ValueError("max_iter must be at least 1")
    if model not in estimation.MODELS:
        raise ValueError(f"model {model!r}: expected one of {', '.join(estimation.MODELS)}")
    labels = tuple(labels)
    gold = {str(item): str(label) for item, label in (gold or {}).items()}
    frame = validate_judgments(judgments, labels, repeatable=gold)
    unknown = sorted(set(gold.values()) - set(labels))
    if unknown:
        raise ValueError(
            f"unknown gold label(s) {', '.join(map(repr, unknown))}; expected one of {', '.join(map(str, labels))}"
        )
    encoded = model_choice.encode(frame, labels, gold, model=model)
    items, workers, n_labels = encoded.items, encoded.workers, len(labels)

    if encoded.n_items == 0:
        empty = pd.DataFrame(
            np.zeros((0, n_labels)), index=pd.Index([], name="item", dtype=object), columns=list(labels)
        )
        return DawidSkeneResult(
            labels=pd.Series([], index=empty.index, dtype=object, name="label"),
            posteriors=empty,
            confusion={},
            priors=pd.Series(np.full(n_labels, 1.0 / n_labels), index=list(labels), name="prior"),
            iterations=0,
            converged=True,
            held_out=empty,
        )
    fitted = estimation.fit(encoded, max_iter=max_iter, tol=tol)
    posteriors, priors, confusion = fitted.posteriors[0], fitted.priors[0], fitted.confusion[0]
    iterations, converged = fitted.iterations, fitted.converged

    item_index = pd.Index(items.astype(object), name="item")
    posterior_frame = pd.DataFrame(posteriors, index=item_index, columns=list(labels))
    best = pd.Series(np.asarray(labels, dtype=object)[posteriors.argmax(axis=1)], index=item_index, name="label")
    confusion_frames = {
        str(worker): pd.DataFrame(
            confusion[w],
            index=pd.Index(list(labels), name="true"),
            columns=pd.Index(list(labels), name="given"),
        )
        for w, worker in enumerate(workers)
    }
    return DawidSkeneResult(
        labels=best,
        posteriors=posterior_frame,
        confusion=confusion_frames,
        priors=pd.Series(priors, index=list(labels), name="prior"),
        iterations=iterations,
        converged=converged,
        encoded=encoded,
        held_out=pd.DataFrame(fitted.held_out[0], index=item_index, columns=list(labels)),
    )


def wawa_weights(judgments: pd.DataFrame, labels: Sequence[str] = LABELS) -> pd.DataFrame:
    """Items × ``labels``: each label's sum of its voters' Wawa skills; ``attrs["skills"]``: the skills."""
    frame = validate_judgments(judgments, labels)
    majority = majority_of_counts(count_validated(frame, labels), labels)
    # A single vote is its own majority: only items with two or more votes measure a skill.
    reference = majority.loc[~majority["disputed"].astype(bool) & (majority["votes"] >= 2), "label"]
    truth = frame["item"].map(reference)
    compared = truth.notna()
    agreed = pd.Series(np.where(compared, frame["label"] == truth, np.nan), index=frame.index)
    skill = agreed.groupby(frame["worker"]).mean()
    skill = skill.fillna(skill.mean() if skill.notna().any() else 1.0)
    items, item_idx = np.unique(frame["item"].to_numpy(dtype=str), return_inverse=True)
    label_idx = pd.Categorical(frame["label"], categories=list(labels)).codes.astype(np.int64)
    weights = np.zeros((len(items), len(labels)))
    np.add.at(weights, (item_idx, label_idx), frame["worker"].map(skill).to_numpy(dtype=float))
    out = pd.DataFrame(weights, index=pd.Index(items.astype(object), name="item"), columns=list(labels))
    out.attrs["skills"] = skill
    return out


def wawa(judgments: pd.DataFrame, labels: Sequence[str] = LABELS) -> pd.DataFrame:
    """Wawa (crowd-kit's), one row per item: a worker's skill is its agreement with the majority on
    undisputed items of two or more votes (else the mean skill); the label with the largest sum of its
    voters' skills wins. Columns: ``label`` (``None`` on a tie to 12 decimals), ``confidence`` (the
    winner's weight share) and ``disputed``.
    """
    table = wawa_weights(judgments, labels)
    items, weights = table.index.to_numpy(dtype=str), table.to_numpy()
    top = weights.max(axis=1) if len(items) else np.zeros(0)
    tied = (np.round(weights, 12) == np.round(top, 12)[:, None]).sum(axis=1) > 1
    total = weights.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        confidence = np.where(total > 0, top / total, np.nan)
    winner = np.asarray(labels, dtype=object)[weights.argmax(axis=1)] if len(items) else np.zeros(0, dtype=object)
    disputed = tied | (total <= 0)
    index = pd.Index(items.astype(object), name="item")
    return pd.DataFrame(
        {
            "label": pd.Series(np.where(disputed, None, winner), index=index, dtype=object),
            "confidence": confidence,
            "disputed": disputed,
        },
        index=index,
    )


def compare_methods(majority: pd.DataFrame, ds: DawidSkeneResult) -> pd.DataFrame:
    """The items where majority vote and Dawid-Skene disagree or the vote is disputed (worth a second
    look before publishing): ``majority``, ``dawid_skene``, ``ds_posterior``, ``votes``, ``disputed``."""
    joined = pd.DataFrame(
        {
            "majority": majority["label"].astype(object),
            "votes": majority["votes"],
            "disputed": majority["disputed"].astype(bool),
        }
    ).join(ds.labels.rename("dawid_skene"), how="outer")
    max_posterior = ds.posteriors.max(axis=1) if len(ds.posteriors) else pd.Series(dtype=float)
    joined["ds_posterior"] = max_posterior.reindex(joined.index)
    majority_label = joined["majority"]
    differs = majority_label.isna() | joined["dawid_skene"].isna() | (majority_label != joined["dawid_skene"])
    result = joined.loc[differs, ["majority", "dawid_skene", "ds_posterior", "votes", "disputed"]]
    result.index.name = "item"
    return result.sort_index()
