"""Every labelled query's probability of each label, whichever source its label came from.

Pure (numpy, pandas; no Django). A report on a batch's labels
(:mod:`metrics.label_uncertainty`) needs, per query, how likely each of n / f / m / o is:

- **crowd**: Dawid–Skene's posterior, seeded with the gold questions (computed by the caller);
- **ruling**: a researcher's adjudication is taken as certain (one-hot);
- **machine-accepted**: the crowd's label distribution in the blind calibration sample among the
  machine's labels with the same label and *confidence band* — the calibrated accuracy of the
  band for the machine's own label, and where its errors went for the others. Bands are the
  :data:`BANDS` quantile bands of the sample's confidences for that machine label (equal-count,
  so each band has data); a band with fewer than :data:`MIN_BAND` sample queries uses all of
  that label's. Counts are the sample's design weights (post-stratified), smoothed by adding
  :data:`PRIOR_COUNT` to every label (Jeffreys-like: a band never claims certainty from a
  finite sample). A machine label the sample never shows, or a batch without a readable sample,
  falls back to the machine's own confidence (:func:`confidence_rows`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

#: Confidence bands per machine label (quantile bands of the calibration sample).
BANDS = 4
#: A band with fewer sample queries than this falls back to every sample query with that machine label.
MIN_BAND = 10
#: Added to every label's count in a band.
PRIOR_COUNT = 0.5


def band_distributions(
    labels: Sequence[str],
    sample_machine: Sequence[str],
    sample_confidence: Sequence[float],
    sample_human: Sequence[str],
    sample_weights: Sequence[float],
    machine: Sequence[str],
    confidence: Sequence[float],
) -> np.ndarray:
    """``[len(machine) × len(labels)]``: P(crowd label | machine label, confidence band) of each machine-labelled query."""
    labels = list(labels)
    index = {label: i for i, label in enumerate(labels)}
    s_machine = np.asarray(sample_machine, dtype=object)
    s_conf = np.asarray(sample_confidence, dtype=np.float64)
    s_human = np.array([index[h] for h in sample_human], dtype=np.int64)
    s_weight = np.asarray(sample_weights, dtype=np.float64)
    conf = np.asarray(confidence, dtype=np.float64)
    out = np.full((len(machine), len(labels)), PRIOR_COUNT)
    machine = np.asarray(machine, dtype=object)
    for label in set(machine.tolist()):
        same = s_machine == label
        rows = np.flatnonzero(machine == label)
        if not same.any():  # never sampled: the machine's own confidence, as without any sample
            out[rows] = confidence_rows(labels, [label] * len(rows), conf[rows])
            continue
        edges = np.quantile(s_conf[same], np.linspace(0, 1, BANDS + 1)[1:-1]) if same.sum() >= BANDS else []
        sample_band = np.searchsorted(edges, s_conf[same], side="right")
        query_band = np.searchsorted(edges, conf[rows], side="right")
        for band in np.unique(query_band):
            in_band = sample_band == band
            use = in_band if in_band.sum() >= MIN_BAND else np.ones_like(in_band)
            counts = np.bincount(s_human[same][use], weights=s_weight[same][use], minlength=len(labels))
            shares = counts / counts.sum() * use.sum()  # weights rescaled to the band's query count
            out[rows[query_band == band]] += shares
    return out / out.sum(axis=1, keepdims=True)


def confidence_rows(labels: Sequence[str], machine: Sequence[str], confidence: Sequence[float]) -> np.ndarray:
    """Without a calibration sample for them: the machine's confidence for its label, the rest
    spread evenly over the other labels."""
    own = np.clip(np.asarray(confidence, dtype=np.float64), 0.0, 1.0)[:, None]
    chosen = one_hot(labels, machine)
    return chosen * own + (1 - chosen) * (1 - own) / (len(labels) - 1)


def one_hot(labels: Sequence[str], chosen: Sequence[str]) -> np.ndarray:
    """``[len(chosen) × len(labels)]`` certainty of each chosen label."""
    index = {label: i for i, label in enumerate(labels)}
    out = np.zeros((len(chosen), len(labels)))
    out[np.arange(len(chosen)), [index[c] for c in chosen]] = 1.0
    return out
