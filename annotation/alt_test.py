"""The Alternative Annotator Test: may a machine pre-labeller replace the crowd?

Pure numpy/scipy, no Django. Implements the alt-test of Calderon, Reichart & Dror,
"The Alternative Annotator Test for LLM-as-a-Judge: How to Statistically Justify
Replacing Human Annotators with LLMs", ACL 2025 (arXiv 2501.10970), following the
procedure of the authors' reference implementation (``nitaytech/AltTest``,
``alt_test_example.ipynb``) with the *accuracy* alignment score they use for
categorical labels. It works for any pre-labeller: rules, a classifier or an LLM.

Leave one annotator out. For annotator ``j`` and an item ``i`` that ``j`` labelled,
let ``H(i, -j)`` be the labels the *other* humans gave ``i``. The alignment score of a
label ``x`` is the share of those labels it matches::

    S(x, i, j) = |{y in H(i, -j) : y == x}| / |H(i, -j)|

    S_f = S(machine_i, i, j)          S_h = S(h_j(i), i, j)
    W_f = 1[S_f >= S_h]               W_h = 1[S_h >= S_f]       (a tie counts for both)
    rho_f^j = mean_i W_f              rho_h^j = mean_i W_h
    d_i = W_h - W_f

For each annotator a one-sided one-sample t-test of the mean of ``d``::

    H0: mean(d) >= epsilon   (rho_f^j <= rho_h^j - epsilon: the human is better by epsilon)
    H1: mean(d) <  epsilon   (rho_f^j >  rho_h^j - epsilon: the machine is as good, given
                              its cost advantage epsilon)

i.e. ``scipy.stats.ttest_1samp(d, epsilon, alternative="less")``, as in the reference
notebook. The annotators' p-values are corrected with Benjamini–Yekutieli at level
``alpha`` (FDR under arbitrary dependence: the tests share items and annotators). The
*winning rate* ``omega`` is the share of annotators whose null is rejected; the machine
passes when ``omega >= 0.5``. The *average advantage probability* ``rho`` is the mean of
``rho_f^j`` over the tested annotators: the measure to compare pre-labellers.

Items need at least two human labels (so one remains when one is left out) and a machine
label; annotators need at least :data:`MIN_ITEMS` such items, both as in the reference
(``min_humans_per_instance=2``, ``min_instances_per_human=30``: the t-test's normality
assumption wants about 30). Annotators below that are excluded and listed.

epsilon: the authors' rule of thumb (paper §"threshold", README FAQ "How do I select the
epsilon value?") is 0.2 for experts, 0.15 for skilled annotators and 0.1 for crowd
workers, smaller still when inter-annotator agreement is low. The reference function's
own default is 0.2; ours is the crowd-worker value because that is who labels here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field

import numpy as np

#: epsilon recommended by the authors for crowd workers (the default here).
EPSILON_CROWD = 0.1
#: epsilon recommended for skilled annotators (students, trained workers).
EPSILON_SKILLED = 0.15
#: epsilon recommended for experts (and the reference function's default).
EPSILON_EXPERT = 0.2
#: Minimum items per annotator, as ``min_instances_per_human`` in the reference.
MIN_ITEMS = 30
#: Minimum human labels per item, as ``min_humans_per_instance`` in the reference.
MIN_HUMANS_PER_ITEM = 2


@dataclass
class AltTestResult:
    """Outcome of :func:`alt_test`. ``None`` fields mean no annotator could be tested."""

    winning_rate: float | None
    passed: bool | None
    advantage_probability: float | None
    epsilon: float
    alpha: float
    annotators: list[dict] = field(default_factory=list)
    excluded: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return asdict(self)


def alt_test(
    humans: Mapping[str, Mapping[str, str]],
    machine: Mapping[str, str],
    *,
    epsilon: float = EPSILON_CROWD,
    alpha: float = 0.05,
    min_items: int = MIN_ITEMS,
) -> AltTestResult:
    """Run the alt-test of ``machine`` against the crowd ``humans``.

    humans: annotator id -> {item id -> label}; machine: item id -> label. Items that
    fewer than two humans labelled, or that the machine did not label, are left out
    (as in the reference); annotators left with fewer than ``min_items`` items are
    excluded and reported in ``excluded``.
    """
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    if min_items < 2:
        raise ValueError(f"min_items must be at least 2 for a t-test, got {min_items!r}")
    annotator_ids, votes, machine_codes = _encode(humans, machine)
    tested, excluded, rows = [], [], []
    for a, annotator in enumerate(annotator_ids):
        w_machine, w_human = _indicators(votes, machine_codes, a)
        if len(w_machine) < min_items:
            excluded.append(str(annotator))
            continue
        tested.append(str(annotator))
        rows.append((len(w_machine), w_machine.mean(), w_human.mean(), _p_value(w_human - w_machine, epsilon)))
    if not rows:
        return AltTestResult(None, None, None, epsilon, alpha, [], excluded)
    from scipy import stats

    p_values = np.array([row[3] for row in rows])
    rejected = stats.false_discovery_control(p_values, method="by") <= alpha
    annotators = [
        {
            "annotator": annotator,
            "items": int(items),
            "rho_machine": float(rho_f),
            "rho_human": float(rho_h),
            "p_value": float(p),
            "rejected": bool(reject),
        }
        for annotator, (items, rho_f, rho_h, p), reject in zip(tested, rows, rejected, strict=True)
    ]
    winning_rate = float(rejected.mean())
    advantage = float(np.mean([row[1] for row in rows]))
    return AltTestResult(winning_rate, winning_rate >= 0.5, advantage, epsilon, alpha, annotators, excluded)


def _encode(humans: Mapping[str, Mapping[str, str]], machine: Mapping[str, str]) -> tuple[list, np.ndarray, np.ndarray]:
    """Annotators × items matrix of label codes (-1: not labelled) and the machine's codes.

    Only items with a machine label and at least two human labels are kept, so every
    kept cell has at least one *other* human to compare against.
    """
    annotator_ids = list(humans)
    counts: dict = {}
    for labels in humans.values():
        for item in labels:
            counts[item] = counts.get(item, 0) + 1
    item_ids = [item for item, n in counts.items() if n >= MIN_HUMANS_PER_ITEM and item in machine]
    vocabulary = {label: code for code, label in enumerate(sorted({*map(str, machine.values())}))}
    for labels in humans.values():
        for label in labels.values():
            vocabulary.setdefault(str(label), len(vocabulary))
    column = {item: c for c, item in enumerate(item_ids)}
    votes = np.full((len(annotator_ids), len(item_ids)), -1, dtype=int)
    for a, annotator in enumerate(annotator_ids):
        for item, label in humans[annotator].items():
            if item in column:
                votes[a, column[item]] = vocabulary[str(label)]
    machine_codes = np.array([vocabulary[str(machine[item])] for item in item_ids], dtype=int)
    return annotator_ids, votes, machine_codes


def _indicators(votes: np.ndarray, machine_codes: np.ndarray, a: int) -> tuple[np.ndarray, np.ndarray]:
    """``W_f`` and ``W_h`` of annotator ``a`` over the items they labelled (vectorised).

    Both scores share the denominator |H(i, -j)|, so comparing the numbers of matching
    other labels is the same as comparing the accuracy scores.
    """
    mine = votes[a]
    labelled = mine >= 0
    others = np.delete(votes, a, axis=0)[:, labelled]
    own = mine[labelled]
    s_human = (others == own).sum(axis=0)
    s_machine = (others == machine_codes[labelled]).sum(axis=0)
    return (s_machine >= s_human).astype(float), (s_human >= s_machine).astype(float)


def _p_value(d: np.ndarray, epsilon: float) -> float:
    """One-sided p-value of H0: mean(d) >= epsilon.

    When every ``d`` is equal the t statistic is ±inf (or undefined); scipy then warns
    about precision loss, so the limit is returned directly: 0 when the common value is
    below epsilon, else 1 (no evidence against H0).
    """
    from scipy import stats

    if np.ptp(d) == 0:
        return 0.0 if d[0] < epsilon else 1.0
    return float(stats.ttest_1samp(d, epsilon, alternative="less").pvalue)
