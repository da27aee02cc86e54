"""The trained pre-labeller: a small text classifier fitted on labelled queries (the model and why:
docs/prelabelling.md, "The pre-labellers"), deterministic, its cross-validated accuracy in every
prediction's ``detail``. ``model`` names the source and a short SHA-256 of the training data, so other
data store new pre-labels beside the old. A query whose text is in the training data is marked
``"in_training": true``: no fair measure of it (calibration leaves it out). scikit-learn is imported
inside the methods, so commands that never train start fast. Pure: no Django.
"""

from __future__ import annotations

import hashlib
import json
import warnings
from collections import Counter
from collections.abc import Sequence
from typing import Any

from annotation.machine.prelabellers.interface import Prediction, PreLabeller, register
from genderbias.labels import LABELS

#: Bump when the features or the classifier change: stored pre-labels of another version are kept apart.
TRAINED_VERSION = "trained-v1"
#: Fewer labelled queries than this make a classifier, and an accuracy, not worth showing.
MIN_TRAINING = 20
#: How much of the source's name goes into ``model`` (the field holds 200 characters).
SOURCE_CHARS = 120


def training_sha256(texts: Sequence[str], labels: Sequence[str]) -> str:
    """A digest of the training data that ignores its order."""
    pairs = sorted(zip(texts, labels, strict=True))
    return hashlib.sha256(json.dumps(pairs, ensure_ascii=False).encode()).hexdigest()


def _key(text: str) -> str:
    """A query's text as the classifier sees it: case and spacing do not matter."""
    return " ".join(text.split()).casefold()


def check_training_data(texts: Sequence[str], labels: Sequence[str]) -> Counter[str]:
    """The count of each label, or a ValueError saying why the data cannot train a classifier."""
    if len(texts) != len(labels):
        raise ValueError(f"{len(texts)} texts but {len(labels)} labels")
    unknown = sorted({label for label in labels if label not in LABELS})
    if unknown:
        raise ValueError(f"unknown label(s) {', '.join(map(repr, unknown))}; use {', '.join(LABELS)}")
    if len(texts) < MIN_TRAINING:
        raise ValueError(f"only {len(texts)} labelled queries; training needs at least {MIN_TRAINING}")
    counts = Counter(labels)
    if len(counts) < 2:
        raise ValueError(f"every training query is labelled {labels[0]!r}; training needs at least two labels")
    return counts


def make_pipeline():
    """The untrained classifier (see the module docstring)."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline as pipeline

    return pipeline(
        TfidfVectorizer(analyzer="char_wb", ngram_range=(2, 5), lowercase=True, sublinear_tf=True, min_df=1),
        LogisticRegression(C=10.0, solver="newton-cg", max_iter=1000, class_weight="balanced"),
    )


def cross_validate(
    texts: Sequence[str], labels: Sequence[str], *, folds: int = 5, seed: int = 0
) -> tuple[float | None, float | None, int, str]:
    """Mean and standard deviation of the accuracy over stratified folds, the folds used, and a note.

    Between two folds and the smallest class's size. A class of a single query cannot be split: then
    no accuracy (``None``) and the note says why, rather than a NaN; folds that could not be fitted are
    left out of the mean, and the note says so."""
    import numpy as np
    from sklearn.model_selection import StratifiedKFold, cross_val_score

    counts = Counter(labels)
    rare = sorted(label for label, count in counts.items() if count < 2)
    if rare:
        ones = ", ".join(f"label {label!r} has 1 training query" for label in rare)
        return None, None, 0, f"not cross-validated: {ones} (at least 2 of each label are needed)"
    n_splits = max(2, min(folds, min(counts.values())))
    splitter = StratifiedKFold(n_splits, shuffle=True, random_state=seed)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="The least populated class", category=UserWarning)
        warnings.filterwarnings("ignore", category=UserWarning, module="sklearn.model_selection")
        scores = cross_val_score(
            make_pipeline(), list(texts), list(labels), cv=splitter, scoring="accuracy", error_score=np.nan
        )
    scored = scores[np.isfinite(scores)]
    if not len(scored):
        return None, None, n_splits, f"not cross-validated: no fold of {n_splits} could be fitted"
    note = "" if len(scored) == n_splits else f"{n_splits - len(scored)} of {n_splits} folds could not be fitted"
    return float(scored.mean()), float(scored.std()), n_splits, note


@register("trained")
class TrainedPreLabeller(PreLabeller):
    """Fitted on ``texts`` and their ``labels`` (codes of :data:`~genderbias.labels.LABELS`);
    ``source`` says where they came from (a file's name, ``batch:NAME``)."""

    prompt_version = TRAINED_VERSION

    def __init__(
        self, texts: Sequence[str], labels: Sequence[str], source: str, *, seed: int = 0, folds: int = 5
    ) -> None:
        super().__init__()
        if folds < 2:
            raise ValueError("folds must be at least 2")
        texts, labels = list(texts), list(labels)
        check_training_data(texts, labels)
        self.source = source
        self.training_size = len(texts)
        self.model = f"tfidf-char_wb2-5+logreg:{source[:SOURCE_CHARS]}@{training_sha256(texts, labels)[:12]}"
        self.cv_accuracy, self.cv_accuracy_std, self.cv_folds, self.cv_note = cross_validate(
            texts, labels, folds=folds, seed=seed
        )
        self.pipeline = make_pipeline().fit(texts, labels)
        self._training_keys = {_key(text) for text in texts}

    def _detail(self, text: str) -> dict[str, Any]:
        return {
            "cv_accuracy": None if self.cv_accuracy is None else round(self.cv_accuracy, 4),
            "cv_accuracy_std": None if self.cv_accuracy_std is None else round(self.cv_accuracy_std, 4),
            "cv_folds": self.cv_folds,
            **({"cv_note": self.cv_note} if self.cv_note else {}),
            "trained_on": self.source,
            "training_size": self.training_size,
            "in_training": _key(text) in self._training_keys,
        }

    def label(self, queries: Sequence[tuple[str, str]]) -> list[Prediction]:
        if not queries:
            return []
        texts = [text for _, text in queries]
        probabilities = self.pipeline.predict_proba(texts)
        classes = [str(c) for c in self.pipeline.classes_]
        predictions = []
        for text, row in zip(texts, probabilities, strict=True):
            best = int(row.argmax())
            predictions.append(Prediction(classes[best], float(row[best]), self._detail(text)))
        return predictions
