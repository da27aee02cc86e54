"""The crowd model's short-axis reductions give numpy's own, bit for bit (what EM's fits stored before them)."""

import numpy as np
import pytest

from genderbias.crowd.coins import max_last, sum_last


@pytest.mark.parametrize("k", range(1, 11))
def test_sum_last_and_max_last_are_numpys_reductions_bit_for_bit(k):
    rng = np.random.default_rng(k)
    # EM's arrays: C-ordered, transposed views and slices; values of every magnitude, as log likelihoods are
    arrays = [
        rng.normal(size=(3, 200, k)) * 10.0 ** rng.integers(-8, 8, size=(3, 200, k)),
        rng.dirichlet(np.ones(k), size=(50, 7)),
        rng.normal(size=(200, 3, k)).transpose(1, 0, 2),
        rng.exponential(size=(40, 2 * k))[:, ::2],
    ]
    for x in arrays:
        assert np.array_equal(sum_last(x), x.sum(axis=-1))
        assert sum_last(x).tobytes() == x.sum(axis=-1).tobytes()
        assert max_last(x).tobytes() == x.max(axis=-1).tobytes()
