"""Jobs without a broker: carried out in the process that starts them.

Without ``CELERY_BROKER_URL`` the process that commits a Job runs it. A web request must not
wait for it, so by default the Job goes to a small pool of background threads of this process
(``JOB_LOCAL_THREADS``). Two callers run it inline, in their own thread at the commit: a
``manage.py`` command (:func:`inline_jobs`: it prints the outcome, and its process is about to
exit) and ``JOB_LOCAL_RUNNER = "inline"`` (the test suite).

Either way the Job goes through :func:`core.tasks.job_task` (claim, heartbeat, done is done) as on
a worker; what a dead process leaves is sent again by ``manage.py sweep_jobs``
(:mod:`core.jobs.sweeper`). This module imports neither Celery nor the models: every command loads it.
"""

from __future__ import annotations

import logging
import os
import threading
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

from django.conf import settings
from django.db import connections

logger = logging.getLogger(__name__)

_local = threading.local()
_lock = threading.Lock()
_executor: ThreadPoolExecutor | None = None
_executor_pid: int | None = None
#: Jobs waiting for a thread, by group, and the groups in the order of their next turn (:func:`submit`).
_queue_lock = threading.Lock()
_waiting: dict[int | None, deque[tuple[int, Callable[[], object]]]] = {}
_turns: deque[int | None] = deque()


@contextmanager
def inline_jobs() -> Iterator[None]:
    """Jobs committed in this thread inside the block run inline, at the commit (see the module's docstring)."""
    before = getattr(_local, "inline", False)
    _local.inline = True
    try:
        yield
    finally:
        _local.inline = before


def runs_inline() -> bool:
    """Whether a Job committed now, in this thread, runs inline rather than on a background thread."""
    return getattr(_local, "inline", False) or settings.JOB_LOCAL_RUNNER == "inline"


def in_background() -> bool:
    """Whether this thread is one of the pool's, carrying out a Job (it then stamps a heartbeat)."""
    return getattr(_local, "background", False)


def _pool() -> ThreadPoolExecutor:
    """The pool of this process; a new one after a fork (threads do not survive it)."""
    global _executor, _executor_pid
    with _lock:
        if _executor is None or _executor_pid != os.getpid():
            _executor = ThreadPoolExecutor(max_workers=settings.JOB_LOCAL_THREADS, thread_name_prefix="local-job")
            _executor_pid = os.getpid()
            with _queue_lock:  # what waited belonged to the parent's threads
                _waiting.clear()
                _turns.clear()
        return _executor


def submit(job_id: int, run: Callable[[], object], group: int | None = None) -> None:
    """Run ``run()`` (a Job's delivery) on a background thread of this process and return at once.

    Jobs wait in one queue per research group (``group``); free threads take each group's next Job
    in turn, so a group with many Jobs waiting delays another group's next by at most one Job per
    thread. The interpreter waits for submitted Jobs before it exits; a killed process leaves them
    to the sweeper.
    """
    pool = _pool()
    with _queue_lock:
        waiting = _waiting.setdefault(group, deque())
        if not waiting:
            _turns.append(group)
        waiting.append((job_id, run))
    pool.submit(_take_next)


def waiting_by_group() -> dict[int | None, list[int]]:
    """The ids of the Jobs waiting for a thread of this process, by group, in the order each group's run."""
    with _queue_lock:
        return {group: [job_id for job_id, _ in _waiting[group]] for group in _turns}


def _take_next() -> None:
    """Carry out the next Job: the first waiting one of the group whose turn it is."""
    with _queue_lock:
        group = _turns.popleft()
        waiting = _waiting[group]
        job_id, run = waiting.popleft()
        if waiting:
            _turns.append(group)  # its next Job waits for every other group's
        else:
            del _waiting[group]
    _deliver(job_id, run)


def _deliver(job_id: int, run: Callable[[], object]) -> None:
    _local.background = True
    try:
        run()
    except Exception:  # the Job is recorded failed with its message; the log keeps the traceback
        logger.exception("job %s failed", job_id)
    finally:
        _local.background = False
        connections.close_all()  # this thread's own connections: nothing else will close them
