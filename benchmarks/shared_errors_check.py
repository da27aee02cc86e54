"""Benchmark: the check for errors shared by query, without an audit sample (issue 81, item 3's Done-when).

Per study: whether the product's crowd-model interval for run A's mean over the non-gendered queries misses the
truth, and whether :func:`genderbias.crowd.shared_errors.crowd_shared_errors` fires on the same answers and gold.
Prints, per crowd, the share of studies whose interval misses and the check's firing rate among those and among
all (each with its Monte-Carlo s.e.), and which source fired. The studies: every simulated crowd, drawn as the
coverage studies draw them, or (``--real``) adultcontent2 read as :mod:`benchmarks.audit_coverage` reads it, a
random ``GOLD_SHARE`` of its sites the batch's gold questions; the method and its figures: docs/quality.md,
"Errors shared by query". Pure library (no Django).
"""

from __future__ import annotations

import argparse
import multiprocessing
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks.audit_coverage import SIMULATED, markdown, simulated_crowds
from genderbias.crowd.aggregation import dawid_skene
from genderbias.crowd.label_probabilities import LabelModel, crowd_quality
from genderbias.crowd.label_uncertainty import CorrectedFit
from genderbias.crowd.shared_errors import crowd_shared_errors
from genderbias.crowd.simulation import studies as cs
from genderbias.crowd.simulation.answers import tilt_errors
from tests.support.real_crowds import read_crowd, resample

#: Share of adultcontent2's gold sites that serve as the batch's gold questions (every answer kept).
GOLD_SHARE = 0.1


def _interval_misses(judgments: pd.DataFrame, gold: dict, values: dict, truth: float, samples: int, seed: int):
    """(misses, the fit's crowd-quality warning, whether the model was trusted, the fit): the product's
    crowd-model interval for the mean of ``values`` (qid → value) over the class n, against ``truth``; trusted,
    it is the narrow construction (``intervals.construction_for``)."""
    model = LabelModel.fit(judgments, gold)
    qids = list(model.table.index)
    low, high = CorrectedFit(model, samples, seed).interval(np.array([values[q] for q in qids])[:, None])[1:3]
    return not (low[0] <= truth <= high[0]), model.warns(), model.trusted(), model.crowd


def _row(crowd: str, judgments, gold, values, truth, samples: int, seed: int) -> dict:
    if samples:
        misses, warned, trusted, fit = _interval_misses(judgments, gold, values, truth, samples, seed)
    else:  # --samples 0: the check alone (its firing rate among all studies), no interval
        fit = dawid_skene(judgments, gold=gold)
        misses, warned, trusted = None, bool(crowd_quality(fit)["warning"]), None
    check = crowd_shared_errors(judgments, gold, seed=seed, fit=fit)
    return {
        "crowd": crowd,
        "misses": misses,
        "fires": check.fires,
        "gold": "gold" in check.sources,
        "answers": "answers" in check.sources,
        "quality_warning": warned,
        "trusted": trusted,
        "gold_dispersion": check.gold_dispersion,
        "answers_dispersion": check.answers_dispersion,
        "gold_p": check.gold_p,
        "answers_p": check.answers_p,
        "audit_size": check.audit_size,
    }


def simulated_study(args: tuple) -> dict:
    name, queries, samples, seed, index, bound = args
    rng = np.random.default_rng([seed, queries, SIMULATED.index(name), index])
    crowd = cs.crowd_named(name, queries)
    drawn = cs.answered(cs.study(rng, cs.synthetic_truth(rng, queries, crowd.label_shares), crowd))
    values = dict(zip(drawn.qids, drawn.a, strict=True))
    row = _row(name, drawn.judgments, drawn.gold, values, cs.MEAN_A[0], samples, index)
    if bound and crowd.difficulty:  # the same design without difficulty: the bound's null distribution
        null = cs.study(rng, cs.synthetic_truth(rng, queries, crowd.label_shares), replace(crowd, difficulty=0.0))
        for prefix, study in (("bound", drawn), ("null", null)):
            gold, answers = _difficulty_log_lr(study, crowd.difficulty)
            row.update({f"{prefix}_gold": gold, f"{prefix}_both": gold + answers})
    return row


def _difficulty_log_lr(study: cs.Study, difficulty: float) -> tuple[float, float]:
    """(gold, other queries): the log likelihood ratio of error odds × exp(difficulty · d), d ~ N(0, 1) a query,
    against none, with every worker's confusion, kind and the class shares known. By Neyman–Pearson no test of the
    same answers at the same level fires more often (``--bound``)."""
    frame, k = study.judgments, len(cs.LABELS)
    rows = np.stack([np.asarray(study.confusions[w]) for w in frame["worker"]])  # [J × K × K]
    given = frame["label"].map(cs.LABELS.index).to_numpy()
    tilted = ~np.all(np.isclose(rows, 1 / k), axis=(1, 2)) & ~np.all(rows[:, :, 0] == 1.0, axis=1)  # not spam, lazy
    nodes, weights = np.polynomial.hermite_e.hermegauss(25)  # odd: the middle node is d = 0, the null
    truths = np.broadcast_to(np.arange(k), rows.shape[:2])
    chances = np.stack(
        [np.where(tilted[:, None, None], tilt_errors(rows, truths, f), rows) for f in np.exp(difficulty * nodes)], -1
    )[np.arange(len(given)), :, given]  # [J × K × nodes]: P(answer | true label, d)
    items, item = np.unique(frame["item"].to_numpy(), return_inverse=True)
    log_chance = np.zeros((len(items), k, len(nodes)))
    np.add.at(log_chance, item, np.log(chances))
    is_gold = np.char.startswith(items.astype(str), "g")
    prior = np.tile(cs.SHARES, (len(items), 1))
    prior[is_gold] = np.eye(k)[[cs.LABELS.index(study.gold[i]) for i in items[is_gold]]]
    with np.errstate(divide="ignore"):
        joint = np.log(prior)[:, :, None] + log_chance
    alternative = np.logaddexp.reduce(joint + np.log(weights / weights.sum()), axis=(1, 2))
    ratio = alternative - np.logaddexp.reduce(joint[:, :, len(nodes) // 2], axis=1)
    return float(ratio[is_gold].sum()), float(ratio[~is_gold].sum())


def real_study(args: tuple) -> dict:
    answers, gold, votes, samples, seed, index = args
    rng = np.random.default_rng([seed, votes, index])
    sites = np.array(gold.index)
    questions = set(rng.choice(sites, size=round(GOLD_SHARE * len(sites)), replace=False))
    on_gold = answers["item"].isin(questions)
    kept = pd.concat([answers[on_gold], resample(rng, answers[~on_gold], votes)], ignore_index=True)
    codes = np.array([cs.LABELS.index(label) for label in gold])
    a, _ = cs.values(rng, codes)
    values = dict(zip(sites, a, strict=True))
    scored = [i for i, site in enumerate(sites) if site not in questions and codes[i] == 0]
    known = {site: gold[site] for site in questions}
    return _row(f"adultcontent2, {votes} answers", kept, known, values, float(a[scored].mean()), samples, index)


def table(rows: pd.DataFrame) -> pd.DataFrame:
    out = []
    for crowd, part in rows.groupby("crowd", sort=False):
        measured = part["misses"].notna().any()
        missed = part[part["misses"].eq(True)]

        def rate(frame: pd.DataFrame, fires: str = "fires") -> str:
            if not len(frame):
                return "–"
            p = frame[fires].astype(float).mean()
            return f"{p:.2f} ± {np.sqrt(p * (1 - p) / len(frame)):.2f}"

        bounds = [s for s in ("gold", "both") if part.get(f"bound_{s}", pd.Series()).notna().any()]
        for source in bounds:  # the most powerful level-5% test fires above its null's 95th percentile
            part = part.assign(**{f"fires_{source}": part[f"bound_{source}"] > part[f"null_{source}"].quantile(0.95)})
        missed = part[part["misses"].eq(True)]

        out.append(
            {
                "crowd": crowd,
                "studies": len(part),
                "interval misses": f"{part['misses'].astype(float).mean():.3f}" if measured else "–",
                "fires among misses": f"{rate(missed)} ({len(missed)})" if measured else "–",
                "fires among all": rate(part),
                "by gold": f"{part['gold'].mean():.2f}",
                "by answers": f"{part['answers'].mean():.2f}",
                "quality warning": f"{part['quality_warning'].mean():.2f}",
                # the narrow interval taken (label_interval ``checked``), and its misses
                "trusted (misses)": f"{part['trusted'].astype(float).mean():.2f} ({int(missed['trusted'].eq(True).sum())})"
                if part.get("trusted", pd.Series()).notna().any()
                else "–",
                "median gold dispersion": f"{part['gold_dispersion'].median():.2f}"
                if part["gold_dispersion"].notna().any()
                else "–",
                "median answers dispersion": f"{part['answers_dispersion'].median():.2f}",
                **{
                    f"bound ({s}) among misses; all": f"{rate(missed, f'fires_{s}')}; {rate(part, f'fires_{s}')}"
                    for s in bounds
                },
            }
        )
    return pd.DataFrame(out)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    parser.add_argument("--real", action="store_true", help="adultcontent2 resampled, not the simulator")
    parser.add_argument("--queries", type=int, default=1000, help="queries a simulated study")
    parser.add_argument("--studies", type=int, default=100, help="simulated studies a crowd")
    parser.add_argument(
        "--crowds", default="all", help=f"comma-separated simulated crowds ({', '.join(SIMULATED)}) or all"
    )
    parser.add_argument(
        "--reference", type=Path, default=Path("../shared/reference"), help="the reference folder (--real)"
    )
    parser.add_argument("--resamplings", type=int, default=200, help="resamplings of adultcontent2 a vote count")
    parser.add_argument("--votes", default="3,5", help="comma-separated answers kept a site (--real)")
    parser.add_argument(
        "--samples", type=int, default=200, help="bootstrap draws of the crowd-model interval (0: the check alone)"
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=81,
        help=(
            "a study's seed is [seed, queries, the crowd's place in that list, study]; "
            "a resampling's [seed, votes, resampling]"
        ),
    )
    parser.add_argument("--processes", type=int, default=1, help="studies computed side by side")
    parser.add_argument("--rows", type=Path, help="also append each study's row to this CSV as it ends")
    parser.add_argument(
        "--bound", action="store_true", help="also the most powerful test's rate, every parameter known (difficulty)"
    )
    parser.add_argument("--table", type=Path, help="only print the table of the rows in this CSV (of --rows)")
    o = parser.parse_args(argv)
    if o.table:
        print(markdown(table(pd.read_csv(o.table))))
        return
    started = time.perf_counter()
    if o.real:
        answers, gold = read_crowd(o.reference / "crowds" / "adultcontent2")
        jobs = [
            (answers, gold, int(votes), o.samples, o.seed, i)
            for votes in o.votes.split(",")
            for i in range(o.resamplings)
        ]
        job = real_study
        print(f"adultcontent2: {len(gold)} gold sites, {len(answers)} answers; {o.resamplings} resamplings each")
    else:
        names = simulated_crowds(o.crowds)
        # Interleaved (study 0 of every crowd, then study 1, ...): a run stopped early has every crowd alike.
        jobs = [(name, o.queries, o.samples, o.seed, i, o.bound) for i in range(o.studies) for name in names]
        job = simulated_study
        print(f"simulated crowds {', '.join(names)}; {o.queries} queries; {o.studies} studies each")
    rows = []
    with multiprocessing.Pool(o.processes) as pool:
        for row in pool.imap(job, jobs) if o.processes > 1 else map(job, jobs):
            rows.append(row)
            if o.rows:
                header = not o.rows.exists()
                pd.DataFrame([row]).to_csv(o.rows, mode="a", header=header, index=False)
    print(f"crowd-model interval: {o.samples} bootstrap draws; seed {o.seed}")
    print(markdown(table(pd.DataFrame(rows))))
    print(f"{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
