"""A report's paper bundle: the LaTeX a researcher drops into a paper, written in one go for one template
(:data:`publishing.latex.TEMPLATES`; its files: docs/metrics.md, "The paper bundle").

Reads only: :func:`write_paper_bundle` writes a folder, :func:`paper_zip` the same files zipped. The page and the
API never build in the request (a large report's bundle takes seconds): a job builds the zip once and keeps it
beside the report's cached plots (:func:`start_paper_bundle`), and every download serves that file.
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import tempfile
from pathlib import Path

from annotation import selectors as annotation_selectors
from annotation.services import reading_answers
from core.errors import ServiceError, StateError
from core.figure_notes import SIGN_WARNING, figure_notes
from core.jobs import background_job
from core.models import Job
from core.version import software_version
from genderbias.files.atomic import replace_folder
from genderbias.ranking.defaults import TABLE_LAYOUTS
from metrics import selectors
from metrics.models import Report
from metrics.services import cached_plot, plot_key, plot_path
from publishing.bibliography import bibtex, cited_keys
from publishing.bundle_readme import README, readme_files
from publishing.checklists import checklist_items, checklist_markdown
from publishing.latex import DEFAULT_TEMPLATE, checklist_tex, document, figure_tex
from publishing.latex import template as latex_template
from publishing.latex_tables import table_label, table_tex, uncertainty_tex
from publishing.methods_text import default_title, limitations_tex, methods_tex
from publishing.screenshot import chromium_path
from publishing.services.records import (
    FIGURE_METRICS,
    HIT_PAGE,
    batch_facts,
    crowd_pay,
    labels_drift,
    labels_rows,
    report_batch,
    report_settings,
    task_page,
)
from publishing.zenodo.metadata import related, zenodo_metadata

#: Marks a folder as a bundle (JSON: the report's name and the bundle's files), so writing again
#: may replace it, and only if it holds nothing else but :data:`BUILD_OUTPUTS`.
MARKER = ".paper-bundle"
#: What compiling a bundle adds beside its files (pdflatex, bibtex): replacing the bundle drops them.
BUILD_OUTPUTS = frozenset({".aux", ".log", ".bbl", ".blg", ".pdf", ".out"})
#: Where a zip's entries are dated (the bundle of one report is the same bytes each time).
ZIP_DATE = (2020, 1, 1, 0, 0, 0)


def _cutoffs_caption(bias) -> str:
    """The cutoff figure's caption by what it draws: bands need two cutoffs and the intervals."""
    cutoffs = sorted(set(bias["cutoff"]))
    bands = bias[["ci_low", "ci_high"]].astype(float).notna().all(axis=None)
    said = [figure_notes(row) for row in bias.to_dict("records")]
    ties = ""
    if any(notes.tie_range is not None for notes in said):
        ties = " Dotted beside a point: its range over the orders of tied documents"
        undecided = sum(notes.sign_undecided for notes in said)
        ties += (
            f"; a hollow circle on 0 where that range holds 0 ({undecided} figure{'s' if undecided != 1 else ''}): "
            f"{SIGN_WARNING}."
            if undecided
            else "."
        )
    if len(cutoffs) == 1:
        return (
            f"Bias of each run at cutoff {cutoffs[0]}, one point per run and metric (one cutoff: no band is drawn)."
            + ties
        )
    return (
        "Bias of each run against the cutoff"
        + (", with bootstrap 95% confidence intervals as bands." if bands else ".")
        + ties
    )


def _figures(report: Report, summary, per_query, cutoff: int) -> list[tuple[str, bytes, str, str]]:
    """(kind, PDF, caption, description) of each figure the report can draw; a figure taller than the text block
    is drawn in parts, ``cutoffs``, ``cutoffs-2``…, each a figure of its own."""
    from metrics import figure_descriptions, plots

    figures = []

    def parted(kind, all_panels, row, fixed, draw, caption, describe):
        parts = plots.paper_parts(len(all_panels), row, fixed)
        for number_, indices in enumerate(parts):
            only = [all_panels[i] for i in indices]
            shown = caption if len(parts) == 1 else f"{caption} (part {number_ + 1} of {len(parts)})"
            name = kind if number_ == 0 else f"{kind}-{number_ + 1}"
            figures.append((name, draw(only), shown, describe(only)))

    bias = summary[summary["metric"].isin(FIGURE_METRICS)]
    if len(bias):
        runs = len(set(bias["run"]))
        parted(
            "cutoffs",
            plots.panels(bias),
            plots.CUTOFF_ROW,
            plots.cutoff_fixed(runs),
            lambda only: plots.cutoff_figure(bias, format="pdf", only=only),
            _cutoffs_caption(bias),
            lambda only: figure_descriptions.cutoff_description(bias, only),
        )
    spread = per_query[per_query["metric"].isin(FIGURE_METRICS)]
    if len(spread) and cutoff in set(spread["cutoff"]):
        runs = spread["run"].nunique()
        parted(
            "distribution",
            plots.panels(spread[spread["cutoff"] == cutoff]),
            plots.distribution_row(runs),
            0.0,
            lambda only: plots.distribution_figure(spread, cutoff, format="pdf", only=only),
            f"Per-query values at cutoff {cutoff}: a box plot per run (triangles: means).",
            lambda only: figure_descriptions.distribution_description(spread, cutoff, only),
        )
    axes = selectors.tradeoff_axes(summary)  # the report page's default axes
    if axes is not None:
        x, y = axes["x"], axes["y"]
        figures.append(
            (
                "tradeoff",
                plots.tradeoff_figure(summary, x, y, format="pdf"),
                f"{y[0]}@{y[2]} against effectiveness ({x[0]}@{x[2]}) of each run, "
                "with bootstrap 95% confidence intervals both ways.",
                figure_descriptions.tradeoff_description(summary, x, y),
            )
        )
    return figures


def paper_files(
    report: Report,
    title: str | None = None,
    screenshots: bool | None = None,
    dataset: str | None = None,
    template: str | None = None,
) -> dict[str, bytes]:
    """Every file of the report's bundle, by name, its batch (if any) read as a use: a correction after it is
    refused. ServiceError if the report's files are gone. ``title``: the document's (default: what was measured on
    what); ``dataset``: the DOI or address of the dataset the paper goes with; ``template``: the class ``main.tex``
    is set in and every float laid out for (default ``article``); ``screenshots``: photograph the task page with
    headless Chromium (default: ``PAPER_SCREENSHOTS``)."""
    from contextlib import nullcontext

    from django.conf import settings as django_settings

    batch = report_batch(report)
    with reading_answers(batch, "A paper bundle") if batch is not None else nullcontext():
        venue = _template(template)
        summary = selectors.report_summary(report)
        per_query = selectors.report_per_query(report)
        tables = [
            selectors.report_table(report, layout, summary=summary, per_query=per_query) for layout in TABLE_LAYOUTS
        ]
        tables = [table for table in tables if table["columns"]]
        facts = batch_facts(batch) if batch is not None else None
        settings = report_settings(report, summary) | {"labels_drift": labels_drift(report, batch, facts)}
        texts: dict[str, str] = {
            "methods.tex": methods_tex(facts, settings),
            "limitations.tex": limitations_tex(facts, settings),
        }
        for table in tables:
            texts[f"table-{table['layout']}.tex"] = table_tex(table, layout=venue)
        cutoff = tables[0]["cutoff"] if tables else max(report.cutoffs)
        if report.on_batch:
            texts["table-labels.tex"] = uncertainty_tex(
                labels_rows(summary, cutoff, report.figure_quality),
                cutoff,
                report.baseline.name if report.baseline_id else None,
                layout=venue,
                chosen=report.label_interval,
            )
        files: dict[str, bytes] = {}
        if batch is not None:
            shoot = getattr(django_settings, "PAPER_SCREENSHOTS", True) if screenshots is None else screenshots
            page, files = task_page(batch, shoot)
            items = checklist_items(facts, crowd_pay(batch), page, settings)
            texts["checklist.tex"] = checklist_tex(items, page)
            texts["checklist.md"] = checklist_markdown(items, page)
        figure_names = []
        for kind, pdf, caption, description in _figures(report, summary, per_query, cutoff):
            files[f"fig-{kind}.pdf"] = pdf
            texts[f"fig-{kind}.tex"] = figure_tex(f"fig-{kind}", caption, f"fig:{kind}", description=description)
            figure_names.append(f"fig-{kind}")
        refs = [rf"Table~\ref{{{table_label(table)}}}" for table in tables]
        refs += [r"Table~\ref{tab:labels}"] if "table-labels.tex" in texts else []
        refs += [rf"Figure~\ref{{fig:{name.removeprefix('fig-')}}}" for name in figure_names]
        intro = (
            # The report's id in a comment: in the text a long id cannot break and runs past the column.
            f"% Report: {report.name}\n\\section*{{Results}}\nThe results: {', '.join(refs)}.\n" if refs else ""
        )
        paper_title = title.strip() if title and title.strip() else default_title(facts, settings)
        texts[".zenodo.json"] = zenodo_json(report, paper_title, dataset)
        texts["main.tex"] = document(
            paper_title,
            [name.removesuffix(".tex") for name in texts if name.startswith("table-")],
            figure_names,
            intro,
            limitations=True,
            checklist="checklist.tex" in texts,
            layout=venue,
        )
        keys = cited_keys(*texts.values())
        texts["references.bib"] = bibtex(keys)
        names = [*files, *texts, "README.txt"]
        inputs = [
            rf"\input{{{name.removesuffix('.tex')}}}"
            for name in sorted(names)
            if name.startswith(("table-", "fig-")) and name.endswith(".tex")
        ]
        texts["README.txt"] = README.format(
            name=report.name,
            underline="=" * (len("Paper bundle of report ") + len(report.name)),
            version=software_version(),
            files=readme_files(names, venue.name, venue.bibliography_style),
            inputs=", ".join(inputs),
            checklist_step=r"\input{checklist} after the references (or copy its answers into the venue's form)."
            if "checklist.tex" in texts
            else "(no checklist: the report's queries were not labelled on the platform)",
        )
        files |= {name: text.encode("utf-8") for name, text in texts.items()}
        return dict(sorted(files.items()))


def _template(name: str | None):
    """The :class:`publishing.latex.Template` named ``name``; ServiceError naming the choices."""
    try:
        return latex_template(name)
    except ValueError as exc:
        raise ServiceError(str(exc)) from None


def _refuse_unsafe(target: Path) -> None:
    """ServiceError if ``target`` names no folder of its own: ``.``, ``..``, the root, or a folder the
    working directory is inside (replacing it would move the folder the command runs in)."""
    resolved = target.resolve()
    cwd = Path.cwd().resolve()
    if target.name in ("", ".", "..") or resolved == resolved.parent or resolved == cwd or resolved in cwd.parents:
        raise ServiceError(
            f"--out {target} is the current folder or one of its parents: give a folder of its own "
            "for the bundle, e.g. --out paper"
        )


def _unknown_files(target: Path) -> list[str]:
    """The entries of an existing ``target`` that replacing it would lose: none in an earlier bundle holding only
    its files (its :data:`MARKER` lists them) and LaTeX's build outputs; every entry, if unmarked."""
    entries = sorted(path.name for path in target.iterdir())
    if not entries:
        return []
    try:
        known = set(json.loads((target / MARKER).read_text(encoding="utf-8"))["files"]) | {MARKER}
    except (OSError, ValueError, KeyError, TypeError):
        known = _legacy_bundle(target, entries)
        if known is None:
            return entries
    return [
        name
        for name in entries
        if name not in known and not (Path(name).suffix in BUILD_OUTPUTS and (target / name).is_file())
    ]


def _legacy_bundle(target: Path, entries: list[str]) -> set[str] | None:
    """A bundle written before :data:`MARKER` existed (the demo's folder of an earlier release): its
    README.txt is the bundle's own and every other name is one a bundle writes. Its files, else None."""
    try:
        own = (target / "README.txt").read_text(encoding="utf-8").startswith("Paper bundle of report ")
    except (OSError, UnicodeDecodeError):
        return None
    names = {"README.txt", "main.tex", "methods.tex", "limitations.tex", "references.bib", ".zenodo.json"}
    bundle = {
        name for name in entries if name in names or re.fullmatch(r"(table-[\w-]+\.tex|fig-[\w-]+\.(tex|pdf))", name)
    }
    return bundle if own and (target / "main.tex").is_file() else None


def write_paper_bundle(
    report: Report,
    out: str | os.PathLike,
    title: str | None = None,
    dataset: str | None = None,
    template: str | None = None,
) -> Path:
    """Write the bundle to the folder ``out`` (its parent must exist) through a temporary folder renamed into place,
    so ``out`` never holds half a bundle. An existing ``out`` is replaced only if it is empty or an earlier bundle,
    else ServiceError naming the files it would lose; if the rename fails, the earlier bundle is put back."""
    target = Path(out)
    _template(template)
    if dataset:  # refused before the bundle is computed (what .zenodo.json's reader refuses)
        try:
            related(dataset, "isSupplementedBy", "dataset")
        except ValueError as exc:
            raise ServiceError(f"--dataset: {exc}") from None
    _refuse_unsafe(target)
    parent = target.parent if str(target.parent) else Path(".")
    if not parent.is_dir():
        raise ServiceError(f"cannot write {target}: the folder {parent} does not exist")
    if target.exists() or target.is_symlink():
        if not target.is_dir() or target.is_symlink():
            raise ServiceError(f"{target} exists and is not a paper bundle (not a folder): give a new or empty folder")
        unknown = _unknown_files(target)
        if unknown:
            shown = ", ".join(unknown[:10]) + (f" and {len(unknown) - 10} more" if len(unknown) > 10 else "")
            raise ServiceError(
                f"{target} exists and is not a paper bundle: it holds {shown}, which writing the bundle "
                "would delete; give a new or empty folder"
            )
    files = paper_files(report, title, dataset=dataset, template=template)
    files[MARKER] = (
        json.dumps({"report": report.name, "methods": report.methods, "files": sorted(files)}, indent=1) + "\n"
    ).encode()
    staging = Path(tempfile.mkdtemp(dir=parent, prefix=f".{target.name}."))
    try:
        for name, body in files.items():
            (staging / name).write_bytes(body)
        return replace_folder(staging, target)  # whole or not at all; the earlier bundle back on failure
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def zenodo_json(report: Report, title: str, dataset: str | None = None) -> str:
    """The bundle's ``.zenodo.json``: a publication supplemented by the dataset (``dataset``: its DOI or address),
    for ``zenodo_deposit``; its creators are the authors' to fill in."""
    from django.utils import timezone

    from publishing.hub_card import METHOD_REFERENCE

    try:
        metadata = zenodo_metadata(
            upload_type="publication",
            publication_type="other",
            title=title,
            description=(
                f"Paper bundle of the report {report.name}: LaTeX tables, vector figures, the methods and limitations "
                "text written from the study's records, the references and the venues' checklists."
            ),
            published=timezone.now().date().isoformat(),
            method_doi=METHOD_REFERENCE["doi"],
            dataset=dataset,
        )
    except ValueError as exc:
        raise ServiceError(f"--dataset: {exc}") from None
    return json.dumps(metadata, indent=2, ensure_ascii=False) + "\n"


def paper_key(report: Report, template: str | None = None) -> tuple[dict[str, str], str]:
    """The cached zip's parameters and key: the template (each its own zip) and the batch's answers version, as
    ``methods.tex`` states the batch's facts (an adjudication after the build gives a new bundle)."""
    batch = report_batch(report)
    params = {"template": _template(template).name}
    params |= {"answers": annotation_selectors.answers_version(batch)} if batch is not None else {}
    return params, plot_key(report, "paper", params)


def cached_paper_zip(report: Report, template: str | None = None) -> Path | None:
    """The bundle's zip in ``template`` if a build already kept it (:func:`build_paper_zip`), else None."""
    path = plot_path(report, paper_key(report, template)[1], "zip")
    return path if path.exists() else None


def build_paper_zip(report: Report, template: str | None = None) -> Path:
    """Build the bundle's zip and keep it beside the report's cached plots: a repeat download is a file response."""
    params, _ = paper_key(report, template)
    path, _ = cached_plot(report, "paper", params, "zip", lambda: paper_zip(report, template))
    return path


def paper_url(report: Report, template: str | None = None) -> str:
    """The page's address of the report's bundle in ``template`` (the default's without a query)."""
    from django.urls import reverse

    url = reverse("metrics:report-paper", args=[report.name])
    name = _template(template).name
    return url if name == DEFAULT_TEMPLATE else f"{url}?template={name}"


@background_job("metrics.paper", task="metrics.tasks.paper_bundle_task", failures=(ServiceError,))
def paper_bundle_job(job: Job, report_id: int, template: str | None = None) -> None:
    """Build a report's paper zip in ``template`` into the cache (read-only: a redelivery builds it again)."""
    report = Report.objects.get(pk=report_id)
    build_paper_zip(report, template)
    job.result = {
        "url": paper_url(report, template),
        # A file: the job page links it, never redirects to it (named as the page's download names it).
        "download": f"{report.name}-paper{'' if template is None else f'-{_template(template).name}'}.zip",
        "report": report.name,
        "template": _template(template).name,
    }
    job.message = f"Paper bundle of {report.name} ({_template(template).name}) ready"


def start_paper_bundle(report: Report, template: str | None = None, *, may_start: bool) -> Job:
    """The Job building the report's zip in ``template``: the one already pending or running, else a new one when
    ``may_start`` (a viewer's GET starts no job: ``StateError``). ServiceError if the report's files are gone or the
    template is unknown."""
    name = _template(template).name
    selectors.check_report_files(report)
    # The default's job keeps its arguments of before templates ([report]), so a queued one is joined.
    arguments = [report.pk] if name == DEFAULT_TEMPLATE else [report.pk, name]
    running = Job.objects.filter(
        kind=paper_bundle_job.kind, arguments=arguments, status__in=[Job.Status.PENDING, Job.Status.RUNNING]
    ).first()
    title = f"Paper bundle of {report.name}" + ("" if name == DEFAULT_TEMPLATE else f" ({name})")
    if running is None and not may_start:
        raise StateError(
            f"the paper bundle of {report.name} ({name}) is not built yet, and a viewer's request starts no job: "
            "a researcher or owner of the report's group opens this link once, then the zip is kept for everyone"
        )
    return running or paper_bundle_job.start(title, *arguments, of=report)


def paper_warnings(report: Report) -> list[str]:
    """What the researcher should know before using the bundle (the command prints it)."""
    from django.conf import settings as django_settings

    batch = report_batch(report)
    drift = labels_drift(report, batch, batch_facts(batch)) if batch is not None else None
    warnings = [drift] if drift else []
    browser = chromium_path()
    if batch is not None and getattr(django_settings, "PAPER_SCREENSHOTS", True) and not os.access(browser, os.X_OK):
        warnings.append(
            f"Chromium was not found at {browser} (install Debian's chromium, or set CHROMIUM_PATH): the bundle "
            f"keeps the task page as {HIT_PAGE}, without its screenshot"
        )
    return warnings


def paper_zip(report: Report, template: str | None = None) -> bytes:
    """The bundle as a zip, its files under ``<report>-paper/`` (the page's and the API's download)."""
    import zipfile

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, body in paper_files(report, template=template).items():
            info = zipfile.ZipInfo(f"{report.name}-paper/{name}", date_time=ZIP_DATE)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            archive.writestr(info, body)
    return buffer.getvalue()
