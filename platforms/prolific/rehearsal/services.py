"""A Prolific batch rehearsed with Prolific's test participants before anything is paid (docs/prolific.md,
"Rehearsal with Prolific's test participants").

:func:`rehearse` makes the batch's draft study as publishing would, a test participant (one per
researcher account) when an email is given, and a test study from the draft, each once: the intent is
committed first (``Batch.provider_options["rehearsal"]``) and after a lost answer the test study is
looked up by the draft's internal name (the reference marks no test study). The batch stays a draft,
and nothing a test participant answers is recorded.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from django.db import transaction
from django.utils import timezone

from annotation.crowd.providers import CrowdProvider, get_provider
from annotation.crowd.services.locking import one_per_batch
from annotation.crowd.services.publishing import check_publishable, prepare_batch
from annotation.models import Batch, Provider
from core.errors import ServiceError, StateError
from core.jobs import background_job
from core.models import Job
from platforms.prolific.client import ProlificError, ProlificUnknownOutcome
from platforms.prolific.selectors import REHEARSAL_KEY, rehearsal_of, rehearsal_study_id

logger = logging.getLogger(__name__)
KEY = REHEARSAL_KEY


@dataclass
class Rehearsal:
    """A batch's rehearsal as recorded: the test study, its link, the test participant, what was found."""

    batch: str
    draft_study_id: str = ""
    study_id: str = ""
    study_url: str = ""
    test_participant_id: str = ""
    #: ``created`` (this call made it), ``found`` (looked up after a lost answer), ``kept`` (made before).
    outcome: str = ""
    approved: int = 0
    stopped: bool = False


def _record(batch: Batch, **changes) -> dict:
    """Merge ``changes`` into the batch's rehearsal record, committed at once (under the batch's row lock)."""
    with transaction.atomic():
        row = Batch.objects.select_for_update().get(pk=batch.pk)
        options = dict(row.provider_options or {})
        record = {**(options.get(KEY) or {}), **changes}
        options[KEY] = record
        Batch.objects.filter(pk=batch.pk).update(provider_options=options)
    batch.provider_options = options
    return record


def _known_test_participant() -> str:
    """A test participant this site made for the researcher account (one per account), from any batch."""
    for options in Batch.objects.filter(provider=Provider.PROLIFIC).values_list("provider_options", flat=True):
        found = ((options or {}).get(KEY) or {}).get("test_participant_id")
        if found:
            return found
    return ""


def ensure_test_participant(batch: Batch, email: str, provider: CrowdProvider) -> str:
    """The test participant's id: the one known, else made once with ``email`` (``""`` when that failed: the test
    study goes to every test participant of the workspace anyway)."""
    known = _known_test_participant()
    if known or not email:
        return known
    if rehearsal_of(batch).get("test_participant_attempted"):
        return ""  # asked before, its answer lost: never a second account
    _record(batch, test_participant_attempted=timezone.now().isoformat())
    try:
        answer = provider.client.create_test_participant(email)
    except ProlificUnknownOutcome:
        logger.warning("batch %s: the test participant's creation lost its answer (not asked again)", batch.name)
        return ""
    except ProlificError as exc:
        if exc.status is not None and 400 <= exc.status < 500 and exc.status not in (401, 429):
            logger.warning("batch %s: Prolific made no test participant for %s: %s", batch.name, email, exc)
            return ""
        raise
    participant = answer.get("participant_id") if isinstance(answer, dict) else None
    if isinstance(participant, str) and participant:
        _record(batch, test_participant_id=participant)
        return participant
    return ""


def _find_test_study(batch: Batch, provider: CrowdProvider) -> dict | None:
    """After a lost answer: another study of the project with the draft's internal name (the test study is
    made from the draft), or ``None``."""
    from platforms.prolific.connection.selectors import prolific_settings

    name = provider.internal_name(batch)
    for study in provider.client.pages(f"projects/{prolific_settings().project_id}/studies/"):
        if study.get("internal_name") == name and study.get("id") not in ("", None, batch.hit_type_id):
            return study
    return None


@one_per_batch("Publishing")  # never beside a publication of the same batch: one draft study
def rehearse(batch: Batch, *, email: str = "", again: bool = False, provider: CrowdProvider | None = None) -> Rehearsal:
    """Make the batch's test study once (see the module's docstring); the rehearsal as recorded."""
    if batch.provider != Provider.PROLIFIC:
        raise ServiceError(f"batch {batch.name!r} is not a Prolific batch: only Prolific has test participants")
    if batch.status != Batch.Status.DRAFT:
        raise StateError(f"batch {batch.name!r} is {batch.status}: a rehearsal comes before publishing")
    check_publishable(batch)
    provider = provider or get_provider(Provider.PROLIFIC)
    draft = prepare_batch(batch, provider)
    if not draft:
        raise ServiceError(f"batch {batch.name!r}: Prolific made no draft study")
    participant = ensure_test_participant(batch, email, provider)
    record = rehearsal_of(batch)
    result = Rehearsal(batch.name, draft_study_id=draft, test_participant_id=participant)
    if record.get("study_id") and not again:
        result.study_id, result.study_url, result.outcome = record["study_id"], record.get("study_url", ""), "kept"
        return result
    if record.get("study_attempted") and not record.get("study_id") and not again:
        found = _find_test_study(batch, provider)
        if found is None:
            raise StateError(
                f"batch {batch.name!r}: the last test study's answer was lost and no test study was found on"
                " Prolific; look in Prolific's app, then rehearse again with --again to make a new one"
            )
        _record(batch, study_id=found["id"], study_url=record.get("study_url", ""))
        result.study_id, result.outcome = found["id"], "found"
        return result
    status = provider.client.get_study(draft).get("status")
    if status != "UNPUBLISHED":
        raise StateError(f"batch {batch.name!r}: its study is {status} on Prolific; a test study needs a draft")
    _record(batch, study_attempted=timezone.now().isoformat(), study_id="", study_url="", finished="")
    try:
        answer = provider.client.create_test_study(draft)
    except ProlificUnknownOutcome:
        found = _find_test_study(batch, provider)
        if found is None:
            raise
        answer = {"study_id": found["id"]}
    study_id = answer.get("study_id") if isinstance(answer, dict) else None
    if not isinstance(study_id, str) or not study_id:
        raise ProlificError("Prolific made a test study without answering its id", 502)
    study_url = answer.get("study_url") or ""
    _record(batch, study_id=study_id, study_url=study_url if isinstance(study_url, str) else "")
    result.study_id, result.study_url, result.outcome = study_id, study_url, "created"
    return result


def finish_rehearsal(batch: Batch, *, provider: CrowdProvider | None = None) -> Rehearsal:
    """Approve the test study's submissions awaiting review (Prolific refunds the wallet) and stop it; idempotent."""
    study = rehearsal_study_id(batch)
    if not study:
        raise StateError(f"batch {batch.name!r} has no test study: rehearse it first")
    provider = provider or get_provider(Provider.PROLIFIC)
    result = Rehearsal(batch.name, draft_study_id=batch.hit_type_id, study_id=study, outcome="finished")
    for submission in provider.client.submissions(study):
        if submission.status == "AWAITING REVIEW":
            provider.client.approve(submission.id)  # documented as idempotent
            result.approved += 1
    result.stopped = provider.stop_study(study)
    _record(batch, finished=timezone.now().isoformat())
    return result


# -- the background job (the batch page's button; the command runs it in its own process) ---------------

REHEARSE_KIND = "annotation.prolific.rehearse"


@background_job(REHEARSE_KIND, task="annotation.tasks.prolific_rehearse_task", failures=(ServiceError,))
def rehearse_job(job: Job, batch_id: int, email: str = "", again: bool = False, finish: bool = False) -> dict:
    """Rehearse the batch (or finish its rehearsal) as :func:`rehearse` / :func:`finish_rehearsal`."""
    from dataclasses import asdict

    from django.urls import reverse

    batch = Batch.objects.get(pk=batch_id)
    done = finish_rehearsal(batch) if finish else rehearse(batch, email=email, again=again)
    job.result = {**asdict(done), "url": reverse("annotation:batch-detail", args=[batch.name])}
    job.message = (
        f"Rehearsal finished: {done.approved} test submission(s) approved, test study stopped"
        if finish
        else f"Test study {done.study_id} ({done.outcome}) for Prolific's test participants"
    )
    return job.result


def start_rehearsal(batch: Batch, *, email: str = "", again: bool = False, finish: bool = False) -> Job:
    """Start the rehearsal job (one per batch at a time)."""
    from core.services.once import start_once

    if batch.provider != Provider.PROLIFIC:
        raise ServiceError(f"batch {batch.name!r} is not a Prolific batch")
    if not finish and batch.status != Batch.Status.DRAFT:
        raise StateError(f"batch {batch.name!r} is {batch.status}: a rehearsal comes before publishing")
    what = "Finish the rehearsal of" if finish else "Rehearse"
    return start_once(
        rehearse_job,
        batch,
        f"{what} {batch.name} with Prolific's test participants",
        batch.pk,
        email,
        again,
        finish,
        busy=f"batch {batch.name!r} is being rehearsed already",
    )
