"""The real crowds of ``../shared/reference/crowds/`` read for the tests and the benchmarks (one reader):
adultcontent2 (Mechanical Turk workers labelling web sites; Apache-2.0), its classes in the study's labels' roles."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from genderbias.crowd.aggregation import one_answer_per_worker

__all__ = ["ROLES", "read_crowd", "resample"]

#: adultcontent2's classes in the roles of the study's labels (G, the default, as n).
ROLES = {"G": "n", "P": "f", "R": "m", "X": "o"}


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
