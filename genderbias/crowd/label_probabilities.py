"""Every labelled query's probability of each label, whichever source its label came from (what
:mod:`.label_uncertainty` reads): the crowd's gold-seeded Dawid–Skene posterior, a researcher's ruling (one-hot), or
for a machine-accepted label the crowd's label shares in the calibration sample within its confidence band
(:data:`BANDS`, :data:`MIN_BAND`, :data:`PRIOR_COUNT`; the machine's own confidence where the sample never shows the
label, :func:`confidence_rows`): docs/metrics.md, "Each query's label probabilities".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from genderbias.crowd import calibration, checks, model_choice, resampling, shared_errors
from genderbias.crowd.aggregation import dawid_skene
from genderbias.labels import LABELS

__all__ = [
    "MAX_MISFIT_Z", "LabelModel", "band_distributions", "confidence_rows", "crowd_quality", "one_hot",
]  # fmt: skip

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
    """Without a calibration sample: the machine's confidence for its label, the rest spread evenly."""
    own = np.clip(np.asarray(confidence, dtype=np.float64), 0.0, 1.0)[:, None]
    chosen = one_hot(labels, machine)
    return chosen * own + (1 - chosen) * (1 - own) / (len(labels) - 1)


def one_hot(labels: Sequence[str], chosen: Sequence[str]) -> np.ndarray:
    """``[len(chosen) × len(labels)]`` certainty of each chosen label."""
    index = {label: i for i, label in enumerate(labels)}
    out = np.zeros((len(chosen), len(labels)))
    out[np.arange(len(chosen)), [index[c] for c in chosen]] = 1.0
    return out


#: :attr:`LabelModel._shared_errors` before the check has run (its result may be None: no crowd model).
_NOT_RUN = object()


@dataclass
class LabelModel:
    """Every judged query's label probabilities and how they move when the crowd model is refitted.

    ``table``: qid × labels (rows sum to 1). ``crowd``: the Dawid–Skene fit whose posteriors fill the rows
    of ``crowd_qids``; the other rows (rulings, machine-accepted labels) are held as they are.
    ``quality``: the batch's :func:`crowd_quality` (computed from ``crowd`` when not given).
    """

    table: Any
    crowd: Any = None
    crowd_qids: Sequence[str] = ()
    quality: Mapping[str, Any] | None = None
    _recalibrated: dict[int, Any] = field(default_factory=dict, init=False, repr=False, compare=False)
    _shared_errors: Any = field(default=_NOT_RUN, init=False, repr=False, compare=False)

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
        """A batch's label model: ``answers`` (``task, worker, label``, gold answers included) fitted by the
        gold-seeded Dawid–Skene, each non-gold task's row its held-out posterior; ``others`` (qid × ``labels``:
        rulings, accepted machine labels) override the crowd's rows. ``discarded``: failed-gold assignments
        (:func:`crowd_quality`)."""
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

        ``weights`` ``[B × N]``: each query's multiplicity per draw; its votes follow it (a ruled query's
        too: they still describe its workers). The crowd's items outside the table (gold questions) are
        resampled on their own (``seed``), or kept once each without ``resample_others`` (a jackknife
        leaves out, it does not resample).
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
        """``[G × N × K]`` (float32): the table's rows, the crowd's refitted without each delete-a-group
        jackknife group ``by`` workers or answers (G = ``blocks``, default
        :data:`genderbias.stats.intervals.JACKKNIFE_BLOCKS`; 0 without a crowd): the workers' variance."""
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
        """Where :func:`crowd_quality` warns: the table with the crowd's rows tempered by
        :func:`.calibration.replicate_temperature` (as sure as the model is right to be; ``attrs``:
        ``temperature``, ``spread``), else None. Fitted posteriors are too sure on crowds with hard queries or
        many spammers (docs/quality.md "Too sure, and by how much"). Computed once per seed."""
        if seed not in self._recalibrated:
            self._recalibrated[seed] = self._recalibrate(seed)
        return self._recalibrated[seed]

    def warns(self) -> bool:
        """Whether :func:`crowd_quality` warns on the crowd's fit (False without one): the check that decides
        the label-based intervals' construction (:func:`genderbias.stats.intervals.construction_for`) and
        whether they reach as far as the posteriors' bias (:meth:`recalibrated`)."""
        if self.crowd is None or self.crowd.encoded is None or not len(self.crowd_qids):
            return False
        if self.quality is None:
            self.quality = crowd_quality(self.crowd)
        return bool(self.quality["warning"])

    def shared_errors(self) -> Any:
        """:func:`.shared_errors.crowd_shared_errors` on the crowd's own fit (None without one), computed once:
        the report's check of errors shared by query and part of :meth:`trusted`."""
        if self._shared_errors is _NOT_RUN:
            found = None
            if self.crowd is not None and self.crowd.encoded is not None and len(self.crowd_qids):
                found = shared_errors.crowd_shared_errors([], labels=LABELS, fit=self.crowd)
            self._shared_errors = found
        return self._shared_errors

    def trusted(self) -> bool:
        """Whether the crowd model alone carries the label-based intervals
        (:func:`genderbias.stats.intervals.construction_for`): its check passes (:meth:`warns`) and the check of
        errors shared by query passes clearly (:attr:`.shared_errors.CrowdSharedErrors.clear`). Without a crowd
        model there is nothing to distrust."""
        if self.warns():  # first: the check of errors shared by query is not run for it
            return False
        found = self.shared_errors()
        return found is None or found.clear

    def _recalibrate(self, seed: int) -> Any:
        if not self.warns():
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


#: Below this answer-weighted mean informativeness (bits of label per answer) the intervals built on the
#: crowd's labels are not to be trusted; chosen by simulation between the heavy and the moderate crowds'
#: scores (docs/metrics.md, "When the crowd is too poor").
MIN_INFORMATION = 0.45
#: :func:`.checks.predictive_check` fails above this z (more split queries than the replicate crowds:
#: votes not independent given the label, intervals too narrow); one-sided, chosen by simulation
#: (docs/quality.md "The crowd model").
MAX_MISFIT_Z = 2.0


def crowd_quality(fit: Any, *, discarded: int = 0) -> dict[str, Any]:
    """How much a Dawid–Skene fit's answers say and whether the model fits them: ``information`` (bits
    per answer, answer-weighted), ``accuracy``, ``uninformative`` (share of answers under 0.1 bit),
    ``workers``, ``answers``, ``model`` (the chosen one), ``misfit`` (largest z of
    :func:`.checks.predictive_check`), ``sparse`` and ``warning`` with its ``reasons``: information below
    :data:`MIN_INFORMATION`, misfit above :data:`MAX_MISFIT_Z`, sparse above :data:`.model_choice.MAX_SPARSE_SHARE`, or
    ``selected`` (``discarded`` > 0 assignments lost their answers for failing gold).

    ``selected`` is a fact of the batch, not a test: whether keeping only passed assignments is harmless is
    the one thing the kept answers cannot show (docs/quality.md, "The crowd model").
    """

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
    if sparse > model_choice.MAX_SPARSE_SHARE:
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
        "min_worker_answers": model_choice.MIN_WORKER_ANSWERS,
        "discarded": int(discarded),
    }
