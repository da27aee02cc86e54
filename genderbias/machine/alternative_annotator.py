"""The Alternative Annotator Test: may a machine pre-labeller (rules, a classifier or an LLM) replace the crowd?

Pure numpy/scipy. Calderon, Reichart & Dror, ACL 2025 (arXiv 2501.10970), as their reference code
(``nitaytech/AltTest``) with the accuracy alignment score: the scores W_f, W_h, the per-annotator t-test, the
Benjamini–Yekutieli step, the winning rate and advantage probability, and the sample size at which
:data:`MIN_ANNOTATORS` annotators would qualify (:func:`needed_sample`): docs/prelabelling.md, "The Alternative
Annotator Test".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field

import numpy as np

__all__ = ["MIN_ANNOTATORS", "MIN_ITEMS", "NOT_INFORMATIVE", "alt_test", "needed_sample"]

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
    """Outcome of :func:`alt_test`: ``winning_rate`` and ``advantage_probability`` None when no annotator could be
    tested; ``passed`` None unless ``informative``; ``needed_sample`` None when informative or unreachable."""

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
    """The alt-test of ``machine`` (item id -> label) against ``humans`` (annotator id -> {item id -> label});
    ``sample_size``: the sample the items come from (default: the test's items), for ``needed_sample``."""
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
    """The sample size at which ``min_annotators`` annotators would have ``min_items`` items each (module
    docstring); ``items_per_annotator``: each annotator's items of the test in a sample of ``sample_size``.
    None when fewer than ``min_annotators`` labelled any item: no sample size makes them qualify.
    """
    counts = sorted((int(c) for c in items_per_annotator if c > 0), reverse=True)
    if len(counts) < min_annotators or sample_size <= 0:
        return None
    kth = counts[min_annotators - 1]
    # ceil(min_items * sample_size / kth) in integers: no float rounding at exact multiples.
    return max(-(-min_items * sample_size // kth), sample_size)


def _encode(humans: Mapping[str, Mapping[str, str]], machine: Mapping[str, str]) -> tuple[list, np.ndarray, np.ndarray]:
    """Annotators × items matrix of label codes (-1: not labelled) and the machine's codes, over the items with
    a machine label and at least two human labels (so every cell has another human to compare against)."""
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
    """``W_f`` and ``W_h`` of annotator ``a`` over their items: both scores share the denominator |H(i, -j)|,
    so comparing the numbers of matching other labels suffices."""
    mine = votes[a]
    labelled = mine >= 0
    others = np.delete(votes, a, axis=0)[:, labelled]
    own = mine[labelled]
    s_human = (others == own).sum(axis=0)
    s_machine = (others == machine_codes[labelled]).sum(axis=0)
    return (s_machine >= s_human).astype(float), (s_human >= s_machine).astype(float)


def _p_value(d: np.ndarray, epsilon: float) -> float:
    """One-sided p-value of H0: mean(d) >= epsilon; with every ``d`` equal, the limit (0 below epsilon, else 1)
    instead of scipy's ±inf t statistic and precision warning."""
    from scipy import stats

    if np.ptp(d) == 0:
        return 0.0 if d[0] < epsilon else 1.0
    return float(stats.ttest_1samp(d, epsilon, alternative="less").pvalue)
