"""Celery tasks of the pooling app: thin shells over services, run as Jobs (:mod:`core.tasks`).

``count_scan_chunk_task`` and ``parse_run_chunk_task`` are the exceptions: one chunk of a
split collection scan or run import, not a Job; each ``ScanChunk`` is idempotent on its
own (a done chunk is skipped).
"""

from __future__ import annotations

import re
from pathlib import Path

from django.urls import reverse

from config.celery import app
from core.errors import InputError, ServiceError
from core.models import Job
from core.progress import shown
from core.tasks import job_task

from . import selectors, services
from .models import Pool, QuerySet, Run, WordList
from .wordlists import load_wordlist


@job_task
def build_pool_task(
    job: Job,
    name: str,
    query_set_id: int,
    run_ids: list[int],
    settings: dict,
    wordlist_path: str = "",
    wordlist_id: int | None = None,
) -> str:
    # A redelivery after a crash may find the pool committed by the delivery that died.
    pool = Pool.objects.filter(name=name, created__gte=job.created).first() if job.redelivered else None
    if pool is None:
        runs = sorted(Run.objects.filter(pk__in=run_ids), key=lambda r: run_ids.index(r.pk))
        words = load_wordlist(wordlist_path) if wordlist_path else None
        if wordlist_id is not None:
            words = selectors.wordlist_of(WordList.objects.get(pk=wordlist_id))
        pool = services.build_pool(
            name,
            QuerySet.objects.get(pk=query_set_id),
            runs,
            services.PoolSettings(**settings),
            words,
            job=job,
            bar=False,
        )
    job.result = {"pool": pool.name, "url": reverse("pooling:pool-detail", args=[pool.name])}
    job.message = f"Pooled {pool.queries.queries.count()} queries"
    return pool.name


@app.task(acks_late=True, reject_on_worker_lost=True)
def count_scan_chunk_task(chunk_id: int, collection_id: int, wordlist_id: int, tokenizer: str) -> int:
    """One chunk of a split collection scan; acknowledged late, so a lost worker's chunk is redelivered."""
    services.count_scan_chunk(chunk_id, collection_id, wordlist_id, tokenizer)
    return chunk_id


@app.task(acks_late=True, reject_on_worker_lost=True)
def parse_run_chunk_task(chunk_id: int, collection_id: int, path: str, run_format: str, skip_bad_lines: bool) -> int:
    """One chunk of a split run import; acknowledged late, so a lost worker's chunk is redelivered."""
    services.parse_run_chunk(chunk_id, collection_id, path, run_format, skip_bad_lines)
    return chunk_id


@job_task(failures=(InputError, ServiceError, OSError))
def import_task(job: Job, kind: str, path: str, name: str, options: dict, uploaded: bool) -> str:
    """Import one file; bad input or a refused request fails the job (no retry can fix it).

    Importing is idempotent (the same content is found already imported). An uploaded
    file is removed when the import fails or finds its content already there, except on
    a redelivery: the delivery that died may have imported this very file.
    """
    # An upload is kept as uploads/<12 hex>-<its name> (core.uploads.keep_upload); a path was given by the user.
    shown_as = options.get("file_name") or (re.sub(r"^[0-9a-f]{12}-", "", Path(path).name) if uploaded else str(path))
    # Messages name the file as the user did, never its staging or cache path (core.progress.shown).
    job.shown_names = {str(Path(path).resolve()): shown_as, str(path): shown_as, Path(path).name: shown_as}
    job.result = {"form": reverse("pooling:import-create", args=[kind]), "file": shown_as}  # to try again
    job.save(update_fields=["result"])
    keep = False
    try:
        result = services.import_file(kind, path, name, options, job=job, bar=False)
        keep = result.created or job.redelivered
        what = services.IMPORT_KINDS[kind]
        job.message = f"{'Imported' if result.created else 'Already imported (unchanged)'}: {what} {name}"
        if result.skipped:
            first = shown(job, str(result.skipped.errors[0]))
            job.message += f"; {len(result.skipped)} bad line(s) skipped, first: {first}"
        job.result = {kind: name, "created": result.created, "url": reverse("home") + f"#{kind}", "file": shown_as}
    except (InputError, ServiceError, OSError) as exc:
        raise ServiceError(shown(job, str(exc))) from None
    finally:
        if uploaded and not keep:
            Path(path).unlink(missing_ok=True)
    return name
