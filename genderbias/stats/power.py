"""How many queries a study needs: the power of the report's paired t-test
(:func:`genderbias.stats.significance.paired_t_test`), by simulation (docs/metrics.md, "Planning a study").

The normal formula (:func:`normal_sample_size`) beside it, and why the plan's figure is simulated: docs/metrics.md,
"Planning a study". The simulation: the pilot's differences shifted to mean Δ, a study of n queries n of them drawn
with replacement, the power the share of ``draws`` studies whose t-test rejects; each study is one long sequence of
draws read at every size (**common random numbers**, :class:`PowerCurve`), in seeded pieces whose values do not
depend on how far the curve was read. :func:`sample_size` takes the size after the curve's last value below the
target and **re-estimates** its power on an independent stream, the plan's claim.

Pure: numpy and scipy are imported inside the functions (the start-up rule).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

__all__ = [
    "CHECK_STREAM", "DEFAULT_DRAWS", "SEARCH_STREAM", "PowerCurve", "minimum_detectable_difference", "monte_carlo_se",
    "normal_mdd", "normal_power", "normal_quantiles", "normal_sample_size", "sample_size", "simulated_power",
]  # fmt: skip

#: Simulated studies, each read at every size (Monte-Carlo s.e. ≈ 0.009 at power 0.8).
DEFAULT_DRAWS = 2000
#: Largest size the search simulates; beyond it the plan says "not reached" and gives the normal formula's n.
MAX_QUERIES = 50_000
#: One seeded piece of a stream of simulated studies: this many studies × this many queries.
STREAM_ROWS = 500
STREAM_COLUMNS = 512
#: The streams: the search's power curve, and the independent re-estimate at the chosen n.
SEARCH_STREAM = 0
CHECK_STREAM = 1
#: The search reads its curve until it stands this many s.e. above the target; the re-estimate
#: steps n up while it falls this many s.e. below it.
CHECK_SE = 2.0
#: How far n steps up (a share of n, at least 1) when the re-estimate falls short.
STEP_UP = 0.02
#: A study whose differences' variance is at most this (sd ≤ 1e-15) does not vary.
FLAT = 1e-30


def normal_quantiles(alpha: float, power: float) -> tuple[float, float]:
    """``(z_{1−α/2}, z_{power})`` of the standard normal."""
    from scipy import stats

    return float(stats.norm.ppf(1 - alpha / 2)), float(stats.norm.ppf(power))


def normal_sample_size(delta: float, sd: float, alpha: float = 0.05, power: float = 0.8) -> int:
    """⌈((z_{1−α/2} + z_{1−β}) σ / Δ)²⌉, at least 2 (a paired t-test needs two queries)."""
    _check(alpha, power)
    if delta == 0:
        raise ValueError("Δ must not be 0")
    if sd == 0:
        return 2
    za, zb = normal_quantiles(alpha, power)
    ratio = (za + zb) * sd / abs(delta)
    if ratio > 1e9:  # beyond any study (and ratio² would overflow a float)
        return 10**18
    return max(2, math.ceil(ratio**2 - 1e-9))


def normal_mdd(sd: float, n: int, alpha: float = 0.05, power: float = 0.8) -> float:
    """(z_{1−α/2} + z_{1−β}) σ / √n."""
    _check(alpha, power)
    za, zb = normal_quantiles(alpha, power)
    return (za + zb) * sd / math.sqrt(n)


def normal_power(delta: float, sd: float, n: int, alpha: float = 0.05) -> float:
    """Φ(√n|Δ|/σ − z_{1−α/2}) + Φ(−√n|Δ|/σ − z_{1−α/2})."""
    from scipy import stats

    if sd == 0:
        return 1.0 if delta else alpha
    za = float(stats.norm.ppf(1 - alpha / 2))
    shift = math.sqrt(n) * abs(delta) / sd
    return float(stats.norm.cdf(shift - za) + stats.norm.cdf(-shift - za))


def _check(alpha: float, power: float) -> None:
    if not 0 < alpha < 1:
        raise ValueError(f"α must be in (0, 1), got {alpha}")
    if not 0 < power < 1:
        raise ValueError(f"the power must be in (0, 1), got {power}")


def _centred(differences: Sequence[float]):
    import numpy as np

    values = np.asarray(differences, dtype=np.float64)
    values = values[~np.isnan(values)]
    if len(values) < 2:
        raise ValueError(f"the pilot needs at least 2 per-query differences, got {len(values)}")
    if np.ptp(values) == 0:
        raise ValueError("the pilot's per-query differences do not vary: nothing to resample")
    return values - values.mean()


def _prefix_statistics(centred, draws: int, seed: int, stream: int):
    """One stream's simulated studies a piece at a time: ``(start, stop, sizes, means, variances)``, each study's
    mean and variance (ddof 1) of its first n centred differences, summed from its first value (so exactly 0 when
    they are all equal)."""
    import itertools

    import numpy as np

    m = len(centred)
    first, s1, s2 = np.zeros(draws), np.zeros(draws), np.zeros(draws)
    for chunk in itertools.count():
        sizes = np.arange(chunk * STREAM_COLUMNS + 1, (chunk + 1) * STREAM_COLUMNS + 1, dtype=np.float64)
        for block, start in enumerate(range(0, draws, STREAM_ROWS)):
            stop = min(draws, start + STREAM_ROWS)
            rng = np.random.default_rng([seed, stream, block, chunk])
            values = centred[rng.integers(0, m, size=(stop - start, STREAM_COLUMNS))]
            if chunk == 0:
                first[start:stop] = values[:, 0]
            values -= first[start:stop, None]
            c1 = np.cumsum(values, axis=1)
            c1 += s1[start:stop, None]
            values *= values
            c2 = np.cumsum(values, axis=1)
            c2 += s2[start:stop, None]
            s1[start:stop], s2[start:stop] = c1[:, -1], c2[:, -1]
            means = first[start:stop, None] + c1 / sizes
            with np.errstate(invalid="ignore", divide="ignore"):
                variances = np.maximum(c2 - c1 * c1 / sizes, 0.0) / (sizes - 1.0)
            yield start, stop, sizes, means, variances


def _rejects(means, variances, sizes, delta: float, alpha: float):
    """Whether each study's paired t-test rejects, the differences shifted by Δ (|t| > t_{1−α/2, n−1}, compared
    squared); a study whose differences do not vary rejects when its mean is not 0; one of one query never."""
    import numpy as np
    from scipy import stats

    with np.errstate(invalid="ignore"):
        critical = stats.t.ppf(1 - alpha / 2, sizes - 1.0)
    shifted = means + delta
    flat = variances <= FLAT
    with np.errstate(invalid="ignore"):
        varying = shifted * shifted * sizes > critical * critical * variances
    return np.where(flat, np.abs(shifted) > 1e-15, varying) & (sizes >= 2)


class PowerCurve:
    """The simulated power at every size n of one stream of studies (common random numbers), read lazily a chunk
    of sizes at a time; :data:`SEARCH_STREAM` for the search, :data:`CHECK_STREAM` for the re-estimate."""

    def __init__(self, centred, delta: float, alpha: float, draws: int, seed: int, stream: int):
        import numpy as np

        self.delta, self.alpha, self.draws = delta, alpha, draws
        self._pieces = _prefix_statistics(centred, draws, seed, stream)
        self._rejections = np.zeros(0, dtype=np.int64)

    def _extend(self, n: int) -> None:
        import numpy as np

        while len(self._rejections) < n:
            counts = np.zeros(STREAM_COLUMNS, dtype=np.int64)
            stop = 0
            while stop < self.draws:
                _, stop, sizes, means, variances = next(self._pieces)
                counts += _rejects(means, variances, sizes, self.delta, self.alpha).sum(axis=0)
            self._rejections = np.concatenate([self._rejections, counts])

    def at(self, n: int) -> float:
        """The share of the ``draws`` studies of ``n`` queries that reject."""
        self._extend(n)
        return float(self._rejections[n - 1] / self.draws)

    def values(self, n: int):
        """The power at sizes 1 … ``n`` (numpy array; index n − 1)."""
        self._extend(n)
        return self._rejections[:n] / self.draws


def _draw_statistics(centred, n: int, draws: int, seed: int, stream: int = 0):
    """Means and variances (ddof 1) of ``stream``'s studies of ``n`` queries: those :class:`PowerCurve` reads at n."""
    import numpy as np

    means, variances = np.empty(draws), np.empty(draws)
    chunk, column = divmod(n - 1, STREAM_COLUMNS)
    for start, stop, sizes, chunk_means, chunk_variances in _prefix_statistics(centred, draws, seed, stream):
        if int(sizes[0]) == chunk * STREAM_COLUMNS + 1:
            means[start:stop] = chunk_means[:, column]
            variances[start:stop] = chunk_variances[:, column]
            if stop == draws:
                break
    return means, variances


def _rejection_rate(means, variances, n: int, delta: float, alpha: float) -> float:
    """Share of the studies of one size that reject (:func:`_rejects`)."""
    import numpy as np

    return float(_rejects(means, variances, np.float64(n), delta, alpha).mean())


def simulated_power(
    differences: Sequence[float],
    delta: float,
    n: int,
    alpha: float = 0.05,
    draws: int = DEFAULT_DRAWS,
    seed: int = 0,
    stream: int = 0,
) -> float:
    """Simulated power of the paired t-test with ``n`` queries of the pilot's ``differences`` shifted to mean
    ``delta``: :class:`PowerCurve` at n for this seed and stream."""
    if n < 2:
        raise ValueError("a paired t-test needs at least 2 queries")
    return PowerCurve(_centred(differences), delta, alpha, draws, seed, stream).at(n)


def monte_carlo_se(power: float, draws: int) -> float:
    """√(p(1 − p)/draws): the standard error of a simulated power from ``draws`` studies."""
    return math.sqrt(power * (1 - power) / draws)


@dataclass(frozen=True)
class SampleSize:
    """The planned n, its power re-estimated on independent draws, and the search that found it."""

    n: int | None  #: None: not reached within ``max_n`` (:data:`MAX_QUERIES`)
    power: float | None  #: the power at ``n`` re-estimated on an independent stream (:data:`CHECK_STREAM`)
    power_se: float | None  #: its Monte-Carlo standard error √(p(1 − p)/draws)
    search_n: int | None  #: where the search stream's power curve last crossed the target
    search_power: float | None  #: that curve's value at ``search_n``
    normal_n: int  #: the normal formula's n (the search first reads the curve up to it)
    draws: int
    #: ``(stage, n, power)`` in order: ``search`` (the curve's value at the end of each stretch
    #: read) and ``re-estimate`` (the independent stream at each n checked).
    steps: tuple[tuple[str, int, float], ...]


def sample_size(
    differences: Sequence[float],
    delta: float,
    alpha: float = 0.05,
    power: float = 0.8,
    draws: int = DEFAULT_DRAWS,
    seed: int = 0,
    *,
    max_n: int = MAX_QUERIES,
    on_step: Callable[[str, int, float], None] | None = None,
) -> SampleSize:
    """Smallest n with simulated power ≥ ``power``, its power re-estimated on independent draws (module docstring)."""
    import numpy as np

    _check(alpha, power)
    if delta == 0:
        raise ValueError("Δ must not be 0")
    centred = _centred(differences)
    sd = float(np.std(centred, ddof=1))
    normal_n = normal_sample_size(delta, sd, alpha, power)
    if normal_n > 4 * max_n:
        # The normal power at max_n is then below Φ((z_{1−α/2} + z_{1−β})/2 − z_{1−α/2}) (0.29 for
        # the usual 0.8 and 0.05): out of reach, not worth a simulation of max_n queries.
        return SampleSize(None, None, None, None, None, normal_n, draws, ())
    steps: list[tuple[str, int, float]] = []

    def step(stage: str, n: int, value: float) -> None:
        steps.append((stage, n, value))
        if on_step is not None:
            on_step(stage, n, value)

    def result(n, value, search_n, search_power) -> SampleSize:
        se = None if value is None else monte_carlo_se(value, draws)
        return SampleSize(n, value, se, search_n, search_power, normal_n, draws, tuple(steps))

    # The search: read the curve until its end is settled above the target (2 s.e.), then take the
    # size after its last value below the target.
    settled = power + CHECK_SE * monte_carlo_se(power, draws)
    curve = PowerCurve(centred, delta, alpha, draws, seed, SEARCH_STREAM)
    upto = max(2, min(max_n, normal_n))
    while True:
        step("search", upto, curve.at(upto))
        if curve.at(upto) >= settled or upto >= max_n:
            break
        upto = min(max_n, upto + max(STREAM_COLUMNS, upto // 4))
    if curve.at(upto) < power:
        return result(None, None, None, None)
    values = curve.values(upto)
    below = np.flatnonzero(values[1:] < power)  # sizes 2 … upto; n = 1 never rejects
    search_n = int(below[-1]) + 3 if below.size else 2
    search_power = float(values[search_n - 1])

    # The re-estimate at n on an independent stream, n stepped up while it falls short by more than 2 s.e.
    check = PowerCurve(centred, delta, alpha, draws, seed, CHECK_STREAM)
    floor = power - CHECK_SE * monte_carlo_se(power, draws)
    n = search_n
    while True:
        value = check.at(n)
        step("re-estimate", n, value)
        if value >= floor:
            return result(n, value, search_n, search_power)
        if n >= max_n:
            return result(None, None, search_n, search_power)
        n = min(max_n, n + max(1, math.ceil(STEP_UP * n)))


def minimum_detectable_difference(
    differences: Sequence[float],
    n: int,
    alpha: float = 0.05,
    power: float = 0.8,
    draws: int = DEFAULT_DRAWS,
    seed: int = 0,
) -> float:
    """Smallest Δ > 0 whose simulated power with ``n`` queries reaches ``power``; the draws of n are held fixed, so
    the power is an exact function of Δ for them, bisected to 1e-6 of its scale."""
    import numpy as np

    _check(alpha, power)
    if n < 2:
        raise ValueError("a paired t-test needs at least 2 queries")
    centred = _centred(differences)
    means, variances = _draw_statistics(centred, n, draws, seed)
    scale = float(np.std(centred, ddof=1))
    low, high = 0.0, scale
    while _rejection_rate(means, variances, n, high, alpha) < power:
        low, high = high, high * 2
        if high > scale * 1e6:  # cannot happen with varying differences; a guard, not a result
            return math.inf
    while high - low > scale * 1e-6:
        middle = (low + high) / 2
        if _rejection_rate(means, variances, n, middle, alpha) >= power:
            high = middle
        else:
            low = middle
    return high
