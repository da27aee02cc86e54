"""The one-coin layer of the crowd model (the model whole: :mod:`.estimation`): each worker's accuracy, one
for every label or one skill on the crowd's accuracy by true label, and the crowd's error pattern E.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = [
    "FLOOR", "LABEL_PRIOR", "ONE_COIN", "PATTERN_PRIOR", "SKILL_PRIOR", "accuracy_by_label", "coins", "max_last",
    "one_coin_rows", "pooled_accuracy", "skills", "sum_last",
]  # fmt: skip

#: Full rows not offered, or one accuracy for every label: an infinite prior (``Encoded.shrinkage``,
#: ``Encoded.label_prior``).
ONE_COIN = float("inf")
#: A floor under every probability, against log(0) for a label nobody gave.
FLOOR = 1e-6
#: Answers' worth of the crowd's pooled accuracy in the Beta prior of each worker's accuracy a_w: a worker
#: with few answers agrees with the posteriors its own votes made, so its accuracy reads too high
#: (docs/quality.md, "The crowd model").
SKILL_PRIOR = 25.0
#: The pooled accuracy's own prior: :data:`POOLED_PRIOR` answers of "right :data:`POOLED_RIGHT` of the time".
POOLED_PRIOR = 2.0
POOLED_RIGHT = 0.7
#: Answers' worth of the crowd's overall accuracy in the prior of its accuracy by label (:func:`accuracy_by_label`).
LABEL_PRIOR = 50.0
#: :func:`skills`' Newton steps, the skill's bound in logits, and the clip of accuracies before their logit.
SKILL_STEPS = 8
SKILL_BOUND = 8.0
SKILL_CLIP = 1e-4
#: Pseudo-answers in each wrong cell of the crowd's error pattern E.
PATTERN_PRIOR = 1.0


@dataclass(frozen=True)
class Coins:
    """Every draw's soft counts: each worker's right and all answers ([B × W]), the same by true label
    ([B × W × T]) and the crowd's pooled wrong answers ``wrong`` [B × T × G]. The totals are not summed from
    the by-label counts, so one coin's fits stay bit for bit those stored before the coin by label."""

    right: np.ndarray
    answers: np.ndarray
    right_by_label: np.ndarray
    answers_by_label: np.ndarray
    wrong: np.ndarray

    @property
    def pooled(self) -> np.ndarray:
        """The crowd's MAP accuracy [B]."""
        return pooled_accuracy(self.right.sum(axis=1), self.answers.sum(axis=1))

    @property
    def pattern(self) -> np.ndarray:
        """E [B × T × G]: rows sum to 1 over the wrong answers, 0 on the diagonal."""
        k = self.wrong.shape[-1]
        cells = self.wrong + PATTERN_PRIOR * (1.0 - np.eye(k))
        return cells / cells.sum(axis=2, keepdims=True)

    def prior_answers(self) -> np.ndarray:
        """[B × T]: the skill prior's :data:`SKILL_PRIOR` answers, spread over the true labels as the crowd's are."""
        per_label = self.answers_by_label.sum(axis=1)
        return SKILL_PRIOR * per_label / np.maximum(per_label.sum(axis=1, keepdims=True), FLOOR)

    def accuracy(self, label_prior: float = ONE_COIN) -> np.ndarray:
        """Each worker's MAP accuracy by true label [B × W × T]: a_w for every label (one coin, ``label_prior``
        infinite), or σ(λ_t + δ_w) (:func:`skills` on :func:`accuracy_by_label`)."""
        if label_prior == ONE_COIN:
            a = (self.right + SKILL_PRIOR * self.pooled[:, None]) / (self.answers + SKILL_PRIOR)
            return np.broadcast_to(a[:, :, None], self.answers_by_label.shape)
        crowd = accuracy_by_label(self.right_by_label.sum(axis=1), self.answers_by_label.sum(axis=1), label_prior)
        return skills(self.right_by_label, self.answers_by_label, crowd, self.prior_answers())[0]


def sum_last(x: np.ndarray) -> np.ndarray:
    """``x.sum(axis=-1)``, bit for bit, without numpy's reduction over a short last axis (the labels), which
    costs several times an elementwise add there and runs in every EM step: numpy adds an axis of fewer than 8
    in order, as these adds do (docs/benchmarks.md, "The crowd model's EM")."""
    if x.shape[-1] >= 8:
        return x.sum(axis=-1)
    out = x[..., 0].copy()
    for j in range(1, x.shape[-1]):
        out += x[..., j]
    return out


def max_last(x: np.ndarray) -> np.ndarray:
    """``x.max(axis=-1)``, bit for bit (a maximum is exact in any order), without numpy's slow short-axis
    reduction."""
    out = x[..., 0].copy()
    for j in range(1, x.shape[-1]):
        np.maximum(out, x[..., j], out=out)
    return out


def pooled_accuracy(right, answers):
    return (right + POOLED_PRIOR * POOLED_RIGHT) / (answers + POOLED_PRIOR)


def accuracy_by_label(right: np.ndarray, answers: np.ndarray, label_prior: float) -> np.ndarray:
    """The crowd's accuracy by true label [.. × T]: each label's share right, shrunk towards the overall
    accuracy with ``label_prior`` answers' worth. A rare label is read as the crowd's, since its accuracy
    from its own few soft counts feeds on itself in EM (docs/quality.md, "Not done (issue 66)")."""
    overall = pooled_accuracy(right.sum(axis=-1, keepdims=True), answers.sum(axis=-1, keepdims=True))
    return (right + label_prior * overall) / (answers + label_prior)


def _logit(p: np.ndarray) -> np.ndarray:
    p = np.clip(p, SKILL_CLIP, 1.0 - SKILL_CLIP)
    return np.log(p / (1.0 - p))


def skills(right: np.ndarray, answers: np.ndarray, crowd: np.ndarray, prior: np.ndarray):
    """Each worker's one skill δ_w on λ_t = logit(``crowd``): ``(σ(λ_t + δ_w) [.. × W × T], δ [.. × W],
    curvature [.. × W])``. δ_w is the MAP under ``prior`` [.. × T] answers right as often as the crowd (concave,
    Newton from 0): a better worker shifts every label's accuracy up while the crowd's asymmetry stays."""
    lam = _logit(crowd)[..., None, :]  # [.. × 1 × T]
    hits = right + (prior * crowd)[..., None, :]
    total = answers + prior[..., None, :]
    delta = np.zeros(right.shape[:-1])
    for _ in range(SKILL_STEPS):
        sig = 1.0 / (1.0 + np.exp(-(lam + delta[..., None])))
        gradient = sum_last(hits - total * sig)
        curvature = sum_last(total * sig * (1.0 - sig))
        delta = np.clip(delta + gradient / np.maximum(curvature, FLOOR), -SKILL_BOUND, SKILL_BOUND)
    sig = 1.0 / (1.0 + np.exp(-(lam + delta[..., None])))
    return sig, delta, sum_last(total * sig * (1.0 - sig))


def coins(counts: np.ndarray) -> Coins:
    k = counts.shape[-1]
    right, by_label = np.einsum("bwtt->bw", counts), np.einsum("bwtt->bwt", counts)
    return Coins(right, counts.sum(axis=(2, 3)), by_label, counts.sum(axis=3), counts.sum(axis=1) * (1.0 - np.eye(k)))


def one_coin_rows(accuracy: np.ndarray, pattern: np.ndarray) -> np.ndarray:
    """[B × W × T × G]: θ_w(t, t) = a_wt, θ_w(t, g) = (1 − a_wt) E(t, g)."""
    k = pattern.shape[-1]
    a = accuracy[:, :, :, None]
    return a * np.eye(k) + (1.0 - a) * pattern[:, None, :, :]
