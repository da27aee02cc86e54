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
assumption wants about 30). Annotators below that are excluded and listed. Every such
item counts, whatever its votes: an item the crowd split on (no majority) is as much a
test of who represents the other annotators as one it agreed on, and the authors drop
nothing else.

When is the result informative? The winning rate is a share of the *tested* annotators;
with one or two of them it is 0, 0.5 or 1 on the strength of one or two t-tests and flips
between samples of the same machine. The authors recommend at least three annotators
(README FAQ, "Why do you recommend at least three human annotators and not two?"), so
with fewer than :data:`MIN_ANNOTATORS` tested annotators the verdict is "not informative"
(``passed`` None), not passed or failed. It then says how large a sample would be, by
this rule: annotator j labelled n_j of the test's items out of a sample of n, a rate
r_j = n_j / n; if each annotator labelled the same share of a larger sample, j would
reach ``min_items`` at n·min_items/n_j, so the sample at which :data:`MIN_ANNOTATORS`
annotators qualify is ceil(min_items / r_(k)), r_(k) the k-th largest rate
(k = :data:`MIN_ANNOTATORS`). The assumption fails when a platform caps how many HITs a
worker may take (more HITs then bring more workers, not more items per worker): the
figure is the size at which the crowd as it behaved would suffice, not a promise.

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
#: Fewest tested annotators for a verdict: the authors recommend at least three.
MIN_ANNOTATORS = 3

PASSED = "passed"
NOT_PASSED = "not passed"
NOT_INFORMATIVE = "not informative"


@dataclass
class AltTestResult:
    """Outcome of :func:`alt_test`.

    ``winning_rate`` and ``advantage_probability`` are None when no annotator could be
    tested; ``passed`` is None unless the test is ``informative`` (at least
    ``min_annotators`` tested). ``verdict`` is :data:`PASSED`, :data:`NOT_PASSED` or
    :data:`NOT_INFORMATIVE`; ``needed_sample`` is the sample size at which
    ``min_annotators`` would qualify (see the module docstring), None when informative
    or when fewer than ``min_annotators`` labelled any item of the test.
    """

    winning_rate: float | None
    passed: bool | None
    advantage_probability: float | None
    epsilon: float
    alpha: float
    annotators: list[dict] = field(default_factory=list)
    excluded: list[str] = field(default_factory=list)
    informative: bool = False
    verdict: str = NOT_INFORMATIVE
    items: int = 0  #: items in the test: a machine label and at least two human labels
    sample_size: int = 0  #: the sample the rates are taken over
    min_items: int = MIN_ITEMS
    min_annotators: int = MIN_ANNOTATORS
    needed_sample: int | None = None

    def as_dict(self) -> dict:
        return asdict(self)


def alt_test(
    humans: Mapping[str, Mapping[str, str]],
    machine: Mapping[str, str],
    *,
    epsilon: float = EPSILON_CROWD,
    alpha: float = 0.05,
    min_items: int = MIN_ITEMS,
    min_annotators: int = MIN_ANNOTATORS,
    sample_size: int | None = None,
) -> AltTestResult:
    """Run the alt-test of ``machine`` against the crowd ``humans``.

    humans: annotator id -> {item id -> label}; machine: item id -> label. Every item
    with a machine label and at least two human labels is used, whether or not its
    humans agree; the others are left out (as in the reference). Annotators left with
    fewer than ``min_items`` items are excluded and reported in ``excluded``.
    ``sample_size`` is the size of the sample the items come from (default: the number
    of items in the test), over which each annotator's rate is taken for
    ``needed_sample``.
    """
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    if min_items < 2:
        raise ValueError(f"min_items must be at least 2 for a t-test, got {min_items!r}")
    if min_annotators < 1:
        raise ValueError(f"min_annotators must be at least 1, got {min_annotators!r}")
    annotator_ids, votes, machine_codes = _encode(humans, machine)
    n_items = votes.shape[1]
    if sample_size is None:
        sample_size = n_items
    if sample_size < n_items:
        raise ValueError(f"sample_size {sample_size} is below the {n_items} items in the test")
    sizes = {
        "items": n_items,
        "sample_size": int(sample_size),
        "min_items": min_items,
        "min_annotators": min_annotators,
    }
    tested, excluded, rows = [], [], []
    for a, annotator in enumerate(annotator_ids):
        w_machine, w_human = _indicators(votes, machine_codes, a)
        if len(w_machine) < min_items:
            excluded.append(str(annotator))
            continue
        tested.append(str(annotator))
        rows.append((len(w_machine), w_machine.mean(), w_human.mean(), _p_value(w_human - w_machine, epsilon)))
    informative = len(rows) >= min_annotators
    needed = None if informative else needed_sample((votes >= 0).sum(axis=1), sample_size, min_items, min_annotators)
    if not rows:
        return AltTestResult(None, None, None, epsilon, alpha, [], excluded, needed_sample=needed, **sizes)
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
    passed = winning_rate >= 0.5 if informative else None
    verdict = NOT_INFORMATIVE if passed is None else PASSED if passed else NOT_PASSED
    return AltTestResult(
        winning_rate,
        passed,
        advantage,
        epsilon,
        alpha,
        annotators,
        excluded,
        informative=informative,
        verdict=verdict,
        needed_sample=needed,
        **sizes,
    )


def needed_sample(items_per_annotator, sample_size: int, min_items: int, min_annotators: int) -> int | None:
    """The sample size at which ``min_annotators`` annotators would have ``min_items`` items each.

    ``items_per_annotator``: how many of the test's items each annotator labelled, in a
    sample of ``sample_size``. Annotator j's rate is r_j = n_j / sample_size; the answer
    is ceil(min_items / r_(k)) with r_(k) the k-th largest rate, k = ``min_annotators``
    (each annotator assumed to label the same share of a larger sample). None when fewer
    than k annotators labelled any item: no sample size makes k of them qualify.
    """
    counts = sorted((int(c) for c in items_per_annotator if c > 0), reverse=True)
    if len(counts) < min_annotators or sample_size <= 0:
        return None
    kth = counts[min_annotators - 1]
    # ceil(min_items * sample_size / kth) in integers: no float rounding at exact multiples.
    return max(-(-min_items * sample_size // kth), sample_size)


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
