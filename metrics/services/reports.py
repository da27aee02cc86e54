"""Bias reports: computing them, storing them (:mod:`.report_store`), and starting them as jobs.

Heavy work happens before the transaction opens. Every figure is the library's one pipeline's
(:func:`genderbias.ranking.measures.evaluate`): this module reads the rows it takes (:func:`_read`) and stores what
it returns; label sensitivity subsets :func:`per_query_values`, its per-query half, rather than computing its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from typing import TYPE_CHECKING, Unpack

from django.urls import reverse

from annotation import selectors
from annotation.services import reading_answers
from core.errors import ServiceError
from core.jobs import background_job
from core.models import Job
from core.options import CUTOFFS_OPTION
from core.progress import Progress
from core.services.names import validate_name
from genderbias.presets import PRESETS
from genderbias.ranking import effectiveness
from genderbias.ranking.defaults import DEFAULT_CUTOFFS
from genderbias.ranking.effectiveness import DEFAULT_MEASURES
from genderbias.text.wordlists import (
    GenderWords,
    default_representative_wordlist,
    default_wordlist,
)
from pooling import services as pooling_services
from pooling.analysis import check_same_collection
from pooling.models import Qrels, QuerySet, Run
from pooling.services import document_counts_for, qrels_frame, run_frame, top_rankings

from ..models import COLLECTION_BACKGROUND, Report
from .report_settings import DEFAULT_REPORT_SETTINGS, ReportInputs, ReportSettings, parse_measures
from .report_store import Computed, check_free_name, store_report

if TYPE_CHECKING:
    import pandas as pd


def compute_report(
    query_set: QuerySet,
    runs: Sequence[Run],
    report_settings: ReportSettings = DEFAULT_REPORT_SETTINGS,
    **inputs: Unpack[ReportInputs],
) -> Computed:
    """Every metric of every run over the queries of ``query_set`` it contains (no writes)."""
    qids = list(query_set.queries.values_list("qid", flat=True))
    return _compute(qids, repr(query_set.name), runs, report_settings, inputs)


def compute_batch_report(
    batch,
    runs: Sequence[Run],
    report_settings: ReportSettings = DEFAULT_REPORT_SETTINGS,
    **inputs: Unpack[ReportInputs],
) -> Computed:
    """Every metric of every run on ``batch``'s non-gendered queries, with the labels' uncertainty (no writes).

    The values are means over the point-estimate set (final label non-gendered: what the export writes); the
    per-query values cover every judged query, whose label probabilities estimate the class means. With the batch's
    expert audit sample the label-corrected figures are PPI++ ones (:mod:`genderbias.crowd.figure_intervals`).
    """
    labels = selectors.label_probabilities(batch)
    members = labels.non_gendered
    if not members:
        raise ServiceError(f"no query of batch {batch.name!r} is labelled non-gendered yet")
    judged = [q for q in labels.texts if q in labels.table.index or q in set(members)]
    audit = selectors.audit_labels(batch)
    return _compute(
        judged, f"the queries of batch {batch.name!r}", runs, report_settings, inputs, labels=labels, audit=audit
    )


def _compute(
    qids: list[str],
    source: str,
    runs: Sequence[Run],
    report_settings: ReportSettings,
    inputs: ReportInputs,
    *,
    labels=None,
    audit: dict[str, str] | None = None,
) -> Computed:
    """The rows :func:`_read` reads, computed by the library's one pipeline."""
    from genderbias.ranking import measures as pipeline  # start-up

    from ..formatting import order_summary

    report_settings.validate()
    report_settings = report_settings.resolved()
    runs = list(runs)
    if not runs:
        raise ServiceError("give at least one run")
    baseline = inputs.get("baseline")
    if baseline is not None and baseline not in runs:
        runs.append(baseline)
    qrels = inputs.get("qrels")
    measures = parse_measures(report_settings.measures)
    # Refused before the bias metrics are computed, not after.
    if qrels is None and measures:
        raise ServiceError("effectiveness measures need relevance judgments: give the qrels")
    if qrels is not None:
        _check_qrels(runs, qrels)
        measures = measures or DEFAULT_MEASURES
    words, representative = _word_lists(report_settings, inputs)
    job, bar = inputs.get("job"), inputs.get("bar", True)
    depth = effectiveness.measures_depth(measures) if measures else 0
    frames, counts, settings = _read(qids, runs, report_settings, inputs.get("background"), source, job, bar, depth)
    found = pipeline.evaluate(
        frames,
        counts,
        report_settings.cutoffs,
        qids=qids,
        wordlist=words,
        representative=representative,
        qrels=qrels_frame(qrels) if qrels is not None else None,
        judged_by=qrels.name if qrels is not None else "",
        measures=measures,
        labels=labels.model if labels is not None else None,
        in_set=set(labels.non_gendered) if labels is not None else None,
        predicted={q: labels.label.get(q) for q in labels.table.index.astype(str)} if labels is not None else None,
        audit=audit,
        baseline=baseline.name if baseline else None,
        samples=report_settings.bootstrap_samples,
        progress=StepProgress(job, bar),
        **settings,
    )
    return Computed(
        found.per_query,
        order_summary(found.summary),
        runs,
        words,
        representative,
        measures,
        found.unjudged,
        found.unreturned,
        labels,
        found.tied_queries,
        counts.texts_read(),
        found.label_interval,
    )


def _read(
    qids: Sequence[str],
    runs: Sequence[Run],
    report_settings: ReportSettings,
    background: Run | None,
    source: str,
    job: Job | None = None,
    bar: bool = True,
    depth: int = 0,
) -> tuple[dict, _CountCache, dict]:
    """What the pipeline reads of the database: each run's rankings of the ``qids`` to the deepest cutoff (or the
    measures' ``depth``) with every tie group reaching it, the background's, the counts, and the settings."""
    import polars as pl

    check_same_collection([*runs, *([background] if background else [])], "a report (and its background run)")
    asked = pl.Series("qid", list(qids), dtype=pl.String)
    frames = top_rankings(
        runs, asked, max(*CUTOFFS_OPTION.check(report_settings.cutoffs), depth), source, through_ties=True
    )
    top = run_frame(background).join(asked.to_frame(), on="qid", how="semi") if background else None
    settings = {
        "tokenizer": report_settings.tokenizer,
        "threshold": report_settings.threshold,
        "normaliser": report_settings.nfairr_normaliser,
        "exposure": report_settings.exposure(),
        "ties": report_settings.ties,
        "seed": report_settings.seed,
        "background": top,
        "background_name": background.name if background else COLLECTION_BACKGROUND,
    }
    return frames, _CountCache(runs[0].collection, job, bar), settings


class _CountCache:
    """The library's counts over the collection's count cache, keeping which documents the report read."""

    def __init__(self, collection, job: Job | None, bar: bool) -> None:
        self.collection, self.job, self.bar, self.read = collection, job, bar, []

    def __call__(self, docids, wordlist: GenderWords, tokenizer: str):
        self.read.append(docids)
        return document_counts_for(self.collection, docids, wordlist, tokenizer, job=self.job, bar=self.bar)

    def texts_read(self) -> tuple[str, int] | None:
        """For a collection by reference, ``(checksum, texts)`` of the passages read; None for a file, whose
        sha256 already pins every text."""
        import polars as pl

        if not self.collection.by_reference or not self.read:
            return None
        return pooling_services.texts_checksum(self.collection, pl.concat(self.read))


class StepProgress:
    """``progress(step, done, total)`` of pure code shown as :class:`core.progress.Progress`, one per step."""

    def __init__(self, job: Job | None, bar: bool) -> None:
        self.job, self.bar, self.step, self.current = job, bar, None, None

    def __call__(self, step: str, done: int, total: int) -> None:
        if step != self.step:
            if self.current is not None:
                self.current.close()
            self.step, self.current = step, Progress(step[:1].upper() + step[1:], total, job=self.job, bar=self.bar)
        self.current.update_to(done)
        if done >= total:
            self.current.close()


def _word_lists(report_settings: ReportSettings, inputs: ReportInputs) -> tuple[GenderWords, GenderWords]:
    """RaB/ARaB's word list and NFaiRR/TExFAIR's: the given ones, else the defaults; a preset's choice wins,
    and a preset that normalises NFaiRR by a background run refuses to run without one."""
    from genderbias.presets import REPRESENTATIVE

    words = inputs.get("wordlist") or default_wordlist()
    representative = inputs.get("representative") or default_representative_wordlist()
    preset = PRESETS.get(report_settings.preset)
    if preset is not None:
        if preset.needs_background and inputs.get("background") is None:
            raise ServiceError(
                f"preset {preset.name} normalises NFaiRR by a BM25 run of the collection (the paper's "
                "background): name it as the background run"
            )
        if preset.rank_bias_words == REPRESENTATIVE:
            words = representative
    return words, representative


def _check_qrels(runs: Sequence[Run], qrels: Qrels) -> None:
    """The runs rank one collection, the one ``qrels`` judges."""
    check_same_collection(list(runs), "a report")
    if runs and qrels.collection_id != runs[0].collection_id:
        raise ServiceError(
            f"qrels {qrels.name!r} judge documents of collection {qrels.collection.name!r}, "
            f"the runs rank {runs[0].collection.name!r}"
        )


def per_query_values(
    qids: Sequence[str],
    runs: Sequence[Run],
    report_settings: ReportSettings,
    *,
    wordlist: GenderWords | None = None,
    representative: GenderWords | None = None,
    background: Run | None = None,
    job: Job | None = None,
    bar: bool = True,
    source: str = "the query set",
) -> pd.DataFrame:
    """Long frame ``run, qid, metric, variant, cutoff, value`` of every run over the ``qids`` it contains; any
    subset of it is what a report on that subset would compute (label sensitivity relies on it)."""
    from genderbias.ranking import measures  # start-up

    frames, counts, settings = _read(qids, runs, report_settings, background, source, job, bar)
    return measures.figures(
        frames, counts, report_settings.cutoffs, wordlist=wordlist, representative=representative, **settings
    )


def build_report(
    name: str,
    query_set: QuerySet,
    runs: Sequence[Run],
    report_settings: ReportSettings = DEFAULT_REPORT_SETTINGS,
    **inputs: Unpack[ReportInputs],
) -> Report:
    """Compute (:func:`compute_report`) and store a report named ``name``: results, per-query file, provenance."""
    check_free_name(name)
    computed = compute_report(query_set, runs, report_settings, **inputs)
    return store_report(name, computed, report_settings.resolved(), inputs, query_set)


def build_batch_report(
    name: str, batch, runs: Sequence[Run], report_settings: ReportSettings = DEFAULT_REPORT_SETTINGS, **inputs
) -> Report:
    """A report on ``batch``'s labels, its point-estimate set registered as the query set ``<name>-non-gendered``
    in the report's own transaction: a failure leaves neither."""
    check_free_name(name)
    validate_name(f"{name}-non-gendered", "query set")

    with reading_answers(batch, "A report on its labels"):  # a correction after it is refused (issue 53)
        computed = compute_batch_report(batch, runs, report_settings, **inputs)
        return store_report(name, computed, report_settings.resolved(), inputs | {"label_batch": batch}, None)


@background_job("report", task="metrics.tasks.build_report_task")
def report_job(
    job: Job,
    name: str,
    query_set_id: int | None,
    run_ids: list[int],
    report_settings: dict,
    background_id: int | None = None,
    baseline_id: int | None = None,
    qrels_id: int | None = None,
    batch_id: int | None = None,
) -> str:
    """Build a report in the background; a redelivery after a crash may find it committed by the one that died."""
    report = Report.objects.filter(name=name, created__gte=job.created).first() if job.redelivered else None
    if report is None:
        runs = sorted(Run.objects.filter(pk__in=run_ids), key=lambda r: run_ids.index(r.pk))
        report_settings = {
            **report_settings,
            "cutoffs": tuple(report_settings.get("cutoffs", DEFAULT_CUTOFFS)),
            "measures": tuple(report_settings.get("measures", ())),
        }
        inputs = {
            "background": Run.objects.get(pk=background_id) if background_id else None,
            "baseline": Run.objects.get(pk=baseline_id) if baseline_id else None,
            "qrels": Qrels.objects.get(pk=qrels_id) if qrels_id else None,
            "job": job,
            "bar": False,
        }
        if batch_id is not None:
            batch = selectors.batches().get(pk=batch_id)
            report = build_batch_report(name, batch, runs, ReportSettings(**report_settings), **inputs)
        else:
            query_set = QuerySet.objects.get(pk=query_set_id)
            report = build_report(name, query_set, runs, ReportSettings(**report_settings), **inputs)
    job.result = {"report": report.name, "url": reverse("metrics:report-detail", args=[report.name])}
    job.message = f"Report {report.name} built"
    return report.name


def start_report(
    name: str,
    query_set: QuerySet | None,
    runs: Sequence[Run],
    report_settings: ReportSettings,
    *,
    background: Run | None = None,
    baseline: Run | None = None,
    qrels: Qrels | None = None,
    label_batch=None,
) -> Job:
    """Build a report in the background once the caller's transaction commits (on ``label_batch``'s labels instead
    of a query set if given); returns its Job."""
    if (query_set is None) == (label_batch is None):
        raise ServiceError("give either a query set or a batch whose labels to report on")
    return report_job.start(
        f"Report {name}",
        name,
        query_set.pk if query_set else None,
        [run.pk for run in runs],
        asdict(report_settings),
        background.pk if background else None,
        baseline.pk if baseline else None,
        qrels.pk if qrels else None,
        label_batch.pk if label_batch else None,
        of=label_batch or query_set,
    )


def start_rebuild(report: Report) -> Job:
    """Build ``report`` again with today's methods and its own inputs, as a new report ``<name>-rebuilt``
    (``-rebuilt-2``…): the old one stays, described by the methods that computed it (:mod:`core.methods`)."""
    stem = f"{report.name[:88]}-rebuilt"
    name, n = stem, 1
    while Report.objects.filter(name=name).exists():
        n += 1
        name = f"{stem}-{n}"
    stored = {setting: getattr(report, setting) for setting in ReportSettings.__dataclass_fields__}
    stored |= {"cutoffs": tuple(report.cutoffs), "measures": tuple(report.measures or ())}
    order = report.run_order or []
    runs = sorted(report.runs.all(), key=lambda run: order.index(run.name) if run.name in order else len(order))
    return start_report(
        name,
        None if report.label_batch_id else report.query_set,
        runs,
        ReportSettings(**stored),
        background=report.background_run,
        baseline=report.baseline,
        qrels=report.qrels,
        label_batch=report.label_batch,
    )
