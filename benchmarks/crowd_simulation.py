"""Simulated studies with a realistic crowd, for the coverage of the label-based intervals.

Pure (numpy, pandas; no Django): the coverage tests (``tests/metrics/test_crowd_coverage.py``)
and the ``crowd_coverage`` benchmark command both draw their studies here.

A study: N queries whose true labels follow the class shares of the SIGIR 2020 study; per query, the values of two runs A and B
whose class means differ (gendered queries are more biased: the case label noise distorts); a
crowd of workers who each answer HITs of :attr:`Crowd.per_hit` queries plus one gold question,
three workers per query:

- **class confusion**: a worker right with probability a errs along the study's lines
  (:data:`ERRORS`: a non-gendered query read as male more often than as female, a gendered one
  read as non-gendered when its cue is missed, "other" rarely chosen);
- **unequal workers**: a drawn from a range, and activity (how many HITs) from a Zipf law;
- **spammers**: a share of the workers answer at random;
- **a lazy worker** answers "non-gendered" to everything;
- **gold**: every HIT holds one of :attr:`Crowd.gold` gold questions (known labels), so a worker
  meets the same gold question again and again;
- optionally **ranking-dependent errors**: a worker's error rate on a query grows with run A's
  value on it (``dependence``), the case no label model can correct;
- optionally **item difficulty**: every worker's error odds on a query (or gold question) are
  multiplied by exp(``difficulty`` · d), d ~ N(0, 1) drawn per query and independent of the runs
  (the votes on a query are no longer independent given its label);
- the **demo's crowd** (:data:`DEMO`): five annotators of accuracy 0.7 erring evenly on a pool nearly all
  non-gendered, no gold;
- optionally **gold selection** (``discard_failed_gold``): an assignment whose gold answer is wrong
  loses its other answers (a batch's default ``--failed-gold-answers discard``); its gold answer
  stays in what the crowd model reads (:func:`annotation.results.selectors.gold_judgments`).

:func:`prolific` is a Prolific-like crowd: many participants of equal activity, each taking one or
two HITs of ten queries and a gold question (11–22 answers; 200 participants for 1,000 queries,
740 for 3,750).

The machine (for the de-noised accuracy) labels every query with its own confusion of accuracy
:data:`MACHINE_ACCURACY`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

LABELS = ("n", "f", "m", "o")
#: The SIGIR 2020 study's shares (1,765 n, 742 f, 1,202 m, 41 o of 3,750).
SHARES = np.array([1765, 742, 1202, 41]) / 3750
#: Where a worker's errors go, by true label (rows: n, f, m, o; the diagonal unused).
ERRORS = np.array(
    [
        [0.0, 0.30, 0.55, 0.15],
        [0.60, 0.0, 0.30, 0.10],
        [0.65, 0.25, 0.0, 0.10],
        [0.30, 0.35, 0.35, 0.0],
    ]
)
#: Class means of run A and of the paired difference B − A (gendered queries lean harder).
MEAN_A = np.array([0.05, 0.40, 0.50, 0.10])
MEAN_DIFFERENCE = np.array([0.02, 0.15, 0.25, 0.05])
SD_A, SD_DIFFERENCE = 0.2, 0.1
MACHINE_ACCURACY = 0.905


@dataclass(frozen=True)
class Crowd:
    """How the crowd is made (see the module docstring)."""

    workers: int = 40
    votes: int = 3
    accuracy: tuple[float, float] = (0.70, 0.95)
    spammers: float = 0.10
    lazy: int = 1
    gold: int = 10
    per_hit: int = 10
    zipf: float = 1.0
    dependence: float = 0.0  #: error odds multiplied by exp(dependence · z), z = run A's standardised value
    difficulty: float = 0.0  #: error odds multiplied by exp(difficulty · d), d ~ N(0, 1) per query
    discard_failed_gold: bool = False  #: an assignment with a wrong gold answer loses its other answers
    #: The true labels' shares (default :data:`SHARES`, the SIGIR 2020 study's).
    shares: tuple[float, ...] | None = None
    #: A good worker's errors spread evenly over the other labels, not along :data:`ERRORS`.
    even_errors: bool = False

    @property
    def label_shares(self) -> np.ndarray:
        return SHARES if self.shares is None else np.asarray(self.shares, dtype=float)


MODERATE = Crowd()
HEAVY = Crowd(accuracy=(0.55, 0.85), spammers=0.35)
#: The demo's crowd (issue 58): ``simulate_annotations --annotators 5 --accuracy 0.7`` on a pool nearly all
#: non-gendered: 5 annotators, 3 a query, each right with probability 0.7 and otherwise naming one of the
#: other three labels at random; no gold question, no spammer.
DEMO = Crowd(
    workers=5, accuracy=(0.7, 0.7), spammers=0.0, lazy=0, gold=0, zipf=0.0,
    shares=(0.97, 0.015, 0.014, 0.001), even_errors=True,
)  # fmt: skip
#: The crowds ``crowd_coverage --crowd`` offers (``prolific``: :func:`prolific`, sized to the queries).
CROWDS = {
    "moderate": MODERATE,
    "heavy": HEAVY,
    "difficulty": replace(MODERATE, difficulty=1.0),
    "gold-selected": replace(MODERATE, discard_failed_gold=True),
    "demo": DEMO,
}


def prolific(queries: int) -> Crowd:
    """A Prolific-like crowd for ``queries`` queries: participants of equal activity taking 1.5 HITs
    of ten queries on average (``queries`` × 3 votes / 10 / 1.5 participants)."""
    return Crowd(workers=max(20, round(queries * 3 / 10 / 1.52)), zipf=0.0, per_hit=10)


def crowd_named(name: str, queries: int) -> Crowd:
    return prolific(queries) if name == "prolific" else CROWDS[name]


def synthetic_truth(rng: np.random.Generator, n: int, shares: np.ndarray = SHARES) -> np.ndarray:
    """n labels with ``shares`` (default the study's), exactly (rounded), in random order."""
    counts = np.floor(np.asarray(shares) * n).astype(int)
    counts[0] += n - counts.sum()
    return rng.permutation(np.repeat(np.arange(len(LABELS)), counts))


def values(rng: np.random.Generator, truth: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-query values of runs A and B."""
    a = MEAN_A[truth] + rng.normal(0, SD_A, len(truth))
    b = a + MEAN_DIFFERENCE[truth] + rng.normal(0, SD_DIFFERENCE, len(truth))
    return a, b


#: Errors spread evenly over the other labels (:attr:`Crowd.even_errors`).
EVEN_ERRORS = (1 - np.eye(len(LABELS))) / (len(LABELS) - 1)


def _confusion(accuracy: float, errors: np.ndarray = ERRORS) -> np.ndarray:
    return accuracy * np.eye(len(LABELS)) + (1 - accuracy) * errors


def crowd_judgments(
    rng: np.random.Generator, truth: np.ndarray, crowd: Crowd, a: np.ndarray | None = None
) -> tuple[pd.DataFrame, dict[str, str]]:
    """The crowd's answers (``item, worker, label``, in the order answered; gold items ``g<i>``)
    and the gold questions' known labels. With gold selection, ``frame.attrs["discarded"]`` is the
    number of assignments that lost their other answers (what
    :func:`annotation.results.selectors.gold_discarded_assignments` counts in a batch)."""
    n, k = len(truth), len(LABELS)
    kinds = np.zeros(crowd.workers, dtype=np.int64)  # 0 good, 1 spammer, 2 lazy
    spam = round(crowd.spammers * crowd.workers)
    kinds[:spam] = 1
    kinds[spam : spam + crowd.lazy] = 2
    kinds = rng.permutation(kinds)
    accuracy = rng.uniform(*crowd.accuracy, crowd.workers)
    activity = 1.0 / np.arange(1, crowd.workers + 1) ** crowd.zipf
    activity = rng.permutation(activity / activity.sum())
    gold_truth = rng.choice(k - 1, size=crowd.gold, p=SHARES[:3] / SHARES[:3].sum())
    errors = EVEN_ERRORS if crowd.even_errors else ERRORS
    confusions = np.stack([_confusion(x, errors) for x in accuracy])
    z = np.zeros(n) if a is None or crowd.dependence == 0 else (a - a.mean()) / a.std()
    # Hardness of each query and gold question (drawn only when asked: same seeds, same crowds).
    hardness = rng.standard_normal(n + crowd.gold) if crowd.difficulty else np.zeros(n + crowd.gold)
    odds_factor = np.exp(np.concatenate([crowd.dependence * z, np.zeros(crowd.gold)]) + crowd.difficulty * hardness)
    order = rng.permutation(n)
    hits = [order[i : i + crowd.per_hit] for i in range(0, n, crowd.per_hit)]
    rows: list[tuple[str, str, str]] = []
    for hit_number, hit in enumerate(hits):
        chosen = rng.choice(crowd.workers, size=crowd.votes, replace=False, p=activity)
        gold_items = (-1 - hit_number % crowd.gold,) if crowd.gold else ()
        for w in chosen:
            worker = f"w{w}"
            for q in (*hit, *gold_items):
                t = gold_truth[-1 - q] if q < 0 else truth[q]
                if kinds[w] == 1:
                    given = rng.integers(k)
                elif kinds[w] == 2:
                    given = 0
                else:
                    row = confusions[w, t].copy()
                    if (q >= 0 and crowd.dependence) or crowd.difficulty:  # gold index n + g
                        odds = (1 - row[t]) / row[t] * odds_factor[q if q >= 0 else n - 1 - q]
                        wrong = odds / (1 + odds)
                        row = (1 - wrong) * np.eye(k)[t] + wrong * errors[t]
                    given = rng.choice(k, p=row)
                rows.append((f"g{-1 - q}" if q < 0 else f"q{q}", worker, LABELS[given]))
    frame = pd.DataFrame(rows, columns=["item", "worker", "label"])
    gold = {f"g{i}": LABELS[t] for i, t in enumerate(gold_truth)}
    if crowd.discard_failed_gold:
        is_gold = frame["item"].str.startswith("g").to_numpy()
        assignment = np.concatenate([[0], np.cumsum(is_gold)[:-1]])  # each assignment ends with its gold row
        wrong = is_gold & (frame["label"].to_numpy() != frame["item"].map(gold).to_numpy())
        failed = np.zeros(assignment.max() + 1, dtype=bool)
        failed[assignment[wrong]] = True
        frame = frame.loc[~(failed[assignment] & ~is_gold)].reset_index(drop=True)
        frame.attrs["discarded"] = int(failed.sum())
    return frame, gold


def machine_labels(rng: np.random.Generator, truth: np.ndarray, accuracy: float = MACHINE_ACCURACY) -> np.ndarray:
    """The machine's label codes: right with probability ``accuracy``, else along :data:`ERRORS`."""
    confusion = _confusion(accuracy)
    cumulative = confusion[truth].cumsum(axis=1)
    return (rng.random(len(truth))[:, None] > cumulative).sum(axis=1)


@dataclass
class Study:
    """One simulated study: truth, values, the crowd's answers, the machine's labels."""

    truth: np.ndarray
    a: np.ndarray
    b: np.ndarray
    judgments: pd.DataFrame
    gold: dict[str, str]
    machine: np.ndarray
    #: Assignments whose other answers gold selection discarded (``Crowd.discard_failed_gold``).
    discarded: int = 0

    @property
    def qids(self) -> list[str]:
        return [f"q{i}" for i in range(len(self.truth))]


def study(rng: np.random.Generator, truth: np.ndarray, crowd: Crowd = MODERATE) -> Study:
    """Draw one study on ``truth``."""
    a, b = values(rng, truth)
    judgments, gold = crowd_judgments(rng, truth, crowd, a)
    return Study(truth, a, b, judgments, gold, machine_labels(rng, truth), judgments.attrs.get("discarded", 0))


def answered(drawn: Study) -> Study:
    """The study restricted to the queries with at least one answer left (gold selection can discard
    every answer to a query: it is then not judged, as in a batch), renumbered ``q0…``."""
    seen = set(drawn.judgments["item"])
    keep = np.array([q in seen for q in drawn.qids], dtype=bool)
    if keep.all():
        return drawn
    renamed = {f"q{old}": f"q{new}" for new, old in enumerate(np.flatnonzero(keep))}
    judgments = drawn.judgments.assign(item=drawn.judgments["item"].map(lambda item: renamed.get(item, item)))
    return Study(
        drawn.truth[keep], drawn.a[keep], drawn.b[keep], judgments, drawn.gold, drawn.machine[keep], drawn.discarded
    )


def with_dependence(crowd: Crowd, dependence: float) -> Crowd:
    return replace(crowd, dependence=dependence)


#: What :func:`coverage_study` checks, in the order the coverage table prints them.
COVERED = ("value", "difference", "denoised")


def coverage_study(
    rng: np.random.Generator, crowd: Crowd, n: int, seed: int, samples: int = 200, constructions: bool = True
) -> dict:
    """One study drawn on a synthetic truth of ``n`` queries and the report's own estimators on it,
    as a report on a batch's labels and the calibration report compute them: does each interval
    cover its truth?

    - ``value`` / ``difference``: run A's label-corrected value and B − A with the crowd model
      refitted in each of ``samples`` draws (:class:`genderbias.crowd.label_uncertainty.CorrectedFit`, what
      :func:`genderbias.crowd.label_uncertainty.combined_summary` computes, same seed;
      :meth:`genderbias.crowd.label_probabilities.LabelModel.draws`) against the true
      non-gendered means :data:`MEAN_A` [n] and :data:`MEAN_DIFFERENCE` [n];
    - ``denoised``: the machine's de-noised accuracy
      (:func:`genderbias.crowd.reliability.denoised_fit` and ``refitted_draws``, what
      ``crowd_reliability`` computes: every query sampled, one stratum) against :data:`MACHINE_ACCURACY`;
    - ``warning``: the crowd-quality warning (:func:`genderbias.crowd.label_probabilities.crowd_quality`,
      told how many assignments gold selection discarded, as a batch's report tells it).

    ``value``, ``difference``, ``denoised``: the product's interval
    (:data:`genderbias.stats.intervals.LABEL_INTERVAL`). With ``constructions``, from the same draws, also
    ``<figure>:<construction>`` for every one of :data:`genderbias.stats.intervals.CONSTRUCTIONS` (``bca``'s
    jackknife refits the crowd model 20 more times; the crossed ones' jackknives over the workers and over the
    answers 20 more each, also for the de-noised accuracy, :func:`genderbias.stats.intervals.extra_variance`, with
    ``<figure>:extra_<construction>`` the variance added and ``<figure>:widening_<construction>`` the factor
    the interval is widened by) and the diagnostics ``<figure>:error`` (estimate
    − truth) and ``<figure>:shift`` (mean draw − estimate), each in bootstrap standard deviations,
    and ``<figure>:sd``.
    """
    from genderbias.crowd.aggregation import dawid_skene
    from genderbias.crowd.label_probabilities import LabelModel, crowd_quality
    from genderbias.crowd.label_uncertainty import MIN_USABLE_DRAWS, CorrectedFit
    from genderbias.crowd.reliability import denoised_bias, denoised_fit, leave_out_estimates, refitted_draws
    from genderbias.stats import intervals
    from genderbias.stats.significance import LEVEL

    drawn = answered(study(rng, synthetic_truth(rng, n, crowd.label_shares), crowd))
    qids = drawn.qids
    ds = dawid_skene(drawn.judgments, gold=drawn.gold)
    table = ds.held_out.loc[qids, list(LABELS)]
    names = intervals.CONSTRUCTIONS if constructions else (intervals.LABEL_INTERVAL,)
    jackknife = any(intervals.needs_jackknife(c) for c in names)
    quality = crowd_quality(ds, discarded=drawn.discarded)
    model = LabelModel(table, ds, qids, quality)
    fitter = CorrectedFit(
        table, samples, seed, model.draws, jackknife=jackknife, leave_out=model.leave_out_draws,
        recalibrated=lambda: model.recalibrated(seed),
    )  # fmt: skip
    fitted = {
        "value": (*fitter.estimates(drawn.a[:, None]), MEAN_A[0]),
        "difference": (*fitter.estimates((drawn.b - drawn.a)[:, None]), MEAN_DIFFERENCE[0]),
    }
    left_out = {
        "value": lambda by: fitter.left_out_values(drawn.a[:, None], by),
        "difference": lambda by: fitter.left_out_values((drawn.b - drawn.a)[:, None], by),
    }
    machine = {q: LABELS[m] for q, m in zip(qids, drawn.machine, strict=True)}
    denoised = denoised_fit(
        drawn.judgments, machine, dict.fromkeys(qids, 1.0), dict.fromkeys(qids, "s"), gold=drawn.gold
    )
    draws, jack = refitted_draws(
        denoised.ds, denoised.items, denoised.machine, denoised.weights, denoised.strata,
        bootstrap=samples, seed=seed, jackknife=jackknife,
    )  # fmt: skip
    fitted["denoised"] = (
        np.array([denoised.accuracy]),
        draws[:, None],
        None if jack is None else jack[:, None],
        MACHINE_ACCURACY,
    )
    cached: dict[str, np.ndarray] = {}

    def denoised_left_out(by: str) -> np.ndarray:
        if by not in cached:
            cached[by] = leave_out_estimates(denoised.ds, denoised.items, denoised.machine, denoised.weights, by)
        return cached[by][:, None]

    left_out["denoised"] = denoised_left_out
    # The de-noised accuracy's interval reaches as far as its bias where the check of its fit warns
    # (crowd_reliability.refitted_interval, what the calibration report shows).
    denoised_quality = crowd_quality(denoised.ds)
    bias = denoised_bias(
        denoised.ds, denoised.items, denoised.machine, denoised.weights, seed=seed, quality=denoised_quality
    )
    denoised_reach = None if bias is None else np.array([bias])
    out: dict = {}
    for figure, (point, boot, jack, truth) in fitted.items():
        usable = MIN_USABLE_DRAWS if figure != "denoised" else 0.0
        for name in names:
            accel = intervals.acceleration(jack) if intervals.needs_jackknife(name) else None
            extra = intervals.extra_variance(name, left_out[figure]) if intervals.needs_workers(name) else None
            if extra is not None:
                out[f"{figure}:extra_{name}"] = float(extra[0])
            low, high = intervals.bootstrap_interval(boot, point, LEVEL, name, accel, usable, extra)

            def covers(low, high, truth=truth):
                return bool(not np.isnan(low[0]) and not np.isnan(high[0]) and low[0] <= truth <= high[0])

            out[f"{figure}:{name}"] = covers(low, high)
            if name == intervals.LABEL_INTERVAL:
                # The product's interval: extended by the bias of posteriors too sure where the model's check warns.
                values = {"value": drawn.a, "difference": drawn.b - drawn.a}.get(figure)
                bias = denoised_reach if values is None else fitter.reach(values[:, None], point, boot)
                out[figure] = covers(*intervals.extended(low, high, bias))
                out[f"{figure}:unextended"] = out[f"{figure}:{name}"]
                out[f"{figure}:reach"] = float(bias[0]) if bias is not None else 0.0
                calibration = denoised_reach if values is None else fitter.calibration_bias(values[:, None])
                out[f"{figure}:calibration_bias"] = float(calibration[0]) if calibration is not None else 0.0
        sd = float(np.nanstd(boot[:, 0], ddof=1))
        out[f"{figure}:sd"] = sd
        out[f"{figure}:error"] = (float(point[0]) - truth) / sd if sd > 0 else np.nan
        out[f"{figure}:shift"] = (float(np.nanmean(boot[:, 0])) - float(point[0])) / sd if sd > 0 else np.nan
        for name in (c for c in names if intervals.needs_workers(c)):  # how much wider than the bootstrap's
            out[f"{figure}:widening_{name}"] = float(intervals.widening(boot[:, :1], out[f"{figure}:extra_{name}"])[0])
    # The de-noised accuracy's own fit (the machine one of its annotators) is checked as the calibration
    # report checks it (crowd_reliability.CrowdReliability.quality).
    out["denoised_warning"] = denoised_quality["warning"]
    out["warning"] = quality["warning"]
    out["misfit"], out["information"], out["model"] = quality["misfit"], quality["information"], quality["model"]
    return out


def coverage_table(results: pd.DataFrame) -> pd.DataFrame:
    """Per column of :data:`COVERED` (the product's interval), ``warning`` (and ``denoised_warning``, the
    de-noised accuracy's own fit's) and, where present, each
    ``<figure>:<construction>``: the share of studies, its Monte-Carlo standard error
    √(p(1 − p)/studies) and the number of studies."""
    from genderbias.stats import intervals

    columns = [*COVERED, "warning", *(["denoised_warning"] if "denoised_warning" in results else [])]
    columns += [f"{f}:{c}" for f in COVERED for c in intervals.CONSTRUCTIONS if f"{f}:{c}" in results]
    share = results[columns].astype(float).mean()
    return pd.DataFrame({"share": share, "mc_se": np.sqrt(share * (1 - share) / len(results)), "studies": len(results)})


def bias_table(results: pd.DataFrame) -> pd.DataFrame:
    """Per figure: the mean estimate − truth and mean draw − estimate, in bootstrap s.d. (with their
    Monte-Carlo s.e.), and the ratio of the estimates' s.d. across studies to the mean bootstrap s.d.
    in units of the bootstrap s.d. (1 when the bootstrap's spread is right)."""
    rows = {}
    for figure in COVERED:
        if f"{figure}:error" not in results:
            continue
        error, shift = results[f"{figure}:error"].astype(float), results[f"{figure}:shift"].astype(float)
        rows[figure] = {
            "error": error.mean(),
            "error_se": error.std(ddof=1) / np.sqrt(len(error)),
            "shift": shift.mean(),
            "shift_se": shift.std(ddof=1) / np.sqrt(len(shift)),
            "spread": error.std(ddof=1),
        }
        for name in ("crossed", "crossed_net"):  # the mean factor the interval is widened by
            if f"{figure}:widening_{name}" in results:
                rows[figure][f"widening_{name}"] = results[f"{figure}:widening_{name}"].astype(float).mean()
    return pd.DataFrame(rows).T
