"""The blind sample's draw (genderbias.machine.calibration_sample.random_sample) and its extension through the
service: one fixed permutation of the population, so the first draw and every extension together
are a simple random sample (every query included with the same probability)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from genderbias.machine.calibration_sample import random_sample

N, FIRST, MORE, REDRAWS = 200, 40, 40, 3000


def _inclusion() -> np.ndarray:
    """Share of redraws (first draw seed s, then an extension as the service makes it: the first draw's
    seed, the first draw excluded) that include each query."""
    qids = [f"q{i:04d}" for i in range(N)]
    counts = np.zeros(N)
    for s in range(REDRAWS):
        first = random_sample(qids, FIRST, seed=s)
        more = random_sample(qids, MORE, seed=s, exclude=first)
        assert not set(first) & set(more) and len(more) == MORE
        counts[[int(q[1:]) for q in first + more]] += 1
    return counts / REDRAWS


def test_an_extension_with_the_first_seed_keeps_every_inclusion_probability_equal():
    # Under a simple random sample each query is in the union with probability (40 + 40) / 200 = 0.4.
    # Over 3,000 redraws a share's Monte-Carlo s.e. is √(0.4·0.6/3000) = 0.0089; 5 s.e. (0.045) bounds all
    # 200 shares with probability > 0.9999. A re-used `choice` picked the first draw's neighbours in qid
    # order instead: inclusion from 0.25 to 0.44.
    share = _inclusion()
    se = math.sqrt(0.4 * 0.6 / REDRAWS)
    assert share.mean() == pytest.approx(0.4)  # exactly 80 per redraw
    assert np.abs(share - 0.4).max() < 5 * se


def test_the_draw_is_one_permutation_read_from_the_front():
    qids = [f"q{i}" for i in range(50)]
    whole = random_sample(qids, 30, seed=7)
    first = random_sample(qids, 10, seed=7)
    second = random_sample(qids, 10, seed=7, exclude=first)
    third = random_sample(qids, 10, seed=7, exclude=first + second)
    assert first + second + third == whole
    order = np.random.default_rng(7).permutation(50)
    assert whole == [sorted(qids)[i] for i in order[:30]]
    assert random_sample(qids, 100, seed=7, exclude=whole) == [sorted(qids)[i] for i in order[30:]]
    with pytest.raises(ValueError, match="no queries left"):
        random_sample(qids, 1, seed=7, exclude=qids)
