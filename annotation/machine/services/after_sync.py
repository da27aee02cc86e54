"""A sync of a calibration sample starts its batch's calibration report (a sync step).

Registered after the quality loop (whose re-offers and escalations change the answers the report
reads), as :mod:`.held_out` is before it.
"""

from __future__ import annotations

from typing import Any

from annotation.crowd.services.hooks import sync_steps
from annotation.machine.report.selectors import kept_report, report_version
from annotation.machine.services.background import last_report_job, start_calibration_report
from annotation.models import Batch


@sync_steps.register
def report_after_sync(batch: Batch, provider: Any, result: Any) -> None:
    """Start the report for the answers now in, so the researcher's first view finds it done or under
    way (nothing when that state's report is kept, under way or refused)."""
    if batch.purpose != Batch.Purpose.CALIBRATION or batch.parent_id is None:
        return
    parent = batch.parent
    version = report_version(parent)
    if version is None or last_report_job(parent, version) is not None:
        return
    if kept_report(parent, version) is None:
        start_calibration_report(parent, version)
