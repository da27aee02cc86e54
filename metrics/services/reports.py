"""Bias reports: their settings, computing them, storing them, and starting them as jobs.

Heavy work (reading runs, counting words, computing metrics, bootstrapping) happens before
the transaction opens; the report and its result rows are written in one transaction, and
the per-query Parquet file is written atomically before it, so a failure leaves no report.
Every figure is the library's one pipeline's (:func:`genderbias.ranking.measures.evaluate`, what
``genderbias.calc_aggregate`` reads too): this module reads the rows it takes (:func:`_read`: the runs'
top rankings, the background's, counts from :func:`pooling.services.document_counts_for`) and stores
what it returns. :func:`per_query_values` is its per-query half: label sensitivity (:mod:`.labelling`)
subsets it rather than computing its own.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, TypedDict, Unpack

from django.db import transaction
from django.urls import reverse

from annotation import selectors
from annotation.services import reading_answers
from core import methods
from core.errors import FieldError, ServiceError
from core.jobs import background_job
from core.models import Job
from core.options import (
    AWRF_P_OPTION,
    AWRF_WEIGHTS_OPTION,
    BOOTSTRAP_OPTION,
    CUT_STEP_OPTION,
    CUTOFFS_OPTION,
    EXPOSURE_FORM_OPTION,
    EXPOSURE_TARGET_OPTION,
    NORMALISER_OPTION,
    PROTECTED_OPTION,
    REPORT_OPTIONS,
    SEED_OPTION,
    THRESHOLD_OPTION,
    TIES_OPTION,
    TOKENIZER_OPTION,
    ReportOption,
)
from core.progress import Progress
from core.services.names import validate_name
from core.services.storage import cache_dir
from core.version import software_version
from genderbias.files.atomic import write_parquet_atomic
from genderbias.presets import PRESETS
from genderbias.ranking import effectiveness
from genderbias.ranking.defaults import (
    DEFAULT_CUTOFFS,
    LABEL_UNCERTAINTY_COLUMNS,
    OptionError,
)
from genderbias.ranking.effectiveness import DEFAULT_MEASURES
from genderbias.ranking.effectiveness import parse_measures as parse
from genderbias.text.wordlists import (
    GenderWords,
    default_representative_wordlist,
    default_wordlist,
)
from pooling import services as pooling_services
from pooling.analysis import check_same_collection
from pooling.models import Qrels, QuerySet, Run
from pooling.services import document_counts_for, qrels_frame, register_wordlist, run_frame, top_rankings

from ..models import COLLECTION_BACKGROUND, Report, Result

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True)
class ReportSettings:
    """A report's settings; each one's default and rule are its declaration's (:mod:`core.options`)."""

    cutoffs: tuple[int, ...] = CUTOFFS_OPTION.default
    tokenizer: str = TOKENIZER_OPTION.default
    threshold: float = THRESHOLD_OPTION.default
    bootstrap_samples: int = BOOTSTRAP_OPTION.default
    seed: int = SEED_OPTION.default
    nfairr_normaliser: str = NORMALISER_OPTION.default
    #: Effectiveness measures (ir_measures names, ``RR@10``…), computed against the report's qrels.
    measures: tuple[str, ...] = ()
    #: The exposure metrics' choices (:mod:`genderbias.ranking.exposure`): AWRF's position weights and the
    #: geometric weights' p, the target's female share, rKL/rND/rRD's protected group and cut step.
    awrf_weights: str = AWRF_WEIGHTS_OPTION.default
    awrf_p: float = AWRF_P_OPTION.default
    exposure_target: float = EXPOSURE_TARGET_OPTION.default
    protected_group: str = PROTECTED_OPTION.default
    cut_step: int = CUT_STEP_OPTION.default
    #: ``adapted`` (the platform's) or ``reference`` (the cited papers' code): :mod:`genderbias.ranking.exposure`.
    exposure_form: str = EXPOSURE_FORM_OPTION.default
    #: How tied documents are ordered for the bias metrics (:mod:`genderbias.ranking.ties`; effectiveness follows trec_eval).
    ties: str = TIES_OPTION.default
    #: A paper preset (:mod:`genderbias.presets`): its settings win over these (:meth:`resolved`); "" for none.
    preset: str = ""

    def resolved(self) -> ReportSettings:
        """These settings with the preset's applied (the values a report is computed and stored with)."""
        from dataclasses import replace

        if not self.preset:
            return self
        if self.preset not in PRESETS:
            raise ServiceError(f"unknown preset {self.preset!r}; choose one of {', '.join(PRESETS)}")
        return replace(self, **PRESETS[self.preset].settings)

    def exposure(self):
        """The :class:`genderbias.ranking.exposure.ExposureSettings` of these settings (τ is NFaiRR's)."""
        from genderbias.ranking.exposure import ExposureSettings

        return ExposureSettings(
            self.awrf_weights,
            self.awrf_p,
            self.exposure_target,
            self.protected_group,
            self.cut_step,
            self.threshold,
            form=self.exposure_form,
        )

    def validate(self) -> None:
        """Each setting by its declaration's one check (:meth:`genderbias.report_option.ReportOption.check`):
        a :class:`core.errors.FieldError` naming the setting; then the preset and the measures."""
        for option in REPORT_OPTIONS.values():
            if option.kind == "file":
                continue
            try:
                option.check(getattr(self, option.setting))
            except OptionError as exc:
                raise FieldError(exc.field, exc.problem) from None
        self.resolved()
        parse_measures(self.measures)


#: The settings a report takes when given none (a frozen value, safe as a default argument).
DEFAULT_REPORT_SETTINGS = ReportSettings()


class ReportInputs(TypedDict, total=False):
    """What a report may take besides its query set, runs and settings (one definition for
    :func:`compute_report` and :func:`build_report`)."""

    wordlist: GenderWords | None  #: gender-definitional words for RaB/ARaB (default: the 32+32)
    representative: GenderWords | None  #: representative words for NFaiRR/TExFAIR (default: 163+163)
    background: Run | None  #: NFaiRR's background run (default: the collection)
    baseline: Run | None  #: run the others are tested against
    qrels: Qrels | None  #: relevance judgments: adds the effectiveness measures (default RR@10, nDCG@10, R@10, P@10)
    job: Job | None  #: progress record to update
    bar: bool  #: a terminal progress bar
    label_batch: object | None  #: annotation batch: a report on its labels (:func:`build_batch_report`)


@dataclass
class Computed:
    """What a report computes, before anything is stored: values and the inputs they came from."""

    per_query: pd.DataFrame
    summary: pd.DataFrame
    runs: list[Run] = field(default_factory=list)
    wordlist: GenderWords | None = None
    representative: GenderWords | None = None
    #: Effectiveness measures computed (empty without qrels) and the query-set queries the qrels do not judge.
    measures: tuple[str, ...] = ()
    unjudged: list[str] = field(default_factory=list)
    #: Per run, the judged queries it does not return (each counts as 0 in its effectiveness).
    unreturned: dict[str, list[str]] = field(default_factory=dict)
    #: A report on a batch's labels: every judged query's label probabilities
    #: (:class:`annotation.selectors.LabelProbabilities`); ``per_query`` then covers every judged query.
    labels: object | None = None
    #: Per run, per cutoff: how many of its queries' top k hold a tied document (:func:`genderbias.ranking.ties.tie_summary`).
    tied_queries: dict[str, dict[str, int]] = field(default_factory=dict)
    #: A collection by reference: the checksum of the texts read and how many (:meth:`_CountCache.texts_read`).
    texts_read: tuple[str, int] | None = None
    #: A report on a batch's labels: which interval its label-corrected figures got and why
    #: (:func:`genderbias.crowd.figure_intervals.interval_choice`).
    label_interval: dict | None = None


def parse_cutoffs(text: str, option: ReportOption = CUTOFFS_OPTION) -> tuple[int, ...]:
    """``"5,10,20"`` → ``(5, 10, 20)`` by the cutoffs' declaration (:data:`core.options.CUTOFFS_OPTION`:
    whole numbers within its bounds, at most its number of them; empty: its default), or a
    :class:`core.errors.FieldError` naming ``cutoffs``."""
    try:
        return tuple(option.parse(text))
    except OptionError as exc:
        raise FieldError(exc.field, exc.problem) from None


def parse_measures(measures: str | Sequence[str]) -> tuple[str, ...]:
    """``"MRR@10,nDCG@10"`` → ``("RR@10", "nDCG@10")`` (ir_measures names), or ServiceError naming the bad one."""

    try:
        return parse(measures)
    except ValueError as exc:
        raise ServiceError(str(exc)) from None


def compute_report(
    query_set: QuerySet,
    runs: Sequence[Run],
    report_settings: ReportSettings = ReportSettings(),
    **inputs: Unpack[ReportInputs],
) -> Computed:
    """Every metric of every run over the queries of ``query_set`` it contains (no writes)."""
    qids = list(query_set.queries.values_list("qid", flat=True))
    return _compute(qids, repr(query_set.name), runs, report_settings, inputs)


def compute_batch_report(
    batch, runs: Sequence[Run], report_settings: ReportSettings = ReportSettings(), **inputs: Unpack[ReportInputs]
) -> Computed:
    """Every metric of every run on ``batch``'s non-gendered queries, with the labels' uncertainty.

    The values are the means over the point-estimate set (the queries whose final label is
    non-gendered: what the export writes); the per-query values cover every judged query, so
    that :func:`genderbias.crowd.label_uncertainty.combined_summary` can estimate the class means from
    every query's label probabilities (no writes). With the batch's expert audit sample
    (:func:`annotation.selectors.audit_labels`) the label-corrected figures are its PPI++ ones, without one the
    crowd model's unless the shared-errors check fires (:func:`genderbias.crowd.figure_intervals.choose_intervals`).
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
    """The rows a report reads (:func:`_read`), computed by the library's one pipeline
    (:func:`genderbias.ranking.measures.evaluate`)."""
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
        progress=_StepProgress(job, bar),
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
    """What the library's pipeline reads of the database: each run's rankings of the ``qids`` to the
    deepest cutoff (or ``depth``, the effectiveness measures', if deeper) with every tie group reaching it,
    the background run's, the counts over the collection's count cache, and the settings as the library's
    keywords."""
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
    """The library's counts (:class:`genderbias.ranking.measures.Counts`) over the collection's count cache
    (:func:`pooling.services.document_counts_for`), keeping which documents the report read."""

    def __init__(self, collection, job: Job | None, bar: bool) -> None:
        self.collection, self.job, self.bar, self.read = collection, job, bar, []

    def __call__(self, docids, wordlist: GenderWords, tokenizer: str):
        self.read.append(docids)
        return document_counts_for(self.collection, docids, wordlist, tokenizer, job=self.job, bar=self.bar)

    def texts_read(self) -> tuple[str, int] | None:
        """For a collection by reference, ``(checksum, texts)`` of the passages read, from the digests kept
        when they were read (:func:`pooling.services.texts_checksum`); None for a file, whose sha256
        already pins every text."""
        import polars as pl

        if not self.collection.by_reference or not self.read:
            return None
        return pooling_services.texts_checksum(self.collection, pl.concat(self.read))


class _StepProgress:
    """``progress(step, done, total)`` of pure code (:func:`genderbias.crowd.label_uncertainty.combined_summary`)
    shown as :class:`core.progress.Progress`: a bar on a terminal and the Job's step, one per step."""

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
    from genderbias.presets import PRESETS, REPRESENTATIVE

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
    """Long frame ``run, qid, metric, variant, cutoff, value`` of every run over the ``qids`` it contains:
    the library's bias figures (:func:`genderbias.ranking.measures.figures`) of the rows :func:`_read` reads.
    Any subset of it is what a report on that subset would compute (label sensitivity relies on it)."""
    from genderbias.ranking import measures  # start-up

    frames, counts, settings = _read(qids, runs, report_settings, background, source, job, bar)
    return measures.figures(
        frames, counts, report_settings.cutoffs, wordlist=wordlist, representative=representative, **settings
    )


def build_report(
    name: str,
    query_set: QuerySet,
    runs: Sequence[Run],
    report_settings: ReportSettings = ReportSettings(),
    **inputs: Unpack[ReportInputs],
) -> Report:
    """Compute (:func:`compute_report`) and store a report named ``name``: results, per-query file, provenance."""
    _check_free(name)
    computed = compute_report(query_set, runs, report_settings, **inputs)
    return _store(name, computed, report_settings.resolved(), inputs, query_set)


def build_batch_report(
    name: str, batch, runs: Sequence[Run], report_settings: ReportSettings = ReportSettings(), **inputs
) -> Report:
    """A report on ``batch``'s labels (:func:`compute_batch_report`), stored with its query set.

    The point-estimate set is registered as a query set named ``<name>-non-gendered`` (origin
    "annotation") in the report's own transaction: a failure leaves neither.
    """
    _check_free(name)
    validate_name(f"{name}-non-gendered", "query set")

    with reading_answers(batch, "A report on its labels"):  # a correction after it is refused (issue 53)
        computed = compute_batch_report(batch, runs, report_settings, **inputs)
        return _store(name, computed, report_settings.resolved(), inputs | {"label_batch": batch}, None)


def _check_free(name: str) -> None:
    validate_name(name, "report")
    if Report.objects.filter(name=name).exists():
        raise ServiceError(f"a report named {name!r} already exists; choose another name")


def _labels_frame(labels, members: set[str]):
    import polars as pl

    table = labels.table
    return pl.DataFrame(
        {
            "qid": list(table.index),
            **{label: table[label].to_numpy() for label in table.columns},
            "source": [labels.source.get(q) for q in table.index],
            "label": [labels.label.get(q) for q in table.index],
            "in_set": [q in members for q in table.index],
        }
    )


def _store(
    name: str, computed: Computed, report_settings: ReportSettings, inputs: ReportInputs, query_set: QuerySet | None
) -> Report:
    import polars as pl

    from genderbias.ranking.ranked_counts import validate_cutoffs

    background, baseline, qrels = inputs.get("background"), inputs.get("baseline"), inputs.get("qrels")
    batch, labels = inputs.get("label_batch"), computed.labels
    stem = cache_dir("reports") / f"{name}-{uuid.uuid4().hex[:12]}"
    path, labels_path = stem.with_suffix(".parquet"), stem.with_name(stem.name + "-labels.parquet")
    from genderbias.ranking.ties import TIE_COLUMNS

    from ..formatting import PER_QUERY_COLUMNS

    stored = computed.per_query.reindex(columns=PER_QUERY_COLUMNS + TIE_COLUMNS)
    stored["tied"] = stored["tied"].fillna(False).astype(bool)
    write_parquet_atomic(pl.from_pandas(stored), path)
    if labels is not None:
        write_parquet_atomic(_labels_frame(labels, set(labels.non_gendered)), labels_path)
    by_name = {run.name: run for run in computed.runs}
    try:
        with transaction.atomic():
            if query_set is None:
                query_set = pooling_services.create_query_set(
                    f"{name}-non-gendered",
                    [(q, labels.texts[q]) for q in labels.non_gendered],
                    origin=QuerySet.Origin.ANNOTATION,
                    description=f"non-gendered queries of annotation batch {batch.name} (report {name})",
                )
            report = Report.objects.create(
                name=name,
                query_set=query_set,
                run_order=[run.name for run in computed.runs],
                wordlist=register_wordlist(computed.wordlist),
                representative_wordlist=register_wordlist(computed.representative),
                tokenizer=report_settings.tokenizer,
                cutoffs=validate_cutoffs(report_settings.cutoffs),
                threshold=report_settings.threshold,
                background_run=background,
                nfairr_normaliser=report_settings.nfairr_normaliser,
                awrf_weights=report_settings.awrf_weights,
                awrf_p=report_settings.awrf_p,
                exposure_target=report_settings.exposure_target,
                protected_group=report_settings.protected_group,
                cut_step=report_settings.cut_step,
                exposure_form=report_settings.exposure_form,
                ties=report_settings.ties,
                preset=report_settings.preset,
                tied_queries=computed.tied_queries,
                baseline=baseline,
                qrels=qrels,
                measures=list(computed.measures),
                unjudged=computed.unjudged,
                unreturned=computed.unreturned,
                bootstrap_samples=report_settings.bootstrap_samples,
                seed=report_settings.seed,
                software_version=software_version(),
                methods=methods.current(),
                texts_sha256=computed.texts_read[0] if computed.texts_read else "",
                texts_read=computed.texts_read[1] if computed.texts_read else None,
                per_query=str(path),
                label_batch=batch,
                labels_file=str(labels_path) if labels is not None else "",
                answers_version=labels.version if labels is not None else "",
                labels_calibrated=labels.calibrated
                if labels is not None and "machine-accepted" in labels.source.values()
                else None,
                crowd_quality=labels.quality if labels is not None else None,
                label_interval=computed.label_interval,
            )
            report.runs.set(computed.runs)
            Result.objects.bulk_create(
                [_result(report, by_name, row) for row in computed.summary.to_dict("records")], batch_size=2000
            )
    except BaseException:
        path.unlink(missing_ok=True)
        labels_path.unlink(missing_ok=True)
        raise
    return report


def _result(report: Report, by_name: dict[str, Run], row: dict) -> Result:
    return Result(
        report=report,
        run=by_name[row["run"]],
        metric=row["metric"],
        variant=row["variant"],
        cutoff=row["cutoff"],
        value=_finite(row["value"]),
        queries=row["queries"],
        ci_low=_finite(row["ci_low"]),
        ci_high=_finite(row["ci_high"]),
        p_value=_finite(row["p_value"]),
        tie_low=_finite(row.get("tie_low")),
        tie_high=_finite(row.get("tie_high")),
        **{field: _finite(row.get(field)) for field in LABEL_UNCERTAINTY_COLUMNS},
    )


def _finite(value) -> float | None:
    import pandas as pd

    if value is None or pd.isna(value):
        return None
    return float(value)


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
    """Build a report in the background (on a query set, or on a batch's labels with ``batch_id``);
    a redelivery after a crash may find it committed by the delivery that died."""
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
    """Build a report in the background once the caller's transaction commits; returns its Job.

    With ``label_batch`` (and no query set) it is a report on that batch's labels (:func:`build_batch_report`).
    """
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
    """Build ``report`` again with today's methods and its own settings, queries (or batch), runs,
    background, baseline and judgments, as a new report ``<name>-rebuilt`` (``-rebuilt-2``…): the old
    one stays, described by the methods that computed it (:mod:`core.methods`)."""
    stem = f"{report.name[:88]}-rebuilt"
    name, n = stem, 1
    while Report.objects.filter(name=name).exists():
        n += 1
        name = f"{stem}-{n}"
    report_settings = ReportSettings(
        cutoffs=tuple(report.cutoffs),
        tokenizer=report.tokenizer,
        threshold=report.threshold,
        bootstrap_samples=report.bootstrap_samples,
        seed=report.seed,
        nfairr_normaliser=report.nfairr_normaliser,
        measures=tuple(report.measures or ()),
        awrf_weights=report.awrf_weights,
        awrf_p=report.awrf_p,
        exposure_target=report.exposure_target,
        protected_group=report.protected_group,
        cut_step=report.cut_step,
        exposure_form=report.exposure_form,
        ties=report.ties,
        preset=report.preset,
    )
    runs = sorted(
        report.runs.all(),
        key=lambda run: (
            (report.run_order or []).index(run.name)
            if run.name in (report.run_order or [])
            else len(report.run_order or [])
        ),
    )
    return start_report(
        name,
        None if report.label_batch_id else report.query_set,
        runs,
        report_settings,
        background=report.background_run,
        baseline=report.baseline,
        qrels=report.qrels,
        label_batch=report.label_batch,
    )
