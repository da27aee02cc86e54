"""Celery tasks of the pooling app that are not Jobs: one chunk of a split reading (a collection
scan, a run import, a collection by reference's texts), each idempotent and acknowledged late, so
a lost worker's chunk is redelivered. The services send them by name, never importing this module;
the app's background jobs are declared in its services (:func:`core.jobs.background_job`).
"""

from __future__ import annotations

from config.celery import app

from . import services


@app.task(acks_late=True, reject_on_worker_lost=True)
def count_scan_chunk_task(chunk_id: int, collection_id: int, wordlist_id: int, tokenizer: str) -> int:
    """One chunk of a split collection scan."""
    services.count_scan_chunk(chunk_id, collection_id, wordlist_id, tokenizer)
    return chunk_id


@app.task(acks_late=True, reject_on_worker_lost=True)
def parse_run_chunk_task(chunk_id: int, collection_id: int, path: str, run_format: str, skip_bad_lines: bool) -> int:
    """One chunk of a split run import."""
    services.parse_run_chunk(chunk_id, collection_id, path, run_format, skip_bad_lines)
    return chunk_id


@app.task(acks_late=True, reject_on_worker_lost=True)
def read_texts_chunk_task(chunk_id: int, collection_id: int) -> int:
    """One chunk (bundle files) of a collection by reference's texts."""
    services.read_texts_chunk(chunk_id, collection_id)
    return chunk_id
