"""Benchmark: the audit-sample intervals (PPI++) on a real crowd with gold (issue 81, Done-when's first bullet).

``python -m benchmarks.audit_coverage [--reference ../shared/reference] [--resamplings 200] [--votes 3]``

The crowd: ``crowds/adultcontent2`` under the reference folder (Mechanical Turk workers labelling web
sites G, P, R or X; Apache-2.0, its README): the gold sites that have answers, each worker's latest
answer to a site (:func:`genderbias.crowd.aggregation.one_answer_per_worker`). G is the default class
hard sites fall into, as gendered queries fall into "n": it plays n, and P, R, X play f, m, o. Each
resampling keeps ``--votes`` answers of every site at random, takes their majority
(:func:`genderbias.crowd.aggregation.majority_vote`, disputed: no label) as the crowd's prediction,
draws two runs' values per site by its true class as the simulated bias studies do
(:func:`genderbias.crowd.simulation.studies.values`), and for each audit size draws a random audit
sample of the gold sites whose gold labels are the expert's. The figures, each against its truth over
all the gold sites: the share of G, run A's mean over the true G sites and the paired difference B − A
there (:func:`genderbias.machine.proportions.audit_share`, ``audit_class_mean``, ``audit_difference``),
and the majority vote's plug-in (the same figure over the sites the majority calls G) for contrast.

Prints one Markdown table: per audit size and figure, the share of resamplings whose 95% interval holds
the truth with its Monte-Carlo standard error, the median width, the sample alone's median width
(λ = 0) and the plug-in's mean error. Pure library (no Django).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd

from genderbias.crowd.aggregation import majority_vote, one_answer_per_worker
from genderbias.crowd.simulation import studies as cs
from genderbias.machine.proportions import audit_class_mean, audit_difference, audit_share

#: adultcontent2's classes in the roles of the study's labels (G, the default, as n).
ROLES = {"G": "n", "P": "f", "R": "m", "X": "o"}
FIGURES = ("share", "mean", "difference")


def read_crowd(folder: Path) -> tuple[pd.DataFrame, pd.Series]:
    """(judgments item/worker/label on the gold sites, each worker's latest answer; gold label per site)."""
    gold = pd.read_csv(folder / "gold.txt", sep="\t", header=None, names=["item", "label"], dtype=str)
    gold = gold.drop_duplicates("item", keep="last").set_index("item")["label"].map(ROLES)
    answers = pd.read_csv(folder / "labels.txt", sep="\t", header=None, names=["worker", "item", "label"], dtype=str)
    answers = answers[answers["item"].isin(gold.index)]
    answers = one_answer_per_worker(answers.assign(label=answers["label"].map(ROLES)))
    return answers.reset_index(drop=True), gold.loc[sorted(answers["item"].unique())]


def resample(rng: np.random.Generator, answers: pd.DataFrame, votes: int) -> pd.DataFrame:
    """``votes`` answers of each site drawn at random (all of a site's when it has fewer)."""
    order = answers.assign(key=rng.random(len(answers))).sort_values(["item", "key"])
    return order[order.groupby("item").cumcount() < votes]


def study(rng, answers, gold, votes: int, audits: tuple[int, ...]) -> list[dict]:
    sites = list(gold.index)
    truth_codes = np.array([cs.LABELS.index(label) for label in gold])
    kept = resample(rng, answers, votes)
    vote = majority_vote(kept)["label"]
    predicted = [vote.get(site) for site in sites]
    a, b = cs.values(rng, truth_codes)
    is_g = truth_codes == 0
    said_g = np.array([p == "n" for p in predicted])
    truths = {"share": is_g.mean(), "mean": a[is_g].mean(), "difference": (b - a)[is_g].mean()}
    plugins = {"share": said_g.mean(), "mean": a[said_g].mean(), "difference": (b - a)[said_g].mean()}
    rows = []
    for size in audits:
        audited = rng.choice(len(sites), size=size, replace=False)
        truth = [gold.iloc[i] for i in audited]
        results = {
            "share": audit_share(truth, predicted, audited, label="n"),
            "mean": audit_class_mean(truth, predicted, audited, a, label="n"),
            "difference": audit_difference(truth, predicted, audited, a, b, label="n"),
        }
        for figure, result in results.items():
            low, high = result["ci"]
            rows.append(
                {
                    "audit": size,
                    "figure": figure,
                    "covered": low <= truths[figure] <= high,
                    "width": high - low,
                    "sample_width": result["sample_ci"][1] - result["sample_ci"][0],
                    "lam": result["lam"],
                    "plugin_error": plugins[figure] - truths[figure],
                }
            )
    return rows


def table(rows: pd.DataFrame) -> pd.DataFrame:
    grouped = rows.groupby(["audit", "figure"], sort=False)
    out = grouped.agg(
        resamplings=("covered", "size"),
        coverage=("covered", "mean"),
        median_width=("width", "median"),
        sample_alone_width=("sample_width", "median"),
        median_lam=("lam", "median"),
        plugin_error=("plugin_error", "mean"),
    )
    out.insert(2, "mc_se", np.sqrt(out["coverage"] * (1 - out["coverage"]) / out["resamplings"]))
    return out.reset_index()


def markdown(frame: pd.DataFrame) -> str:
    def cell(value) -> str:
        return f"{value:.3f}" if isinstance(value, float) else str(value)

    lines = ["| " + " | ".join(frame.columns) + " |", "|" + "---|" * len(frame.columns)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reference", default="../shared/reference", help="the folder holding crowds/adultcontent2")
    parser.add_argument("--resamplings", type=int, default=200)
    parser.add_argument("--votes", type=int, default=3)
    parser.add_argument("--audits", default="50,100,200", help="audit sample sizes, comma-separated")
    parser.add_argument("--seed", type=int, default=81)
    o = parser.parse_args(argv)
    folder = Path(o.reference) / "crowds" / "adultcontent2"
    if not (folder / "gold.txt").is_file():
        parser.error(f"--reference {o.reference}: no crowds/adultcontent2/gold.txt there")
    audits = tuple(int(s) for s in o.audits.split(","))
    started = time.perf_counter()
    answers, gold = read_crowd(folder)
    print(
        f"adultcontent2: {len(gold)} gold sites with answers ({gold.eq('n').sum()} G), {len(answers)} answers "
        f"by {answers['worker'].nunique()} workers; {o.votes} answers a site, {o.resamplings} resamplings"
    )
    rows = []
    for r in range(o.resamplings):
        rows += study(np.random.default_rng([o.seed, r]), answers, gold, o.votes, audits)
    print(markdown(table(pd.DataFrame(rows))))
    print(f"{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
