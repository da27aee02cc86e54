"""What a paper bundle states about a report's study, read from the records: the batch and its facts,
the report's settings, the crowd's recruitment and pay, the task page as annotators saw it (with a
screenshot when Chromium is there). Reads only; :mod:`publishing.services.paper` writes the files."""

from __future__ import annotations

from typing import Any

from annotation import selectors as annotation_selectors
from annotation.models import Assignment, Batch, Export, Hit
from annotation.services import render_hit_html
from core.figure_notes import figure_notes
from genderbias.presets import preset_lines
from metrics import selectors
from metrics.models import Report
from pooling.models import Collection
from pooling.selectors import named_set_facts
from publishing.checklists import instructions_text
from publishing.screenshot import screenshot

#: Metrics drawn against the cutoff and as per-query distributions (the papers' four).
FIGURE_METRICS = ("RaB", "ARaB", "NFaiRR", "TExFAIR")
#: The task page in the bundle (the checklists' D1 and item 14): the page itself, always, and its
#: screenshot when Chromium could take it.
HIT_PAGE = "hit-page.html"
HIT_SCREENSHOT = "hit-page.png"


def report_batch(report: Report):
    """The batch whose facts describe the report's queries: its own (a report on a batch's labels),
    else the batch whose export registered its query set, else None (the queries were given)."""
    if report.label_batch_id:
        return report.label_batch
    return annotation_selectors.batch_of_query_set(report.query_set)


def batch_facts(batch) -> dict[str, Any]:
    """The batch's study facts (:func:`annotation.selectors.study_facts`), stating what its crowd work actually
    cost (``batch.spent``), not the estimate recorded at its creation."""
    return annotation_selectors.study_facts(batch)


def labels_drift(report: Report, batch, facts: dict[str, Any] | None) -> str | None:
    """Why the batch's facts (read now) may not be the labels the report measured (a ruling, a late sync), or None:
    by the answers version a report on a batch's labels stores, else by the export's stored label counts."""
    if batch is None or facts is None:
        return None
    if report.label_batch_id:
        if report.answers_version and report.answers_version != annotation_selectors.answers_version(batch):
            return (
                f"The labels of batch {batch.name} changed after the report was built (a ruling or a later sync): "
                "the annotation figures describe them as they are now, while the report measured the "
                "non-gendered queries as labelled at its build."
            )
        return None

    export = Export.objects.filter(query_set=report.query_set, batch=batch).order_by("-created", "-pk").first()
    if export is None:
        return None
    then = {label: count for label, count in (export.counts or {}).items() if label != "set_aside" and count}
    now = {label: count for label, count in facts["labels"]["counts"].items() if count}
    if then == now:
        return None
    was = ", ".join(f"{facts['labels']['names'].get(label, label).lower()} {count}" for label, count in then.items())
    return (
        f"The labels of batch {batch.name} changed after its export wrote this report's {export.queries} "
        f"{export.category} queries (labels then: {was}): the annotation figures describe them as they are now."
    )


def report_settings(report: Report, summary) -> dict[str, Any]:
    """The report's settings as :func:`publishing.methods_text.methods_tex` states them."""
    said = [(row, figure_notes(row, report.figure_quality)) for row in summary.to_dict("records")]
    queries = report.query_set.queries.count()
    return {
        # What the report says of its figures (metrics.formatting.figure_notes), as Limitations states it.
        "tie_moved": sum(notes.tie_range is not None for _, notes in said),
        "undecided": [
            {key: row[key] for key in ("run", "metric", "variant", "cutoff", "value")}
            | {"tie_low": notes.tie_low, "tie_high": notes.tie_high}
            for row, notes in said
            if notes.sign_undecided
        ],
        "report": report.name,
        "query_set": report.query_set.name,
        "dataset_source": report.query_set.dataset_source or None,
        "named_set": named_set_facts(report.query_set),
        "queries": queries,
        "report_queries": queries,
        "runs": list(report.run_order) or sorted(report.runs.values_list("name", flat=True)),
        "metrics": list(dict.fromkeys(summary["metric"])),
        "cutoffs": list(report.cutoffs),
        "tokenizer": report.tokenizer,
        "ties": report.ties,
        "preset": report.preset,
        "preset_lines": preset_lines(report.preset) if report.preset else [],
        "tied_queries": report.tied_queries,
        "wordlist": report.wordlist.name,
        "representative_wordlist": report.representative_wordlist.name,
        "threshold": report.threshold,
        "nfairr_normalisation": report.nfairr_normalisation,
        "exposure_settings": report.exposure_settings,
        "exposure_form": report.exposure_form,
        "qrels": report.qrels.name if report.qrels_id else None,
        "measures": list(report.measures or []),
        "unjudged": len(report.unjudged or []),
        # Built before a judged query a run did not return counted as 0 (``Report.unreturned`` null).
        "unreturned_left_out": report.qrels_id is not None and report.unreturned is None,
        "bootstrap_samples": report.bootstrap_samples,
        "seed": report.seed,
        "policy": selectors.report_policy(report),
        "on_batch": report.on_batch,
        "crowd_quality": report.figure_quality,
        # Which interval its label-corrected figures got and why (genderbias.crowd.figure_intervals).
        "label_interval": report.label_interval,
        "software_version": report.software_version,
        "methods": report.methods,
        # A collection by reference: the checksum of the texts the report read (metrics.models.Report.texts_sha256).
        "texts_sha256": report.texts_sha256 or None,
        "collections": [
            {"name": c.name, "dataset_source": c.dataset_source or None}
            for c in Collection.objects.filter(runs__in=report.runs.all()).distinct().order_by("name")
        ],
        "export": export_facts(report),
    }


def export_facts(report: Report) -> dict[str, Any] | None:
    """The export that registered the report's query set (its category and size), or None: a report on
    a batch's own labels or on given queries."""
    if report.label_batch_id:
        return None
    export = Export.objects.filter(query_set=report.query_set).order_by("-created", "-pk").first()
    return {"category": export.category, "queries": export.queries} if export is not None else None


def labels_rows(summary, cutoff: int, crowd_quality: dict | None = None) -> list[dict]:
    """The rows of ``table-labels.tex``: a report on a batch's labels at ``cutoff`` for :data:`FIGURE_METRICS`, each
    with its ``crowd_warning``."""
    rows = summary[(summary["cutoff"] == cutoff) & summary["metric"].isin(FIGURE_METRICS)]
    return [row | {"crowd_warning": figure_notes(row, crowd_quality).crowd_warning} for row in rows.to_dict("records")]


def crowd_batches(batch) -> list:
    """The batches people answered the batch's tasks in: its own, or a machine-first batch's derived
    crowd batches (calibration sample, routed queries; cancelled ones left out)."""
    if annotation_selectors.is_machine_labelled(batch):  # its own tasks are never published
        return list(batch.derived.exclude(status=Batch.Status.CANCELLED).order_by("created", "pk"))
    return [batch]


def crowd_pay(batch) -> list[dict[str, Any]]:
    """Each crowd batch's recruitment and pay from its provider's records (``CrowdProvider.pay_figures``), for the
    checklists (D2, 14); in-house, the tasks submitted only (the platform pays no one)."""
    rows = []
    for part in crowd_batches(batch):
        done = Assignment.objects.filter(
            hit__batch=part, status__in=[Assignment.Status.SUBMITTED, Assignment.Status.APPROVED]
        )
        row: dict[str, Any] = {
            "batch": part.name,
            "provider": part.provider,
            "reward": str(part.reward),
            "per_task": part.queries_per_hit,
            "tasks": done.count(),
            "median_seconds": None,
            "median_hourly_rate": None,
            "rate_source": "",
            "estimated_minutes": None,
        }
        row |= annotation_selectors.pay_figures(part, done)
        rows.append(row)
    return rows


def task_page(batch, screenshots: bool) -> tuple[dict[str, Any] | None, dict[str, bytes]]:
    """The task page of the batch's first task (the real template, preview mode), what the checklists say of it,
    and its files (:data:`HIT_SCREENSHOT` when ``screenshots`` and Chromium could take it); (None, {}) without one."""
    hit = (
        Hit.objects.filter(batch__in=crowd_batches(batch))
        .select_related("batch")
        .order_by("batch__created", "batch_id", "position")
        .first()
    )
    if hit is None:
        return None, {}
    html = render_hit_html(hit, mode="preview", action="")
    page: dict[str, Any] = {
        "title": hit.batch.title,
        "description": hit.batch.description,
        "instructions": instructions_text(html),
        "html": HIT_PAGE,
    }
    files = {HIT_PAGE: html.encode("utf-8")}
    png, why = (
        screenshot(html)
        if screenshots
        else (None, "screenshots were off for this build (PAPER_SCREENSHOTS), so the page was not photographed")
    )
    if png:
        files[HIT_SCREENSHOT] = png
        page["screenshot"] = HIT_SCREENSHOT
    else:
        page["note"] = why
    return page, files
