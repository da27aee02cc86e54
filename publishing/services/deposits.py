"""Depositing a dataset folder or a paper bundle on Zenodo, with the site's Zenodo connection (``ZENODO_TOKEN`` /
``ZENODO_API_URL``, or the Connections page). Only the ``zenodo_deposit`` command calls it: the creators are filled
in the folder's ``.zenodo.json`` by hand first, so a deposit starts where that file is edited, never in a request.
"""

from __future__ import annotations

import os
from pathlib import Path

from core.errors import ServiceError
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
