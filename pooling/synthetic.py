"""Synthetic collections, query sets, TREC runs and qrels shaped like MS MARCO, for the demo and the
benchmarks: the product must run without the real collection. Passages mix a neutral vocabulary,
a small share of gender words and some trailing punctuation (so the ``words`` and ``whitespace``
tokenizers differ as on real text); queries lean female, male or neither.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from genderbias.text.wordlists import DEFAULT_FEMALE, DEFAULT_MALE

NEUTRAL = (
    "the of and to in is a for that on with as by are be this from it or an at which can was have not your you "
    "more also used water body cell energy time system process data price cost year day number city state country "
    "plant food blood heart market light power oil tax law court school study test rate level area music film "
    "game team"
).split()

_PUNCT = np.array(["", "", "", "", ",", ".", "'s"])


@dataclass(frozen=True)
class SyntheticSpec:
    passages: int = 1_000_000
    queries: int = 3_750
    runs: int = 7
    depth: int = 100
    words_per_passage: int = 56
    gender_rate: float = 0.02
    seed: int = 13


def _passage_texts(rng: np.random.Generator, n: int, length: int, gender_rate: float) -> Iterator[str]:
    """Yield ``n`` passages; every passage leans female, male or neither by a random amount."""
    female = np.array(DEFAULT_FEMALE + [w.capitalize() for w in DEFAULT_FEMALE[:8]])
    male = np.array(DEFAULT_MALE + [w.capitalize() for w in DEFAULT_MALE[:8]])
    neutral = np.array(NEUTRAL)
    block = 10_000
    for start in range(0, n, block):
        size = min(block, n - start)
        words = neutral[rng.integers(0, len(neutral), (size, length))]
        lean = rng.choice([-1.0, 0.0, 1.0], size=size, p=[0.3, 0.4, 0.3])
        is_gendered = rng.random((size, length)) < gender_rate * (1 + 2 * np.abs(lean))[:, None]
        to_male = rng.random((size, length)) < (0.5 + 0.4 * lean)[:, None]
        words = np.where(is_gendered & to_male, male[rng.integers(0, len(male), (size, length))], words)
        words = np.where(is_gendered & ~to_male, female[rng.integers(0, len(female), (size, length))], words)
        punct = _PUNCT[rng.integers(0, len(_PUNCT), (size, length))]
        words = np.char.add(words, punct)
        for row in words:
            yield " ".join(row)


def write_collection(path: Path, spec: SyntheticSpec) -> Path:
    """Write ``pid<TAB>passage`` lines (pids 0..n-1, like MS MARCO); ``.gz`` compresses."""
    rng = np.random.default_rng(spec.seed)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "wt", encoding="utf-8", newline="\n") as out:
        buffer = []
        for pid, text in enumerate(_passage_texts(rng, spec.passages, spec.words_per_passage, spec.gender_rate)):
            buffer.append(f"{pid}\t{text}\n")
            if len(buffer) == 10_000:
                out.write("".join(buffer))
                buffer.clear()
        out.write("".join(buffer))
    return path


def write_queries(path: Path, spec: SyntheticSpec) -> Path:
    """Write ``qid<TAB>query`` lines with MS MARCO-like integer qids, of every gender category."""
    rng = np.random.default_rng(spec.seed + 1)
    qids = np.sort(rng.choice(1_100_000, size=spec.queries, replace=False))
    neutral = np.array(NEUTRAL[20:])
    kinds = rng.choice(["n", "f", "m", "o"], size=spec.queries, p=[0.45, 0.25, 0.25, 0.05])
    with open(path, "w", encoding="utf-8") as out:
        for qid, kind in zip(qids, kinds, strict=True):
            words = list(neutral[rng.integers(0, len(neutral), rng.integers(2, 5))])
            if kind in ("f", "o"):
                words.insert(1, str(rng.choice(DEFAULT_FEMALE)))
            if kind in ("m", "o"):
                words.append(str(rng.choice(DEFAULT_MALE)))
            out.write(f"{qid}\twhat is the {' '.join(words)}\n")
    return path


def write_runs(directory: Path, queries_path: Path, spec: SyntheticSpec) -> list[Path]:
    """Write ``spec.runs`` TREC run files ranking ``spec.depth`` random passages per query."""
    qids = [line.split("\t", 1)[0] for line in queries_path.read_text(encoding="utf-8").splitlines()]
    paths = []
    for r in range(spec.runs):
        rng = np.random.default_rng(spec.seed + 100 + r)
        path = directory / f"run{r + 1}.trec"
        with open(path, "w", encoding="utf-8") as out:
            for qid in qids:
                docs = rng.choice(spec.passages, size=min(spec.depth, spec.passages), replace=False)
                scores = np.sort(rng.random(len(docs)))[::-1] * 30
                out.write(
                    "".join(
                        f"{qid} Q0 {d} {i + 1} {s:.4f} run{r + 1}\n"
                        for i, (d, s) in enumerate(zip(docs, scores, strict=True))
                    )
                )
        paths.append(path)
    return paths


#: Per run, in run order: the chance that each of its top ``QRELS_TOP`` documents is relevant
#: (decreasing, so the rankers differ in effectiveness; a run beyond the tuple takes the last).
QRELS_SKILL = (0.3, 0.15, 0.05)
QRELS_TOP = 10
_GRADES = np.array([1, 2, 3])
_GRADE_P = [0.5, 0.3, 0.2]


def synthetic_qrels(
    rankings: list[dict[str, list[str]]], spec: SyntheticSpec, skill: tuple[float, ...] = QRELS_SKILL
) -> dict[str, dict[str, int]]:
    """Graded judgments (``qid -> docid -> 1..3``) for the queries of ``rankings`` (one ``qid -> docids
    in rank order`` per run), laid on the random runs by ``skill``; every query also gets one relevant
    passage drawn from the whole collection, so recall stays below 1.
    """
    rng = np.random.default_rng(spec.seed + 200)
    qids = list(dict.fromkeys(qid for ranking in rankings for qid in ranking))
    qrels: dict[str, dict[str, int]] = {}
    for qid in qids:
        judged: dict[str, int] = {}
        for r, ranking in enumerate(rankings):
            chance = skill[min(r, len(skill) - 1)]
            for docid in ranking.get(qid, [])[:QRELS_TOP]:
                if rng.random() < chance and docid not in judged:
                    judged[docid] = int(rng.choice(_GRADES, p=_GRADE_P))
        extra = str(rng.integers(0, spec.passages))
        judged.setdefault(extra, int(rng.choice(_GRADES, p=_GRADE_P)))
        qrels[qid] = judged
    return qrels


def read_rankings(path: Path, top: int = QRELS_TOP) -> dict[str, list[str]]:
    """``qid -> docids`` of a TREC run file in its rank order (the first ``top`` per query)."""
    ranked: dict[str, list[tuple[int, str]]] = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            qid, _, docid, rank, *_ = line.split()
            ranked.setdefault(qid, []).append((int(rank), docid))
    return {qid: [d for _, d in sorted(pairs)[:top]] for qid, pairs in ranked.items()}


def write_qrels(path: Path, run_paths: list[Path], spec: SyntheticSpec, skill: tuple[float, ...] = QRELS_SKILL) -> Path:
    """Write TREC qrels (``qid 0 docid grade``) of :func:`synthetic_qrels` over the runs of ``run_paths``."""
    qrels = synthetic_qrels([read_rankings(p) for p in run_paths], spec, skill)
    with open(path, "w", encoding="utf-8", newline="\n") as out:
        out.write("".join(f"{qid} 0 {docid} {grade}\n" for qid, docs in qrels.items() for docid, grade in docs.items()))
    return path


#: Distinct passage texts a synthetic MS MARCO v2 collection draws from (:func:`write_v2_bundles`).
V2_TEXTS = 100_000
_POWERS = 10 ** np.arange(1, 19, dtype=np.int64)  # a number below 10**k has at most k digits


def write_v2_bundles(folder: Path, passages: int, bundles: int = 70, seed: int = 13, texts: int = V2_TEXTS) -> Path:
    """Write ``passages`` synthetic passages in MS MARCO v2's own layout into ``folder``: ``bundles``
    files of JSON lines as ir_datasets extracts them, each pid ``msmarco_passage_<bundle>_<byte offset>``.

    Passage ``i`` of bundle ``b`` is one of ``texts`` distinct passages chosen by a hash of ``(seed,
    b, i)``, so a smaller collection is a prefix of a larger one and the same runs rank both. Lines
    are built in columns, the byte offsets solved for the ids' own digits.
    """
    import polars as pl

    folder.mkdir(parents=True, exist_ok=True)
    pool = [
        json.dumps(text) for text in _passage_texts(np.random.default_rng(seed), texts, 56, SyntheticSpec.gender_rate)
    ]
    pool_series = pl.Series("passage", pool, dtype=pl.String)
    pool_lengths = pool_series.str.len_bytes().to_numpy().astype(np.int64)
    per_bundle = [passages // bundles + (1 if b < passages % bundles else 0) for b in range(bundles)]
    for b, n in enumerate(per_bundle):
        i = np.arange(n, dtype=np.uint64)
        choice = (
            (i * np.uint64(0x9E3779B97F4A7C15) + np.uint64(seed * 1_000_003 + b * 7919)) >> np.uint64(17)
        ) % np.uint64(texts)
        choice = choice.astype(np.int64)
        prefix = f'{{"pid": "msmarco_passage_{b:02d}_'
        doc = pl.select(pl.concat_str(pl.lit(f"msmarco_doc_{b:02d}_"), (pl.int_range(n) // 4).cast(pl.String)))
        doc = doc.to_series().rename("doc")
        rest_lengths = (
            len('", "passage": ')
            + pool_lengths[choice]
            + len(', "spans": "(0,1)", "docid": "')
            + doc.str.len_bytes().to_numpy().astype(np.int64)
            + len('"}\n')
        )
        base = len(prefix) + rest_lengths
        digits = np.ones(n, dtype=np.int64)
        while True:  # offsets depend on the ids' lengths, which depend on the offsets: a fixed point
            offsets = np.concatenate([[0], np.cumsum(base + digits)[:-1]]).astype(np.int64)
            new = np.searchsorted(_POWERS, offsets, side="right").astype(np.int64) + 1
            if np.array_equal(new, digits):
                break
            digits = new
        frame = pl.DataFrame({"offset": offsets, "passage": pool_series.gather(choice), "doc": doc})
        lines = frame.select(
            pl.concat_str(
                pl.lit(prefix),
                pl.col("offset").cast(pl.String),
                pl.lit('", "passage": '),
                pl.col("passage"),
                pl.lit(', "spans": "(0,1)", "docid": "'),
                pl.col("doc"),
                pl.lit('"}'),
            ).alias("line")
        )
        with open(folder / f"msmarco_passage_{b:02d}", "wb") as out:
            lines.write_csv(out, include_header=False, quote_style="never")
    return folder


def v2_docids(folder: Path, per_bundle: int, bundles: int = 70) -> list[str]:
    """The ids of the first ``per_bundle`` passages of each bundle in ``folder`` (read from the lines)."""
    ids = []
    for b in range(bundles):
        path = folder / f"msmarco_passage_{b:02d}"
        if not path.exists():
            break
        with open(path, "rb") as file:
            for _, line in zip(range(per_bundle), file, strict=False):
                ids.append(json.loads(line)["pid"])
    return ids
