"""Depositing a dataset folder or a paper bundle on Zenodo, with the site's Zenodo connection (``ZENODO_TOKEN`` /
``ZENODO_API_URL``, or the Connections page). A page or the API never calls Zenodo in a request: a job does.
"""

from __future__ import annotations

import os
from pathlib import Path

from core.errors import ServiceError
from core.jobs import background_job
from core.models import Job
from publishing.zenodo.deposit import Deposit, ZenodoClient, deposit_folder


def zenodo_deposit(folder: str | os.PathLike, *, publish: bool = False, sleep=None, confirm=None) -> Deposit:
    """Deposit ``folder`` with the site's Zenodo connection (a ServiceError naming what is wrong);
    ``confirm(names)`` is asked before anything is sent (the command lists the files and asks)."""
    from core.selectors import zenodo_settings

    folder = Path(folder)
    if not folder.is_dir():
        raise ServiceError(f"{folder} is not a folder (give a dataset folder of publish_dataset or a paper bundle)")
    conn = zenodo_settings()
    try:
        client = ZenodoClient(conn.api_url, conn.token, sleep=sleep)
        return deposit_folder(folder, client, publish=publish, confirm=confirm)
    except ValueError as exc:
        raise ServiceError(str(exc)) from None


@background_job("annotation.zenodo_deposit", task="annotation.tasks.zenodo_deposit_task", failures=(ServiceError,))
def zenodo_deposit_job(job: Job, folder: str, publish: bool = False) -> None:
    """Deposit a folder on Zenodo (a retry resumes the deposition the folder records, never a second one)."""
    done = zenodo_deposit(folder, publish=publish)
    job.result = {"deposition": done.id, "doi": done.doi, "published": done.published, "record": done.url}
    job.message = (
        f"{'Published' if done.published else 'Deposited (draft)'} on Zenodo: DOI {done.doi or 'not yet given'}"
    )
