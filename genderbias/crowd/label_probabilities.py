"""Every labelled query's probability of each label, whichever source its label came from.

Pure (numpy, pandas; no Django). A report on a batch's labels
(:mod:`genderbias.crowd.label_uncertainty`) needs, per query, how likely each of n / f / m / o is:

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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from genderbias.crowd import calibration, checks, model_choice, resampling
from genderbias.crowd.aggregation import dawid_skene
from genderbias.labels import LABELS

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


@dataclass
class LabelModel:
    """Every judged query's label probabilities and how they move when the crowd model is refitted.

    ``table``: qid × labels, the point estimate (rows sum to 1). ``crowd``: the gold-seeded
    Dawid–Skene fit (:func:`genderbias.crowd.aggregation.dawid_skene`) whose posteriors fill the
    rows of ``crowd_qids``; the other rows (rulings, machine-accepted labels) are held as they are.
    ``quality``: the crowd-quality check as the batch reported it (:func:`crowd_quality`, told its
    discarded assignments); computed from ``crowd`` when not given.

    A report takes it whole (:func:`genderbias.crowd.label_uncertainty.combined_summary`): the table
    is the point estimate, :meth:`draws` the bootstrap's refits, :meth:`leave_out_draws` the
    jackknives' and :meth:`recalibrated` the posteriors as sure as the model is right to be.
    :meth:`fit` makes one from a batch's answers.
    """

    table: Any
    crowd: Any = None
    crowd_qids: Sequence[str] = ()
    quality: Mapping[str, Any] | None = None
    _recalibrated: dict[int, Any] = field(default_factory=dict, init=False, repr=False, compare=False)

    @classmethod
    def fit(
        cls,
        answers: Any,
        gold: Mapping[str, str] | None = None,
        *,
        others: Any = None,
        discarded: int = 0,
        labels: Sequence[str] = LABELS,
    ) -> LabelModel:
        """The label model of a batch: the crowd's answers ``answers`` (a frame of ``task, worker, label``,
        crowd-kit's columns; the gold questions' answers included) fitted by the gold-seeded Dawid–Skene
        (:func:`genderbias.crowd.aggregation.dawid_skene`, ``gold``: task → known label), each
        non-gold task's row its held-out posterior; ``others`` (qid × ``labels``: rulings, accepted
        machine labels) override the crowd's rows and are held as they are. ``quality``: the
        crowd-quality check (:func:`crowd_quality`) told the ``discarded`` assignments; None without answers."""
        import pandas as pd

        gold = dict(gold or {})
        parts = []
        fitted, crowd, quality = None, [], None
        if len(answers):
            fitted = dawid_skene(answers.rename(columns={"task": "item"}), labels, gold=gold)
            # Held out: each query's posterior under the model fitted on the others (calibrated).
            posteriors = fitted.held_out.reindex(columns=list(labels), fill_value=0.0)
            crowd = [q for q in posteriors.index.astype(str) if q not in gold]
            parts.append(posteriors.loc[crowd])
            quality = crowd_quality(fitted, discarded=discarded)
        if others is not None and len(others):
            parts.append(others)
        parts = [part for part in parts if len(part)]
        table = pd.concat(parts) if parts else pd.DataFrame(columns=list(labels), dtype=float)
        table = table[~table.index.duplicated(keep="last")]  # a ruling overrides the crowd's posterior
        table.index = table.index.astype(str)
        table.index.name = "qid"
        table = table.astype(float)
        replaced = set() if others is None else {str(q) for q in others.index}
        return cls(table, fitted, [q for q in crowd if q not in replaced], quality)

    def draws(
        self,
        weights: np.ndarray,
        seed: int = 0,
        resample_others: bool = True,
        progress: resampling.RefitProgress | None = None,
    ) -> np.ndarray:
        """``[B × N × K]`` (float32): the table's rows, the crowd's refitted on each bootstrap draw.

        ``weights`` ``[B × N]``: each query's multiplicity in each draw (rows of ``table``); a
        query's votes follow its row (a ruled query's too: they still describe its workers). The
        crowd model's items that are no row of the table (the gold questions' answers) are
        resampled on their own, with replacement (seeded by ``seed``), or kept once each with
        ``resample_others`` false (a jackknife's rows leave queries out, they do not resample).
        :func:`genderbias.crowd.resampling.bootstrap_posteriors` refits (``progress``: told as it goes).
        """

        weights = np.asarray(weights, dtype=np.float64)
        qids = [str(q) for q in self.table.index]
        out = np.broadcast_to(
            self.table.to_numpy(dtype=np.float32)[None], (weights.shape[0], len(qids), self.table.shape[1])
        ).copy()
        if self.crowd is None or self.crowd.encoded is None or not len(self.crowd_qids):
            return out
        encoded = self.crowd.encoded
        column = {q: i for i, q in enumerate(qids)}
        items = [str(item) for item in encoded.items]
        mapped = np.array([column.get(item, -1) for item in items])
        item_weights = np.empty((weights.shape[0], len(items)))
        inside = mapped >= 0
        item_weights[:, inside] = weights[:, mapped[inside]]
        outside = np.flatnonzero(~inside)
        if len(outside) and not resample_others:
            item_weights[:, outside] = 1.0
        elif len(outside):
            rng = np.random.default_rng([seed, 40])
            item_weights[:, outside] = rng.multinomial(
                len(outside), np.full(len(outside), 1 / len(outside)), weights.shape[0]
            )
        start = self.crowd.posteriors.reindex(columns=list(encoded.labels)).to_numpy(dtype=np.float64)
        return self._place(resampling.bootstrap_posteriors(encoded, item_weights, start, progress=progress), out)

    def leave_out_draws(self, by: str, blocks: int | None = None) -> np.ndarray:
        """``[G × N × K]`` (float32): the table's rows, the crowd's refitted without each group of a
        delete-a-group jackknife ``by`` workers or by answers
        (:func:`genderbias.crowd.resampling.jackknife_groups`, G = ``blocks``, default
        :data:`genderbias.stats.intervals.JACKKNIFE_BLOCKS`; :func:`genderbias.crowd.resampling.leave_out_posteriors`);
        no rows (G = 0) without a crowd. What :class:`genderbias.crowd.label_uncertainty.CorrectedFit` reads
        the workers' variance component from (:func:`genderbias.stats.intervals.extra_variance`)."""
        from genderbias.stats import intervals

        if self.crowd is None or self.crowd.encoded is None or not len(self.crowd_qids):
            return np.empty((0, *self.table.shape), dtype=np.float32)
        encoded = self.crowd.encoded
        start = self.crowd.posteriors.reindex(columns=list(encoded.labels)).to_numpy(dtype=np.float64)
        groups = resampling.jackknife_groups(encoded, by, intervals.JACKKNIFE_BLOCKS if blocks is None else blocks)
        refitted = resampling.leave_out_posteriors(encoded, start, groups)
        out = np.broadcast_to(self.table.to_numpy(dtype=np.float32)[None], (len(refitted), *self.table.shape)).copy()
        return self._place(refitted, out)

    def recalibrated(self, seed: int = 0) -> Any:
        """Where the crowd-quality check warns (:func:`crowd_quality`, any reason): the table with the
        crowd's rows as sure as the crowd model is right to be, else None (no crowd, or the check passes).

        Replicate crowds are drawn from the fit with the items' difficulty spread as the batch's answers
        show it and refitted; the temperature under which their held-out posteriors best predict their
        true labels (:func:`genderbias.crowd.calibration.replicate_temperature`) is applied to the
        batch's (:func:`genderbias.crowd.calibration.tempered`). ``attrs``: ``temperature`` and ``spread``.
        What :meth:`genderbias.crowd.label_uncertainty.CorrectedFit.calibration_bias` sizes the label-corrected
        figures' bias from: on crowds with hard queries or many spammers the fitted posteriors are too
        sure (docs/quality.md "Too sure, and by how much"). Computed once per seed."""
        if seed not in self._recalibrated:
            self._recalibrated[seed] = self._recalibrate(seed)
        return self._recalibrated[seed]

    def _recalibrate(self, seed: int) -> Any:
        if self.crowd is None or self.crowd.encoded is None or not len(self.crowd_qids):
            return None
        quality = self.quality if self.quality is not None else crowd_quality(self.crowd)
        if not quality["warning"]:
            return None
        posteriors, priors, confusion = self.crowd.arrays()
        temperature, spread = calibration.replicate_temperature(
            self.crowd.encoded, posteriors, priors, confusion, seed=seed
        )
        table = self.table.copy()
        rows = table.index.astype(str).isin({str(q) for q in self.crowd_qids})
        table.loc[rows] = calibration.tempered(table.loc[rows].to_numpy(dtype=np.float64), temperature)
        table.attrs = {"temperature": temperature, "spread": spread}
        return table

    def _place(self, refitted: np.ndarray, out: np.ndarray) -> np.ndarray:
        """``out`` with the crowd's rows replaced by those of ``refitted`` (the fit's items, its labels)."""
        encoded = self.crowd.encoded
        qids = [str(q) for q in self.table.index]
        column = {q: i for i, q in enumerate(qids)}
        order = list(self.table.columns)
        reorder = [list(encoded.labels).index(label) for label in order]
        row_of = {str(item): i for i, item in enumerate(encoded.items)}
        crowd_rows = [q for q in self.crowd_qids if q in column and q in row_of]
        out[:, [column[q] for q in crowd_rows], :] = refitted[:, [row_of[q] for q in crowd_rows], :][:, :, reorder]
        return out


#: Below this answer-weighted mean informativeness of the crowd's workers (bits: the mutual
#: information between a query's true label and a worker's answer, :func:`crowd_quality`), the
#: intervals built on the crowd's label probabilities are not to be trusted. Chosen by simulation
#: (``genderbias/crowd/simulation/studies.py``): between the heavy-noise crowds' scores and the moderate
#: ones' (the scores: docs/metrics.md, "When the crowd is too poor").
MIN_INFORMATION = 0.45
#: A worker with fewer answers than :data:`MIN_WORKER_ANSWERS` has a reliability estimated from too
#: few of them, and when more than :data:`MAX_SPARSE_SHARE` of the answers come from such workers the
#: intervals may be too narrow (declared with the crowd model, whose choice of rows reads them too).
MIN_WORKER_ANSWERS = model_choice.MIN_WORKER_ANSWERS
MAX_SPARSE_SHARE = model_choice.MAX_SPARSE_SHARE
#: The model check (:func:`genderbias.crowd.checks.predictive_check`) fails when the real
#: crowd has more split (or split and unanimous) queries than the fitted model's replicate crowds,
#: by more than this many of their standard deviations: the votes on a query are not independent
#: given its label (item difficulty), and the intervals are too narrow. Chosen by simulation
#: (``manage.py crowd_coverage``, docs/quality.md "The crowd model"): one-sided, about 2.5% of
#: crowds the model fits per statistic.
MAX_MISFIT_Z = 2.0


def crowd_quality(fit: Any, *, discarded: int = 0) -> dict[str, Any]:
    """How much the crowd's answers say and whether the model fits them, from a Dawid–Skene fit
    (:class:`genderbias.crowd.aggregation.DawidSkeneResult`): ``information`` (bits per answer,
    answer-weighted mean over the workers of :func:`genderbias.crowd.checks.informativeness`),
    ``accuracy`` (answer-weighted mean probability of answering the true label), ``uninformative``
    (share of answers from workers whose answers carry under 0.1 bit: spammers, a lazy worker),
    ``workers``, ``answers``, the ``threshold``, ``model`` (one-coin, by-label, full or full-by-label, as the judgments chose:
    :func:`genderbias.crowd.model_choice.choose_shrinkage`), ``misfit`` (the largest z of the
    posterior-predictive check, :func:`genderbias.crowd.checks.predictive_check`) and
    ``warning``: true when ``information`` is below :data:`MIN_INFORMATION` or ``misfit`` above
    :data:`MAX_MISFIT_Z`, or ``sparse`` (the share of answers from workers with fewer than
    :data:`MIN_WORKER_ANSWERS`) above :data:`MAX_SPARSE_SHARE`, or ``selected``: ``discarded``
    assignments (more than 0) lost their other answers for failing gold
    (:func:`annotation.results.selectors.gold.gold_discarded_assignments`), i.e. the label-corrected intervals may
    under-cover; ``reasons`` says which.

    Why ``selected`` is a fact of the batch, not a test: the model reads every gold answer, the failed
    ones too, but the labels then come only from the assignments that passed, and whether that selection
    is harmless (a worker as good in every HIT) or not (attention that comes and goes, so a passed HIT's
    answers are better than the worker's record) is the one thing the kept answers cannot show: on the
    simulated gold-selected crowd the posterior-predictive check fires no more often than on the crowds it
    fits (docs/quality.md, "The crowd model")."""

    encoded = fit.encoded
    if encoded is None or encoded.n_items == 0:
        return {"warning": False, "information": None, "accuracy": None, "uninformative": None,
                "workers": 0, "answers": 0, "threshold": MIN_INFORMATION, "model": None, "misfit": None,
                "reasons": [], "discarded": int(discarded)}  # fmt: skip
    _, priors, confusion = fit.arrays()
    answers = np.bincount(encoded.worker_idx, minlength=encoded.n_workers).astype(np.float64)
    information = checks.informativeness(confusion, priors)
    accuracy = checks.worker_accuracy(confusion, priors)
    mean_information = float((information * answers).sum() / answers.sum())
    check = checks.predictive_check(encoded, priors, confusion)
    misfit = max(check["split"]["z"], check["extreme"]["z"], check["gold"]["z"])
    reasons = []
    if mean_information < MIN_INFORMATION:
        reasons.append("information")
    if misfit > MAX_MISFIT_Z:
        reasons.append("misfit")
    sparse = model_choice.sparse_share(encoded)
    if sparse > MAX_SPARSE_SHARE:
        reasons.append("sparse")
    if discarded > 0:
        reasons.append("selected")
    return {
        "warning": bool(reasons),
        "reasons": reasons,
        "information": mean_information,
        "accuracy": float((accuracy * answers).sum() / answers.sum()),
        "uninformative": float(answers[information < 0.1].sum() / answers.sum()),
        "workers": int(encoded.n_workers),
        "answers": int(answers.sum()),
        "threshold": MIN_INFORMATION,
        "model": encoded.choice.model if encoded.choice is not None else None,
        "misfit": float(misfit),
        "split": check["split"],
        "gold": check["gold"],
        "misfit_threshold": MAX_MISFIT_Z,
        "sparse": sparse,
        "min_worker_answers": MIN_WORKER_ANSWERS,
        "discarded": int(discarded),
    }
