"""Celery tasks of the pooling app that are not Jobs: one chunk of a split collection scan, run
import or reading of a collection by reference's texts. Each ``ScanChunk`` is idempotent on its own (a done chunk is skipped).

The app's background jobs (building a pool, importing a file) are declared in its services
(:func:`core.jobs.background_job`); :mod:`core.tasks` makes their Celery tasks. The services
send these chunk tasks by name (:func:`core.tasks.task_named`), never importing this module.
"""

from __future__ import annotations

from config.celery import app

from . import services


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


@app.task(acks_late=True, reject_on_worker_lost=True)
def read_texts_chunk_task(chunk_id: int, collection_id: int) -> int:
    """One chunk (bundle files) of a collection by reference's texts; acknowledged late, so a lost worker's chunk is redelivered."""
    services.read_texts_chunk(chunk_id, collection_id)
    return chunk_id
