"""Services of the metrics app: building bias reports and reading them back.

Heavy work (reading runs, counting words, computing metrics, bootstrapping) happens before
the transaction opens; the report and its result rows are written in one transaction, and
the per-query Parquet file is written atomically before it, so a failure leaves no report.
Counts come from :func:`pooling.services.document_counts_for`, once per word list, for the
union of the documents of every run (top max-cutoff) and of the background run.
"""

from __future__ import annotations

import csv
import io
import subprocess
import tomllib
import uuid
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from functools import cache
from pathlib import Path

import pandas as pd
import polars as pl
from django.conf import settings
from django.db import transaction

from core.errors import ServiceError
from core.files import write_parquet_atomic
from core.models import Job
from core.names import validate_name
from core.storage import cache_dir
from core.tasks import start_job
from pooling.models import QuerySet, Run
from pooling.services import document_counts_for, register_wordlist, run_frame
from pooling.tokenize import DEFAULT_TOKENIZER, TOKENIZERS
from pooling.wordlists import WordList as Words
from pooling.wordlists import default_wordlist, load_wordlist

from . import core, significance
from .models import COLLECTION_BACKGROUND, Report, Result

CSV_HEADER = ["run", "metric", "variant", "cutoff", "value", "queries"]
PER_QUERY_COLUMNS = ["run", "qid", "metric", "variant", "cutoff", "value"]
DEFAULT_CUTOFFS = (5, 10, 20, 30)
REPRESENTATIVE_WORDLIST = Path(__file__).resolve().parent / "data" / "wordlist_gender_representative.txt"


def default_representative_wordlist() -> Words:
    """The 163 + 163 gender-representative words and names of Rekabsaz, Kopeinik & Schedl (SIGIR 2021)."""
    return load_wordlist(REPRESENTATIVE_WORDLIST, name="representative-163+163")


@cache
def software_version() -> str:
    """``genderbias <version>`` plus the git commit when the code runs from a checkout."""
    root = Path(settings.BASE_DIR)
    try:
        version = tomllib.loads((root / "pyproject.toml").read_text())["project"]["version"]
    except (OSError, KeyError, tomllib.TOMLDecodeError):
        version = "unknown"
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True, timeout=5, check=True
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        commit = ""
    return f"genderbias {version}" + (f" ({commit})" if commit else "")


@dataclass(frozen=True)
class ReportSettings:
    cutoffs: tuple[int, ...] = DEFAULT_CUTOFFS
    tokenizer: str = DEFAULT_TOKENIZER
    threshold: float = core.DEFAULT_THRESHOLD
    bootstrap_samples: int = significance.DEFAULT_SAMPLES
    seed: int = significance.DEFAULT_SEED

    def validate(self) -> None:
        try:
            core.validate_cutoffs(self.cutoffs)
        except (TypeError, ValueError):
            raise ServiceError(f"cutoffs must be positive integers, got {list(self.cutoffs)}") from None
        if self.tokenizer not in TOKENIZERS:
            raise ServiceError(f"unknown tokenizer {self.tokenizer!r}; choose one of {', '.join(TOKENIZERS)}")
        if self.threshold < 0:
            raise ServiceError("the NFaiRR threshold must not be negative")
        if self.bootstrap_samples < 1:
            raise ServiceError("bootstrap samples must be at least 1")


@dataclass
class Computed:
    """What a report computes, before anything is stored."""

    per_query: pd.DataFrame
    summary: pd.DataFrame
    runs: list[Run] = field(default_factory=list)


def parse_cutoffs(text: str) -> tuple[int, ...]:
    """``"5,10,20"`` → ``(5, 10, 20)``, or ServiceError naming the bad part."""
    values = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        if not part.isdigit() or int(part) < 1:
            raise ServiceError(f"bad cutoff {part!r}: cutoffs are positive integers, e.g. 5,10,20,30")
        values.append(int(part))
    if not values:
        raise ServiceError("give at least one cutoff, e.g. 5,10,20,30")
    return tuple(sorted(set(values)))


def compute_report(
    query_set: QuerySet,
    runs: Sequence[Run],
    report_settings: ReportSettings = ReportSettings(),
    *,
    wordlist: Words | None = None,
    representative: Words | None = None,
    background: Run | None = None,
    baseline: Run | None = None,
    job: Job | None = None,
    bar: bool = True,
) -> Computed:
    """Every metric of every run over the queries of ``query_set`` it contains (no writes)."""
    report_settings.validate()
    runs = list(runs)
    if not runs:
        raise ServiceError("give at least one run")
    if baseline is not None and baseline not in runs:
        runs.append(baseline)
    collections = {run.collection_id for run in runs} | ({background.collection_id} if background else set())
    if len(collections) != 1:
        raise ServiceError("all runs of a report (and its background run) must rank the same collection")
    words = wordlist or default_wordlist()
    representative = representative or default_representative_wordlist()
    cutoffs = core.validate_cutoffs(report_settings.cutoffs)
    depth = max(cutoffs)
    qids = pl.Series("qid", list(query_set.queries.values_list("qid", flat=True)), dtype=pl.String).to_frame()

    frames = {}
    for run in runs:
        frame = run_frame(run).filter(pl.col("rank") <= depth).join(qids, on="qid", how="semi")
        if not len(frame):
            raise ServiceError(f"run {run.name!r} contains none of the queries of {query_set.name!r}")
        frames[run.name] = frame
    background_frame = None
    if background is not None:
        background_frame = run_frame(background).filter(pl.col("rank") <= core.BACKGROUND_DEPTH)
        background_frame = background_frame.join(qids, on="qid", how="semi")
    docs = [frame["docid"] for frame in frames.values()]
    if background_frame is not None:
        docs.append(background_frame["docid"])
    docids = pl.concat(docs).unique()
    collection = runs[0].collection
    counts = document_counts_for(collection, docids, words, report_settings.tokenizer, job=job, bar=bar)
    representative_counts = document_counts_for(
        collection, docids, representative, report_settings.tokenizer, job=job, bar=bar
    )
    parts = []
    for name, frame in frames.items():
        values = core.evaluate_run(
            frame,
            counts,
            representative_counts,
            cutoffs,
            threshold=report_settings.threshold,
            background=background_frame,
            background_name=background.name if background else COLLECTION_BACKGROUND,
        )
        values.insert(0, "run", name)
        parts.append(values)
    per_query = pd.concat(parts, ignore_index=True)
    summary = significance.summarise(
        per_query,
        baseline=baseline.name if baseline else None,
        samples=report_settings.bootstrap_samples,
        seed=report_settings.seed,
    )
    return Computed(per_query, order_summary(summary), runs)


def order_summary(summary: pd.DataFrame) -> pd.DataFrame:
    """Rows in the order of the paper's tables: run, then metric (RaB, ARaB, NFaiRR, TExFAIR), variant, cutoff."""
    if not len(summary):
        return summary
    runs = list(dict.fromkeys(summary["run"]))
    order = summary.assign(
        _run=summary["run"].map(runs.index),
        _metric=summary["metric"].map(core.METRICS.index),
        _variant=summary["variant"].map(lambda v: (-1, "") if v in ("tf", "rbdf") else (0, v)),
    )
    order = order.sort_values(["_run", "_metric", "_variant", "cutoff"], kind="stable")
    return order.drop(columns=["_run", "_metric", "_variant"]).reset_index(drop=True)


def build_report(
    name: str,
    query_set: QuerySet,
    runs: Sequence[Run],
    report_settings: ReportSettings = ReportSettings(),
    *,
    wordlist: Words | None = None,
    representative: Words | None = None,
    background: Run | None = None,
    baseline: Run | None = None,
    job: Job | None = None,
    bar: bool = True,
) -> Report:
    """Compute and store a report named ``name`` (results, per-query file, provenance)."""
    validate_name(name, "report")
    if Report.objects.filter(name=name).exists():
        raise ServiceError(f"a report named {name!r} already exists; choose another --name")
    words = wordlist or default_wordlist()
    representative = representative or default_representative_wordlist()
    computed = compute_report(
        query_set,
        runs,
        report_settings,
        wordlist=words,
        representative=representative,
        background=background,
        baseline=baseline,
        job=job,
        bar=bar,
    )
    path = cache_dir("reports") / f"{name}-{uuid.uuid4().hex[:12]}.parquet"
    write_parquet_atomic(pl.from_pandas(computed.per_query[PER_QUERY_COLUMNS]), path)
    by_name = {run.name: run for run in computed.runs}
    try:
        with transaction.atomic():
            report = Report.objects.create(
                name=name,
                query_set=query_set,
                run_order=[run.name for run in computed.runs],
                wordlist=register_wordlist(words),
                representative_wordlist=register_wordlist(representative),
                tokenizer=report_settings.tokenizer,
                cutoffs=core.validate_cutoffs(report_settings.cutoffs),
                threshold=report_settings.threshold,
                background_run=background,
                baseline=baseline,
                bootstrap_samples=report_settings.bootstrap_samples,
                seed=report_settings.seed,
                software_version=software_version(),
                per_query=str(path),
            )
            report.runs.set(computed.runs)
            Result.objects.bulk_create(
                [
                    Result(
                        report=report,
                        run=by_name[row.run],
                        metric=row.metric,
                        variant=row.variant,
                        cutoff=row.cutoff,
                        value=_finite(row.value),
                        queries=row.queries,
                        ci_low=_finite(row.ci_low),
                        ci_high=_finite(row.ci_high),
                        p_value=_finite(row.p_value),
                    )
                    for row in computed.summary.itertuples(index=False)
                ],
                batch_size=2000,
            )
    except BaseException:
        path.unlink(missing_ok=True)
        raise
    return report


def _finite(value) -> float | None:
    if value is None or pd.isna(value):
        return None
    return float(value)


# --- reading reports back -------------------------------------------------------------------


def start_report(
    name: str,
    query_set: QuerySet,
    runs: Sequence[Run],
    report_settings: ReportSettings,
    *,
    background: Run | None = None,
    baseline: Run | None = None,
) -> Job:
    """Build a report as a Celery task once the caller's transaction commits; returns its Job."""
    from .tasks import build_report_task

    return start_job(
        build_report_task,
        "report",
        f"Report {name}",
        name,
        query_set.pk,
        [run.pk for run in runs],
        asdict(report_settings),
        background.pk if background else None,
        baseline.pk if baseline else None,
    )


def report_summary(report: Report) -> pd.DataFrame:
    """The report's results as a frame (``run, metric, variant, cutoff, value, queries, ci_low, ci_high, p_value``)."""
    rows = report.results.select_related("run").values_list(
        "run__name", "metric", "variant", "cutoff", "value", "queries", "ci_low", "ci_high", "p_value"
    )
    frame = pd.DataFrame(
        list(rows), columns=["run", "metric", "variant", "cutoff", "value", "queries", "ci_low", "ci_high", "p_value"]
    )
    return order_summary(frame)


def report_per_query(report: Report) -> pd.DataFrame:
    """Per-query values (``run, qid, metric, variant, cutoff, value``); ServiceError if the file is gone."""
    path = Path(report.per_query)
    if not path.exists():
        raise ServiceError(f"the per-query file of report {report.name!r} is missing ({path}); build the report again")
    return pl.read_parquet(path).to_pandas()


def results_csv(summary: pd.DataFrame) -> str:
    """CSV with the header ``run,metric,variant,cutoff,value,queries`` (values in full precision)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_HEADER)
    for row in summary.itertuples(index=False):
        value = "" if row.value is None or pd.isna(row.value) else repr(float(row.value))
        writer.writerow([row.run, row.metric, row.variant, int(row.cutoff), value, int(row.queries)])
    return out.getvalue()


def per_query_csv(per_query: pd.DataFrame) -> str:
    out = io.StringIO()
    per_query[PER_QUERY_COLUMNS].to_csv(out, index=False, lineterminator="\n")
    return out.getvalue()


def columns_of(summary: pd.DataFrame) -> list[tuple[str, str, int]]:
    """(metric, variant, cutoff) columns of a results table, in the paper's order."""
    return list(dict.fromkeys(zip(summary["metric"], summary["variant"], summary["cutoff"], strict=True)))


def terminal_table(summary: pd.DataFrame, alpha: float = 0.05) -> str:
    """A plain-text table like Table 3 of the SIGIR 2020 paper: one block per metric and variant,
    rows = runs, columns = cutoffs; ``*`` marks p < alpha against the baseline (Bonferroni)."""
    if not len(summary):
        return "(no results)"
    runs = list(dict.fromkeys(summary["run"]))
    width = max(12, *(len(r) for r in runs)) + 2
    lookup = {(r.run, r.metric, r.variant, r.cutoff): r for r in summary.itertuples(index=False)}
    blocks = []
    groups = list(dict.fromkeys((m, v) for m, v, _ in columns_of(summary)))
    for metric, variant in groups:
        cutoffs = sorted({c for m, v, c in columns_of(summary) if (m, v) == (metric, variant)})
        title = f"{metric} [{variant}]"
        header = f"{title:<{width}}" + "".join(f"{'@' + str(c):>11}" for c in cutoffs) + f"{'queries':>9}"
        lines = [header, "-" * len(header)]
        for run in runs:
            cells = []
            queries = ""
            for c in cutoffs:
                row = lookup.get((run, metric, variant, c))
                if row is None or row.value is None or pd.isna(row.value):
                    cells.append(f"{'–':>11}")
                    continue
                mark = "*" if row.p_value is not None and not pd.isna(row.p_value) and row.p_value < alpha else " "
                cells.append(f"{row.value:>10.4f}{mark}")
                queries = str(row.queries)
            lines.append(f"{run:<{width}}" + "".join(cells) + f"{queries:>9}")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def default_report_name(query_set: QuerySet, run_names: Sequence[str]) -> str:
    """``<query set>-<runs>`` (shortened), with ``-2``, ``-3``… if taken."""
    from django.utils.text import slugify

    base = slugify(f"{query_set.name}-{'-'.join(run_names)}")[:80].strip("-") or "report"
    name, i = base, 1
    while Report.objects.filter(name=name).exists():
        i += 1
        name = f"{base}-{i}"
    return name
