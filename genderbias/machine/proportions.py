"""Label-corrected figures of a batch from predicted labels and an expert audit sample (PPI++): a class's
share, a run's mean over a class's queries, and the paired difference of two runs there, for a machine's labels
and for the crowd's alike (docs/quality.md, "Audit samples"). Pure; ``ppi_py`` is the tests' reference.

The predicted figure is precise but biased (a crowd's errors shared on hard queries no crowd model corrects),
the audit's unbiased but noisy. Prediction-powered inference (Angelopoulos, Bates, Fannjiang, Jordan & Zrnic,
Science 2023) combines them, PPI++ (Angelopoulos, Duchi & Zrnic, arXiv 2311.01453) tunes λ, the trust in the
prediction (1: classic PPI, 0: the audit alone; default: the λ in [0, 1] of least estimated variance). The
interval rests only on the audit being random; the unlabelled set is the *whole* batch, so the estimand is this
batch's figure. Weights ``w = N_s/n_s`` of a stratified audit give the (conservative) stratified estimate.

Every figure is the root θ of E[A − θ B] = 0 over the true labels T: a share of class c has ``A = 1[T = c]``,
``B = 1``; a run's mean over class c ``A = v · 1[T = c]``, ``B = 1[T = c]``; a paired difference is that mean of
the per-query difference. The prediction stands in for T in Â, B̂. ``ppi_py.ppi_mean_ci`` on ``Y_θ = A − θ B`` is
a test of θ; the interval is every θ it does not reject (inverted as Fieller's is: the delta method under-covers
small audits), found on a grid of :data:`GRID` points a side and by Brent's method, clamped to the values' range;
the estimate is the root of the test's centre. For a share this is ``ppi_mean_ci``'s interval exactly.

Small audits (issue 81). A class mean's variance and λ rest on the audit's members of the class: its quantile
is Student's t with (members − 1) degrees of freedom. Where the prediction is mostly right, λ is near 1 and the
rectifier is about zero but on the audited queries the prediction puts on the wrong side of the class: its
variance rests on those few, and under-covers where they are few (ppi_py's interval too). Where they are fewer
than z² (3.84), as Agresti–Coull's count, z²/2 more of them are added, each of the members' mean (v − θ)²:
variance ``p₀ · mean((v − θ)²)`` over the members, on top (docs/quality.md, "Five times the studies"). A
share's rectifier variance is floored at ``p₀(1 − p₀)``, ``p₀ = (z²/2)/(n + z²)`` (Agresti–Coull's for an
audit holding none of the class), only where the audit cannot show that variance: fewer than ``n · p₀``
audited queries of the class or of the rest (else an audit without a gendered query gives an interval of no
width), or a prediction right on every audited query (a crowd whose errors all lean one way). Elsewhere a share
is ``ppi_mean_ci``'s interval exactly.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import NormalDist

import numpy as np
from scipy.optimize import brentq
from scipy.stats import t as student_t

from genderbias.labels import LABELS
from genderbias.ranking.defaults import LEVEL

__all__ = ["audit_class_mean", "audit_difference", "audit_share", "category_proportions"]

#: The error level of every interval here: the project's one confidence level (95%).
ALPHA = 1 - LEVEL
#: Grid points between the estimate and each end of the range, where the inverted test's outermost
#: change of verdict is looked for before Brent's method refines it.
GRID = 64


def category_proportions(
    human: Sequence[str],
    machine_sample: Sequence[str],
    machine_rest: Sequence[str],
    *,
    weights: Sequence[float] | None = None,
    labels: Sequence[str] = LABELS,
    alpha: float = ALPHA,
    lam: float | None = None,
) -> dict[str, dict]:
    """Share of each category in the whole batch: :func:`audit_share` per label (``predicted_only`` named
    ``machine_only``). human / machine_sample: the labelled sample, in one order; machine_rest: the other queries'
    machine labels. weights: inverse inclusion probabilities (N_s/n_s of the item's stratum,
    :func:`genderbias.machine.calibration_sample.stratum_weights`; ``None``: simple random).
    lam: ``None`` tunes λ (PPI++), 1 is classic PPI, 0 ignores the machine.
    """
    labels = _validate_labels(labels)
    _validate(human, machine_sample, machine_rest, labels, alpha, lam)
    w = _validate_weights(weights, len(human))
    predicted = _codes([*machine_sample, *machine_rest], labels)
    audited = np.arange(len(human))
    truth = _codes(human, labels)
    result = {}
    for k, label in enumerate(labels):
        row = _share(truth == k, predicted == k, audited, w, alpha, lam)
        keys = ("estimate", "ci", "predicted_only", "sample_only", "sample_ci")
        result[label] = {key.replace("predicted", "machine"): row[key] for key in keys}
    return result


def audit_share(
    truth: Sequence[str],
    predicted: Sequence[str | None],
    audited: Sequence[int],
    *,
    label: str,
    weights: Sequence[float] | None = None,
    labels: Sequence[str] = LABELS,
    alpha: float = ALPHA,
    lam: float | None = None,
) -> dict:
    """The share of ``label`` in the batch with its PPI++ interval at level 1 − alpha.

    predicted: every query's predicted label in batch order (the crowd's or a machine's; ``None``: none, a disputed
    majority); audited: the audit sample's positions in it (random, distinct); truth: their expert labels in that
    order; weights and lam: as :func:`category_proportions`. Returns {"estimate", "ci": [lo, hi], "lam",
    "predicted_only", "sample_only": the sample's (weighted) share, "sample_ci": its own interval (λ = 0)}."""
    labels, truth_codes, predicted_codes, index, w = _validate_audit(
        truth, predicted, audited, weights, labels, alpha, lam
    )
    k = _label_code(label, labels)
    return _share(truth_codes == k, predicted_codes == k, index, w, alpha, lam)


def audit_class_mean(
    truth: Sequence[str],
    predicted: Sequence[str | None],
    audited: Sequence[int],
    values: Sequence[float],
    *,
    label: str,
    weights: Sequence[float] | None = None,
    labels: Sequence[str] = LABELS,
    alpha: float = ALPHA,
    lam: float | None = None,
) -> dict:
    """A run's mean over the queries truly labelled ``label``, with its PPI++ interval within the values' range.
    values: the run's value on every query, in ``predicted``'s order; the rest and the keys as :func:`audit_share`
    (``predicted_only``: the mean over the queries predicted ``label``, ``None`` if none; ``lam``: at the estimate)."""
    labels, truth_codes, predicted_codes, index, w = _validate_audit(
        truth, predicted, audited, weights, labels, alpha, lam
    )
    v = _validate_values(values, len(predicted_codes), "values")
    return _class_mean(truth_codes, predicted_codes, index, v, _label_code(label, labels), label, w, alpha, lam)


def audit_difference(
    truth: Sequence[str],
    predicted: Sequence[str | None],
    audited: Sequence[int],
    first: Sequence[float],
    second: Sequence[float],
    *,
    label: str,
    weights: Sequence[float] | None = None,
    labels: Sequence[str] = LABELS,
    alpha: float = ALPHA,
    lam: float | None = None,
) -> dict:
    """The paired difference ``second − first`` of two runs' means over the queries truly labelled
    ``label``: :func:`audit_class_mean` of the per-query differences (same keys)."""
    a = _validate_values(first, len(predicted), "first")
    b = _validate_values(second, len(predicted), "second")
    return audit_class_mean(
        truth, predicted, audited, b - a, label=label, weights=weights, labels=labels, alpha=alpha, lam=lam
    )


def _agresti_coull(n: int, alpha: float) -> tuple[float, float]:
    """(z², p₀ = (z²/2)/(n + z²)): Agresti–Coull's pseudo-counts on an audit of ``n``, the one rule behind both
    small-audit corrections ("Small audits")."""
    z2 = NormalDist().inv_cdf(1 - alpha / 2) ** 2
    return z2, (z2 / 2) / (n + z2)


def _share(in_truth, in_predicted, audited, w, alpha, lam) -> dict:
    """The share of a class: A = 1[T = c], B = 1, known on every query (``in_truth`` over the audit,
    ``in_predicted`` over the batch): the test is ``ppi_mean_ci`` of A shifted by θ, weights or not."""
    a = in_truth.astype(float)
    ahat = in_predicted.astype(float)
    _, p0 = _agresti_coull(len(a), alpha)
    members = float(a.sum())
    one_sided = min(members, len(a) - members) < len(a) * p0  # fewer than Agresti-Coull's z²/2 on a side
    never_wrong = not (a != ahat[audited]).any()  # the audit shows no error of the prediction
    floor = p0 * (1 - p0) if one_sided or never_wrong else 0.0
    moments = _Moments(a, np.zeros(len(a)), ahat, np.zeros(len(ahat)), audited, w, known=1.0, floor=floor)
    return _figure(moments, (0.0, 1.0), alpha, lam, float(ahat.mean()))


def _class_mean(truth_codes, predicted_codes, audited, v, k, label, w, alpha, lam) -> dict:
    """A class mean: A = v · 1[T = c], B = 1[T = c]."""
    members = truth_codes == k
    if members.sum() < 2:
        raise ValueError(
            f"The audit sample holds {int(members.sum())} queries labelled {label!r}; "
            "a class mean needs at least 2 of them (a larger audit sample)."
        )
    b = members.astype(float)
    bhat = (predicted_codes == k).astype(float)
    span = (float(v.min()), float(v.max()))
    z2, p0 = _agresti_coull(len(members), alpha)
    pseudo = p0 if (members != bhat[audited].astype(bool)).sum() < z2 else 0.0  # few errors: "Small audits"
    moments = _Moments(v[audited] * b, b, v * bhat, bhat, audited, w, df=int(members.sum()) - 1, pseudo=pseudo)
    return _figure(moments, span, alpha, lam, float(v[bhat == 1].mean()) if bhat.any() else None)


def _figure(moments: _Moments, span: tuple[float, float], alpha: float, lam, predicted_only: float | None) -> dict:
    """The keys :func:`audit_share` returns: the PPI++ figure at ``lam`` beside the audit's own (λ = 0)."""
    estimate, lo, hi, lam_used = _inverted_interval(moments, span, alpha, lam)
    sample_estimate, sample_lo, sample_hi, _ = _inverted_interval(moments, span, alpha, 0.0)
    return {
        "estimate": estimate,
        "ci": [lo, hi],
        "lam": lam_used,
        "predicted_only": predicted_only,
        "sample_only": sample_estimate,
        "sample_ci": [sample_lo, sample_hi],
    }


class _Moments:
    """The PPI++ test of E[A − θ B] = 0 at any θ, as ``ppi_py.ppi_mean_ci`` computes it on Y = A − θB (audit),
    Ŷ = Â − θB̂ and the whole batch's Ŷ as the unlabelled set, ``w`` rescaled to mean 1.

    a, b: A and B on the audit (n); ahat, bhat: on the batch (N); audited: the audit's positions in the batch.
    known: a constant part of B (a share's B = 1), tested as E[A − θB] − θ · known, since estimating a known
    constant from a weighted sample only adds variance. floor, df: see "Small audits" (df None: normal quantile);
    pseudo: the share of pseudo-errors there, each the mean over the audit's members (B = 1) of (w · (v − θ))².
    """

    def __init__(
        self, a, b, ahat, bhat, audited, w, known=0.0, floor=0.0, df: int | None = None, pseudo: float = 0.0
    ) -> None:
        self.known, self.floor, self.df, self.pseudo = known, floor, df, pseudo
        self.a, self.b = a[:, None], b[:, None]
        self.ahat, self.bhat = ahat[audited][:, None], bhat[audited][:, None]
        self.n, self.big_n = len(a), len(ahat)
        self.w = np.ones((self.n, 1)) if w is None else (w * self.n / w.sum())[:, None]
        # The batch's Ŷ = Â − θB̂: mean and population variance are quadratics in θ of these.
        self.mean_a, self.mean_b = float(ahat.mean()), float(bhat.mean())
        self.var_aa, self.var_bb = float(ahat.var()), float(bhat.var())
        self.cov_ab = float(np.mean((ahat - self.mean_a) * (bhat - self.mean_b)))
        # A prediction constant over the batch carries nothing, and PPI++'s λ would be 0/0: the sample alone.
        self.uninformative = np.ptp(ahat) == 0 and np.ptp(bhat) == 0

    def test(self, theta: np.ndarray, lam: float | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(PPI++ mean of Y_θ, its standard error, the λ used) at each θ of ``theta`` (1-d)."""
        n, big_n, w = self.n, self.big_n, self.w
        y = self.a - theta * self.b
        yhat = self.ahat - theta * self.bhat
        mean_u = self.mean_a - theta * self.mean_b
        var_u = np.maximum(self.var_aa - 2 * theta * self.cov_ab + theta**2 * self.var_bb, 0.0)
        if lam is not None or self.uninformative:
            lam_t = np.full(theta.shape, 0.0 if lam is None else float(lam))
        else:
            # ppi_py's _calc_lam_glm (clip=True) for a mean: grads at the λ = 1 estimate; the
            # variance (ddof 1) of the sample's and the batch's predicted grads stacked together.
            p1 = mean_u + (w * (y - yhat)).mean(axis=0)
            g, gh = w * (y - p1), w * (yhat - p1)
            cov = np.mean((g - g.mean(axis=0)) * (gh - gh.mean(axis=0)), axis=0)
            d_u = mean_u - p1
            centre = (gh.sum(axis=0) + big_n * d_u) / (n + big_n)
            squares = ((gh - centre) ** 2).sum(axis=0) + big_n * (var_u + (d_u - centre) ** 2)
            var = squares / (n + big_n - 1)
            with np.errstate(divide="ignore", invalid="ignore"):
                lam_t = np.where(var > 0, np.clip(cov / ((1 + n / big_n) * var), 0.0, 1.0), 0.0)
        rectifier = w * (y - lam_t * yhat)
        estimate = lam_t * mean_u + rectifier.mean(axis=0) - theta * self.known
        variance = np.maximum(rectifier.var(axis=0), self.floor)
        if self.pseudo:  # the members' (w · (v − θ))²: A = v · B, so (A − θB) is v − θ on them
            members = self.b[:, 0] == 1
            variance = variance + self.pseudo * ((w * y)[members] ** 2).mean(axis=0)
        se = np.sqrt(np.maximum(lam_t**2 * var_u / big_n + variance / n, 0.0))
        return estimate, se, lam_t


def _inverted_interval(
    moments: _Moments, span: tuple[float, float], alpha: float, lam: float | None
) -> tuple[float, float, float, float]:
    """(estimate, low, high, λ at the estimate): the θ in ``span`` whose PPI++ interval of E[A − θB]
    holds 0 (their hull), and the root of its centre."""
    z = NormalDist().inv_cdf(1 - alpha / 2) if moments.df is None else float(student_t.ppf(1 - alpha / 2, moments.df))
    low_end, high_end = span
    xtol = 1e-12 * max(1.0, high_end - low_end)

    def centre(x: float) -> float:
        return float(moments.test(np.array([x]), lam)[0][0])

    def rejection(x) -> np.ndarray:
        estimate, se, _ = moments.test(np.atleast_1d(np.asarray(x, dtype=float)), lam)
        return estimate**2 - (z * se) ** 2  # > 0: rejected at level alpha

    if high_end == low_end or centre(low_end) <= 0:
        theta = low_end
    elif centre(high_end) >= 0:
        theta = high_end
    else:
        theta = brentq(centre, low_end, high_end, xtol=xtol)
    lam_used = float(moments.test(np.array([theta]), lam)[2][0])
    if rejection(theta)[0] > 0:  # the whole interval lies outside the range: clamped to its end
        return theta, theta, theta, lam_used

    def outermost(end: float) -> float:
        points = np.linspace(end, theta, GRID + 1)
        rejected = rejection(points)
        j = int(np.argmax(rejected <= 0))
        if j == 0 or rejected[j] == 0:
            return float(points[j])
        return float(brentq(lambda x: float(rejection(x)[0]), points[j - 1], points[j], xtol=xtol))

    return float(theta), outermost(low_end), outermost(high_end), lam_used


def _codes(values: Sequence[str | None], labels: tuple[str, ...]) -> np.ndarray:
    """Each label's position in ``labels``; ``None`` (no label) is −1."""
    index = {label: k for k, label in enumerate(labels)}
    index[None] = -1
    return np.fromiter((index[v] for v in values), dtype=int, count=len(values))


def _label_code(label: str, labels: tuple[str, ...]) -> int:
    if label not in labels:
        raise ValueError(f"label must be one of {list(labels)}, got {label!r}.")
    return labels.index(label)


def _validate_audit(truth, predicted, audited, weights, labels, alpha, lam):
    """(labels, truth codes, predicted codes, audited positions, weights) of an audit sample, or ValueError
    naming the argument at fault."""
    labels = _validate_labels(labels)
    if len(truth) != len(audited):
        raise ValueError(
            f"truth and audited must describe the same queries in the same order: "
            f"{len(truth)} true labels, {len(audited)} audited positions."
        )
    if len(truth) < 2:
        raise ValueError(f"The audit sample needs at least 2 queries for a variance, got {len(truth)}.")
    unknown = sorted({str(v) for v in truth} - set(labels))
    if unknown:
        raise ValueError(f"truth has labels outside {list(labels)}: {unknown}.")
    unknown = sorted({str(v) for v in predicted if v is not None} - set(labels))
    if unknown:
        raise ValueError(f"predicted has labels outside {list(labels)} (or None): {unknown}.")
    index = np.asarray(audited)
    if index.ndim != 1 or not np.issubdtype(index.dtype, np.integer):
        raise ValueError("audited must be the audited queries' positions in predicted (integers).")
    bad = index[(index < 0) | (index >= len(predicted))]
    if bad.size:
        raise ValueError(f"audited has positions outside the batch of {len(predicted)} queries: {bad[:5].tolist()}.")
    if np.unique(index).size != index.size:
        raise ValueError("audited has a position twice: an audit sample holds each query once.")
    _validate_level(alpha, lam)
    w = _validate_weights(weights, len(truth))
    return labels, _codes(truth, labels), _codes(predicted, labels), index, w


def _validate_values(values: Sequence[float], big_n: int, name: str) -> np.ndarray:
    v = np.asarray(values, dtype=float)
    if v.shape != (big_n,):
        raise ValueError(f"{name} needs one value per query of the batch: {big_n} queries, {v.size} values.")
    if not np.isfinite(v).all():
        raise ValueError(
            f"{name} has a value that is not a finite number at position {int(np.flatnonzero(~np.isfinite(v))[0])}."
        )
    return v


def _validate_labels(labels: Sequence[str]) -> tuple[str, ...]:
    labels = tuple(labels)
    if not labels:
        raise ValueError("labels is empty.")
    if len(set(labels)) != len(labels):
        raise ValueError(f"labels has duplicates: {labels!r}.")
    return labels


def _validate(
    human: Sequence[str],
    machine_sample: Sequence[str],
    machine_rest: Sequence[str],
    labels: tuple[str, ...],
    alpha: float,
    lam: float | None,
) -> None:
    if len(human) != len(machine_sample):
        raise ValueError(
            f"human and machine_sample must label the same queries in the same order: "
            f"{len(human)} human labels, {len(machine_sample)} machine labels."
        )
    if len(human) < 2:
        raise ValueError(f"The labelled sample needs at least 2 queries for a variance, got {len(human)}.")
    for name, values in (("human", human), ("machine_sample", machine_sample), ("machine_rest", machine_rest)):
        unknown = sorted({str(v) for v in values} - set(labels))
        if unknown:
            raise ValueError(f"{name} has labels outside {list(labels)}: {unknown}.")
    _validate_level(alpha, lam)


def _validate_level(alpha: float, lam: float | None) -> None:
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}.")
    if lam is not None and not math.isfinite(lam):
        raise ValueError(f"lam must be a finite number or None, got {lam!r}.")


def _validate_weights(weights: Sequence[float] | None, n: int) -> np.ndarray | None:
    if weights is None:
        return None
    w = np.asarray(weights, dtype=float)
    if w.shape != (n,):
        raise ValueError(f"weights needs one value per sample query: {n} queries, {w.size} weights.")
    if not (np.isfinite(w).all() and (w > 0).all()):
        raise ValueError("weights must be finite and positive (inverse inclusion probabilities).")
    return w
