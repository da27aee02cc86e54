"""Benchmark: where the item-difficulty crowd model (GLAD) helps and where it cannot (issue 81, item 4).

Per study (a simulated crowd, or adultcontent2 resampled as :mod:`benchmarks.audit_coverage` does), the product's
crowd model and GLAD (:func:`genderbias.crowd.difficulty.fit_difficulty`) on the same answers: run A's
label-corrected mean over the non-gendered queries against the study's truth, the share of labels right, and
whether the held-out choice (:func:`genderbias.crowd.model_choice.choose_difficulty`) takes GLAD. Prints one
Markdown table per source; the method and its figures: docs/quality.md, "The item-difficulty model and the
known-confusion floor". Pure library (no Django).
"""

from __future__ import annotations

import argparse
import multiprocessing
import time
from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks.audit_coverage import markdown
from genderbias.crowd.aggregation import dawid_skene
from genderbias.crowd.class_means import class_means
from genderbias.crowd.difficulty import fit_difficulty
from genderbias.crowd.model_choice import choose_difficulty
from genderbias.crowd.simulation import studies as cs
from tests.support.real_crowds import read_crowd, resample


def _measure(judgments: pd.DataFrame, gold: dict, truth: np.ndarray, a: np.ndarray, qids: list[str]) -> dict:
    ds = dawid_skene(judgments, gold=gold)
    encoded = ds.encoded
    rows = [list(encoded.items).index(q) for q in qids]
    glad = fit_difficulty(encoded)
    choice = choose_difficulty(encoded)
    true_mean = float(a[truth == 0].mean())
    out = {"model": encoded.choice.model if encoded.choice else "", "gain": choice.gain, "chosen": choice.chosen}
    for name, posteriors in (
        ("ds", ds.posteriors.loc[qids, list(cs.LABELS)].to_numpy()),
        ("glad", glad.posteriors[rows][:, [list(encoded.labels).index(label) for label in cs.LABELS]]),
    ):
        out[f"{name}_error"] = float(class_means(posteriors, a)[0, 0]) - true_mean
        out[f"{name}_right"] = float((posteriors.argmax(axis=1) == truth).mean())
    return out


def simulated(args: tuple) -> dict:
    crowd, queries, index = args
    rng = np.random.default_rng([2040, index])
    drawn = cs.answered(cs.study(rng, cs.synthetic_truth(rng, queries, cs.crowd_named(crowd, queries).label_shares),
                                 cs.crowd_named(crowd, queries)))  # fmt: skip
    return {"source": f"{crowd}, {queries}"} | _measure(drawn.judgments, drawn.gold, drawn.truth, drawn.a, drawn.qids)


def real(args: tuple) -> dict:
    folder, votes, index = args
    answers, gold = read_crowd(Path(folder))
    rng = np.random.default_rng([81, votes, index])
    kept = resample(rng, answers, votes)
    sites = list(gold.index)
    truth = np.array([cs.LABELS.index(label) for label in gold])
    a, _ = cs.values(rng, truth)
    return {"source": f"adultcontent2, {votes} answers"} | _measure(kept, {}, truth, a, sites)


def table(rows: pd.DataFrame) -> pd.DataFrame:
    def mean_se(column: pd.Series) -> str:
        return f"{column.mean():+.4f} ({column.std(ddof=1) / np.sqrt(len(column)):.4f})"

    out = {}
    for source, group in rows.groupby("source", sort=False):
        out[source] = {
            "studies": len(group),
            "error, Dawid–Skene": mean_se(group["ds_error"]),
            "error, GLAD": mean_se(group["glad_error"]),
            "right, DS / GLAD": f"{group['ds_right'].mean():.3f} / {group['glad_right'].mean():.3f}",
            "GLAD chosen": f"{group['chosen'].mean():.2f}",
            "median gain (s.e.)": f"{group['gain'].median():+.1f}",
        }
    return pd.DataFrame(out).T


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--studies", type=int, default=16)
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--crowds", default="moderate,difficulty")
    parser.add_argument("--resamplings", type=int, default=16)
    parser.add_argument("--votes", default="3")
    parser.add_argument("--reference", default="../shared/reference")
    parser.add_argument("--processes", type=int, default=2)
    options = parser.parse_args()
    jobs = [
        (simulated, (c, options.queries, i)) for c in options.crowds.split(",") if c for i in range(options.studies)
    ]
    folder = Path(options.reference) / "crowds" / "adultcontent2"
    if folder.exists():
        jobs += [(real, (str(folder), int(v), i)) for v in options.votes.split(",") for i in range(options.resamplings)]
    started = time.time()
    with multiprocessing.Pool(options.processes) as pool:
        rows = pool.starmap(_call, jobs)
    print(markdown(table(pd.DataFrame(rows)).reset_index()))
    print(f"\n{len(jobs)} studies in {time.time() - started:.0f} s")


def _call(function, args):
    return function(args)


if __name__ == "__main__":
    main()
