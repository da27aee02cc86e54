"""Who the simulated crowd is: :class:`CrowdModel`, the one description the escalation simulator and the
per-worker answers draw from; built by hand, from a fitted model's pooled vote or from JSON.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["CrowdModel", "crowd_from_dict", "crowd_from_figures", "noisy_crowd", "pooled_crowd"]


@dataclass(frozen=True)
class CrowdModel:
    """Workers with a share of the work each and a confusion matrix (true label → their vote)."""

    labels: tuple[str, ...]
    confusion: np.ndarray = field(repr=False)  #: [W, T, L]: worker w's vote given true label t
    shares: np.ndarray = field(repr=False)  #: [W]: relative share of the assignments each takes
    names: tuple[str, ...] = ()
    class_shares: np.ndarray | None = field(default=None, repr=False)  #: [T]: the batch's true-label shares

    def __post_init__(self) -> None:
        confusion = np.asarray(self.confusion, dtype=float)
        if confusion.ndim != 3 or confusion.shape[1:] != (len(self.labels), len(self.labels)):
            raise ValueError(f"confusion must be workers × {len(self.labels)} × {len(self.labels)}")
        if not np.allclose(confusion.sum(axis=2), 1) or (confusion < 0).any():
            raise ValueError("each worker's confusion rows must be probabilities summing to 1")
        shares = np.asarray(self.shares, dtype=float)
        if shares.shape != (confusion.shape[0],) or not (shares > 0).all():
            raise ValueError("every worker needs a positive share of the work")
        object.__setattr__(self, "confusion", confusion)
        object.__setattr__(self, "shares", shares / shares.sum())

    @property
    def pooled(self) -> np.ndarray:
        """[T, L]: a vote by a worker drawn by share, given the true label."""
        return np.einsum("w,wtl->tl", self.shares, self.confusion)

    def priors(self) -> np.ndarray:
        """The true-label shares the posterior rule weighs with (uniform when unknown)."""
        if self.class_shares is None:
            return np.full(len(self.labels), 1 / len(self.labels))
        shares = np.asarray(self.class_shares, dtype=float)
        return shares / shares.sum()


def worker_confusion(labels: tuple[str, ...], accuracy: float, lean: str | None = None, lean_share: float = 0.0):
    """[T, L]: right with probability ``accuracy``; a share ``lean_share`` of the errors to ``lean``, the rest even."""
    size = len(labels)
    matrix = np.zeros((size, size))
    for t in range(size):
        wrong = [g for g in range(size) if g != t]
        matrix[t, t] = accuracy
        leaning = labels.index(lean) if lean in labels and lean != labels[t] else None
        for g in wrong:
            even = (1 - accuracy) * (1 - (lean_share if leaning is not None else 0)) / len(wrong)
            matrix[t, g] = even + ((1 - accuracy) * lean_share if g == leaning else 0.0)
    return matrix


def noisy_crowd(
    labels: tuple[str, ...],
    *,
    honest: int = 12,
    accuracy: float = 0.9,
    spammers: int = 2,
    lazy: int = 1,
    lazy_label: str = "n",
    lazy_share: float = 2.0,
    class_shares: np.ndarray | None = None,
) -> CrowdModel:
    """A paid platform's crowd: ``honest`` workers right ``accuracy`` of the time (a third of their errors to
    ``lazy_label``), ``spammers`` at random and ``lazy`` workers always ``lazy_label``, each taking
    ``lazy_share`` times an honest worker's share (they are fast)."""
    size = len(labels)
    matrices = [worker_confusion(labels, accuracy, lazy_label, 1 / 3)] * honest
    matrices += [np.full((size, size), 1 / size)] * spammers
    always = np.zeros((size, size))
    always[:, labels.index(lazy_label)] = 1.0
    matrices += [always] * lazy
    shares = [1.0] * (honest + spammers) + [lazy_share] * lazy
    names = tuple([f"honest-{i}" for i in range(honest)] + [f"spammer-{i}" for i in range(spammers)])
    names += tuple(f"lazy-{i}" for i in range(lazy))
    return CrowdModel(labels, np.array(matrices), np.array(shares), names, class_shares)


def pooled_crowd(labels: tuple[str, ...], vote: np.ndarray, class_shares: np.ndarray | None = None) -> CrowdModel:
    """A crowd known only by its pooled vote distribution ([T, L]): one 'worker' of the whole crowd."""
    return CrowdModel(labels, np.asarray(vote, dtype=float)[None], np.ones(1), ("pooled",), class_shares)


def crowd_from_figures(figures: dict) -> CrowdModel:
    """The pooled crowd of a calibration report's ``against_truth`` (``vote``, ``class_shares``)."""
    vote = figures.get("vote") or {}
    labels = tuple(vote)
    if not labels:
        raise ValueError("the report has no fitted crowd model (no votes on the sample yet)")
    matrix = np.array([[float(vote[t].get(g, 0.0)) for g in labels] for t in labels])
    matrix = matrix / matrix.sum(axis=1, keepdims=True)
    shares = figures.get("class_shares") or {}
    priors = np.array([float(shares.get(t, 0.0)) for t in labels]) if shares else None
    if priors is not None and priors.sum() <= 0:
        priors = None
    return pooled_crowd(labels, matrix, priors)


def crowd_from_dict(data: dict, labels: tuple[str, ...]) -> CrowdModel:
    """A crowd model written as JSON (``route_audit --crowd FILE``): either ``{"workers": [{"name",
    "share", "accuracy", "always"?: label, "spam"?: true}], "class_shares"?: {label: share}}`` or
    ``{"vote": {true: {given: p}}, "class_shares"?: ...}``. ValueError naming what is wrong."""
    if "vote" in data:
        return crowd_from_figures(data)
    workers = data.get("workers")
    if not isinstance(workers, list) or not workers:
        raise ValueError('a crowd model needs "workers" (a non-empty list) or "vote"')
    size = len(labels)
    matrices, shares, names = [], [], []
    for i, worker in enumerate(workers):
        if not isinstance(worker, dict):
            raise ValueError(f"workers[{i}] must be an object")
        share = worker.get("share", 1.0)
        if not isinstance(share, int | float) or share <= 0:
            raise ValueError(f"workers[{i}].share must be a positive number")
        if worker.get("always") is not None:
            if worker["always"] not in labels:
                raise ValueError(f"workers[{i}].always must be one of {', '.join(labels)}")
            matrix = np.zeros((size, size))
            matrix[:, labels.index(worker["always"])] = 1.0
        elif worker.get("spam"):
            matrix = np.full((size, size), 1 / size)
        else:
            accuracy = worker.get("accuracy")
            if not isinstance(accuracy, int | float) or not 0 <= accuracy <= 1:
                raise ValueError(f"workers[{i}].accuracy must be in [0, 1] (or give always or spam)")
            matrix = worker_confusion(labels, float(accuracy), worker.get("lean"), float(worker.get("lean_share", 0)))
        matrices.append(matrix)
        shares.append(float(share))
        names.append(str(worker.get("name", f"worker-{i}")))
    priors = data.get("class_shares")
    class_shares = np.array([float(priors.get(t, 0.0)) for t in labels]) if isinstance(priors, dict) else None
    return CrowdModel(labels, np.array(matrices), np.array(shares), tuple(names), class_shares)
