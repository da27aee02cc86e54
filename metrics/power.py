"""How many queries a study needs: the power of the report's paired t-test, by simulation.

Question: runs A and B differ on a metric by Δ (mean over queries of A − B). With n queries, how
often does the report's test — the two-sided paired t-test at level α
(:func:`metrics.significance.paired_t_test`) — reject "no difference"? That rate is the test's
*power*; a plan asks for the smallest n with power ≥ 1 − β.

**Normal approximation** (Cohen 1988; Chow, Shao & Wang 2008, §3.1: the paired design is the
one-sample design of the differences), σ the standard deviation of
the per-query differences A − B (ddof 1), z_q the standard normal quantile::

    n ≈ ((z_{1−α/2} + z_{1−β}) · σ / Δ)²                         (needed queries, rounded up)
    MDD(n) = (z_{1−α/2} + z_{1−β}) · σ / √n                      (minimum detectable difference)
    power(n, Δ) ≈ Φ(√n·|Δ|/σ − z_{1−α/2}) + Φ(−√n·|Δ|/σ − z_{1−α/2})

e.g. σ = 0.05, Δ = 0.01, α = 0.05, power 0.8: (1.959964 + 0.841621)² · 25 = 196.22 → 197 queries.
The formula ignores that σ is estimated (the t distribution's heavier tails) and that per-query
differences of bias metrics are skewed and heavy-tailed, so at small n it promises too much.

**Simulation** (the plan's figure; a nonparametric bootstrap of the pilot, Efron & Tibshirani
1993, "An Introduction to the Bootstrap", ch. 6–7; sizing IR test collections: Sakai 2016, "Topic
set size design", Information Retrieval Journal 19(3)): the pilot's per-query differences d_1 … d_m are shifted so that their mean is Δ
(d_i − d̄ + Δ: the pilot's shape, the planned effect); a study of n queries is n of them drawn with
replacement; its paired t statistic is t = d̄* / (s* / √n) (the paired test is the one-sample t
test of the differences), rejected where |t| > t_{1−α/2, n−1} (equivalently p < α); differences
that do not vary (s* = 0) reject when their mean is not 0, as the report's test does. The power at
n is the share of ``draws`` simulated studies that reject (Monte-Carlo standard error
√(p(1 − p)/draws): 0.009 at p = 0.8 with 2,000 draws). All draws of one n are one matrix
(``draws × n`` indices), in blocks that bound memory.

- :func:`sample_size` starts at the normal formula's n, brackets the smallest n whose simulated
  power reaches 1 − β (doubling or halving the step) and bisects it; each n's draws come from a
  generator seeded by (seed, n), so a size's power is the same whenever it is asked for (common
  random numbers: the search sees no noise from re-drawing the same n).
- :func:`minimum_detectable_difference` holds the draws of one n fixed: only d̄* moves with Δ, so
  the power as a function of Δ is computed exactly for those draws and bisected.
- :func:`simulated_power` is the power at one n and Δ.

Pure: numpy and scipy are imported inside the functions (the start-up rule).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

#: Simulated studies per candidate size (Monte-Carlo s.e. ≈ 0.009 at power 0.8).
DEFAULT_DRAWS = 2000
#: Largest size the search simulates (2,000 draws of it take about a second); beyond it the plan
#: says "not reached" and gives the normal formula's figure alone.
MAX_QUERIES = 50_000
#: Bound on the index matrix held at once (draws × n).
BLOCK_CELLS = 4_000_000

#: SIGIR 2020's annotated MS MARCO dev queries (Rekabsaz & Schedl 2020; the GenderBias_IR
#: repository's ``queries_gender_annotated.csv``): 1,765 of 3,750 non-gendered. The share a plan
#: assumes when nothing better is known, stated as such.
SIGIR2020_NON_GENDERED = (1765, 3750)


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


def _draw_statistics(centred, n: int, draws: int, seed: int):
    """Means and standard deviations (ddof 1) of ``draws`` resamples of size ``n`` of ``centred``."""
    import numpy as np

    rng = np.random.default_rng([seed, n])
    means = np.empty(draws)
    sds = np.empty(draws)
    block = max(1, BLOCK_CELLS // n)
    for start in range(0, draws, block):
        stop = min(draws, start + block)
        sample = centred[rng.integers(0, len(centred), size=(stop - start, n))]
        means[start:stop] = sample.mean(axis=1)
        sds[start:stop] = sample.std(axis=1, ddof=1)
    return means, sds


def _rejection_rate(means, sds, n: int, delta: float, alpha: float) -> float:
    """Share of draws whose paired t-test rejects, the differences shifted by Δ."""
    import numpy as np
    from scipy import stats

    critical = float(stats.t.ppf(1 - alpha / 2, n - 1))
    shifted = means + delta
    flat = sds <= 1e-15
    reject = np.where(flat, np.abs(shifted) > 1e-15, np.abs(shifted) > critical * sds / math.sqrt(n))
    return float(reject.mean())


def simulated_power(
    differences: Sequence[float],
    delta: float,
    n: int,
    alpha: float = 0.05,
    draws: int = DEFAULT_DRAWS,
    seed: int = 0,
) -> float:
    """Empirical power of the two-sided paired t-test with ``n`` queries drawn from the pilot's
    ``differences`` shifted to mean ``delta`` (see the module docstring)."""
    if n < 2:
        raise ValueError("a paired t-test needs at least 2 queries")
    means, sds = _draw_statistics(_centred(differences), n, draws, seed)
    return _rejection_rate(means, sds, n, delta, alpha)


@dataclass(frozen=True)
class SampleSize:
    """The smallest n whose simulated power reaches the target, and the search that found it."""

    n: int | None  #: None: not reached within :data:`MAX_QUERIES`
    power: float | None  #: simulated power at ``n``
    normal_n: int  #: the normal formula's n (the search starts there, or at ``max_n`` if below it)
    steps: tuple[tuple[int, float], ...]  #: (n, simulated power) in the order tried


def sample_size(
    differences: Sequence[float],
    delta: float,
    alpha: float = 0.05,
    power: float = 0.8,
    draws: int = DEFAULT_DRAWS,
    seed: int = 0,
    *,
    max_n: int = MAX_QUERIES,
    on_step: Callable[[int, float], None] | None = None,
) -> SampleSize:
    """Smallest n with simulated power ≥ ``power`` (normal start, bracket, bisection)."""
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
        return SampleSize(None, None, normal_n, ())
    start = min(max_n, normal_n)
    tried: dict[int, float] = {}
    steps: list[tuple[int, float]] = []

    def at(n: int) -> float:
        if n not in tried:
            means, sds = _draw_statistics(centred, n, draws, seed)
            tried[n] = _rejection_rate(means, sds, n, delta, alpha)
            steps.append((n, tried[n]))
            if on_step is not None:
                on_step(n, tried[n])
        return tried[n]

    if at(start) >= power:
        high, step = start, max(1, start // 8)
        low = max(1, start - step)
        while low > 1 and at(low) >= power:
            high, step = low, step * 2
            low = max(1, low - step)
    else:
        low, step = start, max(1, start // 8)
        high = min(max_n, start + step)
        while at(high) < power:
            if high >= max_n:
                return SampleSize(None, None, normal_n, tuple(steps))
            low, step = high, step * 2
            high = min(max_n, high + step)
    # at(low) < power ≤ at(high) (n = 1, never tried, counts as below: a paired test needs two): bisect.
    while high - low > 1:
        middle = (low + high) // 2
        if at(middle) >= power:
            high = middle
        else:
            low = middle
    return SampleSize(high, tried[high], normal_n, tuple(steps))


def minimum_detectable_difference(
    differences: Sequence[float],
    n: int,
    alpha: float = 0.05,
    power: float = 0.8,
    draws: int = DEFAULT_DRAWS,
    seed: int = 0,
) -> float:
    """Smallest Δ > 0 whose simulated power with ``n`` queries reaches ``power`` (the draws of n held
    fixed, so the power is an exact function of Δ for them; bisected to 1e-6 of its scale)."""
    import numpy as np

    _check(alpha, power)
    if n < 2:
        raise ValueError("a paired t-test needs at least 2 queries")
    centred = _centred(differences)
    means, sds = _draw_statistics(centred, n, draws, seed)
    scale = float(np.std(centred, ddof=1))
    low, high = 0.0, scale
    while _rejection_rate(means, sds, n, high, alpha) < power:
        low, high = high, high * 2
        if high > scale * 1e6:  # cannot happen with varying differences; a guard, not a result
            return math.inf
    while high - low > scale * 1e-6:
        middle = (low + high) / 2
        if _rejection_rate(means, sds, n, middle, alpha) >= power:
            high = middle
        else:
            low = middle
    return high


def wilson_interval(successes: int, total: int, level: float = 0.95) -> tuple[float, float]:
    """Wilson's score interval of a proportion (Wilson 1927; Agresti & Coull 1998)::

    (p̂ + z²/2N ± z √(p̂(1 − p̂)/N + z²/4N²)) / (1 + z²/N)
    """
    from scipy import stats

    if total <= 0:
        raise ValueError("no labelled queries to estimate a share from")
    z = float(stats.norm.ppf(1 - (1 - level) / 2))
    p = successes / total
    centre = (p + z * z / (2 * total)) / (1 + z * z / total)
    half = z * math.sqrt(p * (1 - p) / total + z * z / (4 * total * total)) / (1 + z * z / total)
    return max(0.0, centre - half), min(1.0, centre + half)


def pooled_to_annotate(needed: int, share: float) -> int:
    """Pooled queries to annotate so that about ``needed`` are non-gendered: ⌈needed / share⌉."""
    if not 0 < share <= 1:
        raise ValueError(f"the non-gendered share must be in (0, 1], got {share}")
    return math.ceil(needed / share - 1e-9)
