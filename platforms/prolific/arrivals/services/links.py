"""A study link checked against its batch, and the session it opens kept for one browser
(:func:`verify_arrival`); signed study URLs (Prolific's token is its word, no API call: :func:`read_signed_link`,
:func:`admit_signed`), which also start an interrupted publication again (:func:`resume_publishing`)."""

from __future__ import annotations

import hashlib
import logging
import math
import time

from django.conf import settings
from django.db import IntegrityError, transaction

from annotation.crowd.providers import CrowdProvider, get_provider
from annotation.models import Batch, Provider
from core.errors import ServiceError
from core.services.ratelimit import shared_cache
from platforms.prolific.arrivals.services.checks import (
    ArrivalRefused,
    Link,
    NotOpenYet,
    StudyClosed,
    busy,
    confirmed_status,
    not_open_yet,
)
from platforms.prolific.client import ProlificError
from platforms.prolific.models import ProlificSession
from platforms.prolific.provider import PROLIFIC_ID, RETURN_MESSAGE

logger = logging.getLogger(__name__)


def check_link(batch: Batch, participant_id: str, study_id: str, session_id: str) -> None:
    """Refuse a study link whose parameters do not belong to this published Prolific batch."""
    if batch.provider != Provider.PROLIFIC:
        raise ServiceError("this batch does not run on Prolific")
    _check_ids(participant_id, study_id, session_id)
    if _publishing(batch, study_id):  # Prolific sent them before the site recorded the publication: wait
        raise not_open_yet(batch)
    if study_id != batch.hit_type_id:
        raise ServiceError("this link belongs to another Prolific study")
    if batch.status in (Batch.Status.COMPLETED, Batch.Status.CANCELLED):
        raise StudyClosed(
            f"This study is complete: every place has been filled. Thank you for your interest. {RETURN_MESSAGE}"
        )
    if batch.status != Batch.Status.PUBLISHED:
        raise ServiceError("this study is not open yet")


def _check_ids(*ids: str) -> None:
    """Refused at once, without asking Prolific: a made-up link of another shape costs nothing."""
    if not all(isinstance(v, str) and PROLIFIC_ID.fullmatch(v) for v in ids):
        raise ServiceError(
            "the link from Prolific is incomplete or malformed: PROLIFIC_PID, STUDY_ID and SESSION_ID"
            " (Prolific's ids, 24 characters 0-9 a-f) are needed"
        )


def _publishing(batch: Batch, study_id: str) -> bool:
    """Whether Prolific may have the study live while the site still publishes it: a draft whose
    publication was asked for, whose study is this one or not known yet (a lost answer)."""
    return (
        batch.status == Batch.Status.DRAFT
        and batch.prepare_attempted is not None
        and batch.hit_type_id in ("", study_id)
    )


def browser_digest(secret: str) -> str:
    """What is stored of a browser's secret: its SHA-256 (the secret stays in the browser's session)."""
    return hashlib.sha256(secret.encode()).hexdigest()


def verify_arrival(
    batch: Batch,
    participant_id: str,
    study_id: str,
    session_id: str,
    *,
    browser_secret: str,
    client: str | None = None,
) -> ProlificSession:
    """The confirmed session of this arrival (checked with Prolific the first time, ``client``'s checks
    rate-limited), bound to this browser; ``ArrivalRefused``, ``ArrivalDeferred``, ``StudyClosed`` else."""
    check_link(batch, participant_id, study_id, session_id)
    return _keep_session(
        batch,
        participant_id,
        session_id,
        browser_digest(browser_secret),
        lambda: confirmed_status(Link(study_id, participant_id, session_id), client),
    )


def confirm_link(participant_id: str, study_id: str, session_id: str, *, client: str | None = None) -> str:
    """Prolific's word on a rehearsal's test study link (the session's status), checked as any arrival,
    nothing recorded."""
    _check_ids(participant_id, study_id, session_id)
    return confirmed_status(Link(study_id, participant_id, session_id), client)


def _keep_session(batch: Batch, participant_id: str, session_id: str, browser: str, status) -> ProlificSession:
    """The session's row, made with ``status()`` the first time and bound to ``browser``; a later arrival
    must be the same batch, participant and browser."""
    known = ProlificSession.objects.filter(session_id=session_id).first()
    if known is None:
        status = status()
        try:
            with transaction.atomic():
                return ProlificSession.objects.create(
                    session_id=session_id,
                    batch=batch,
                    participant_id=participant_id,
                    status=status,
                    browser=browser,
                )
        except IntegrityError:  # the same session arriving twice at once: the first one keeps it
            known = ProlificSession.objects.get(session_id=session_id)
    if known.batch_id != batch.pk:
        raise ArrivalRefused("This Prolific session belongs to another study.")
    if known.participant_id != participant_id:
        raise ArrivalRefused("This Prolific session belongs to another participant.")
    if known.browser != browser:
        raise ArrivalRefused("This Prolific session was opened in another browser. Please continue the study there.")
    return known


# -- signed study URLs ---------------------------------------------------------------
#: The status a session is kept with when Prolific's signed token, not an API call, confirmed it.
SIGNED = "SIGNED"
REPLAYED_MESSAGE = (
    "This link from Prolific was already used in another browser. Please continue the study in the browser"
    " where you opened it first, or go back to Prolific and open the study again from there."
)
#: A window arrival starts the batch's interrupted publication again at most this often (seconds).
RESUME_SECONDS = 30


def signed_urls(batch: Batch) -> bool:
    """Whether the batch's study sends participants with Prolific's signed URL (``prolific_token``)."""
    return bool((batch.provider_options or {}).get("signed_urls"))


def read_signed_link(
    batch: Batch, token: str, *, browser_secret: str, now: float | None = None
) -> tuple[str, str, str]:
    """The ids Prolific signed in ``token``, verified with no API call and used once (another browser is
    refused: ``ArrivalRefused``); ``ArrivalDeferred`` while no key set could be had."""
    from django.urls import reverse

    from platforms.prolific.connection.selectors import prolific_settings
    from platforms.prolific.jwks import services as jwks
    from platforms.prolific.study_tokens import LEEWAY_SECONDS, TokenRefused, key_id, verify_study_token

    if batch.provider != Provider.PROLIFIC:
        raise ServiceError("this batch does not run on Prolific")
    now = time.time() if now is None else now
    try:
        keys = jwks.verification_keys(key_id(token), now=now)
        verified = verify_study_token(
            token,
            keys,
            site_url=settings.SITE_URL,
            start_path=reverse("annotation:prolific-start", args=[batch.name]),
            workspace_id=prolific_settings().workspace_id,
            organisation_id=settings.PROLIFIC_ORGANISATION_ID,
            now=now,
        )
    except TokenRefused as exc:
        raise ArrivalRefused(str(exc)) from None
    except jwks.KeysUnavailable:
        raise busy(settings.PROLIFIC_ARRIVAL_REFRESH_SECONDS) from None
    browser = browser_digest(browser_secret)
    cache = shared_cache()
    key = f"prolific-token:{verified.digest}"
    kept = cache.add(key, browser, max(1, math.ceil(verified.expires - now)) + LEEWAY_SECONDS + 60)
    if not kept and cache.get(key) != browser:
        raise ArrivalRefused(REPLAYED_MESSAGE)
    return verified.participant_id, verified.study_id, verified.session_id


def admit_signed(
    batch: Batch, participant_id: str, study_id: str, session_id: str, *, browser_secret: str
) -> ProlificSession:
    """The session of a verified signed link, kept for this browser; ``NotOpenYet`` while the publication
    is being finished (and resumed if interrupted), ``StudyClosed`` when the batch needs nobody."""
    try:
        check_link(batch, participant_id, study_id, session_id)
    except NotOpenYet:
        resume_publishing(batch)
        raise
    return _keep_session(batch, participant_id, session_id, browser_digest(browser_secret), lambda: SIGNED)


def resume_publishing(batch: Batch) -> bool:
    """Start the batch's publication again (it resumes where it stopped) unless under way or started within
    :data:`RESUME_SECONDS`; whether it was started."""
    from annotation.crowd.services.background import start_publish

    if not shared_cache().add(f"prolific-resume:{batch.pk}", 1, RESUME_SECONDS):
        return False
    try:
        start_publish(batch)
    except ServiceError as exc:  # under way already, or no longer publishable
        logger.info("batch %s: publication not resumed: %s", batch.name, exc)
        return False
    return True


def resume_interrupted_publications(provider: CrowdProvider | None = None) -> list[str]:
    """Publications that stopped while Prolific shows the study live (found by id, else by internal name),
    started again by the ordinary job so waiting participants get in; their batches' names."""
    from annotation.crowd.services.background import start_publish
    from platforms.prolific.connection.selectors import prolific_settings

    drafts = Batch.objects.filter(
        provider=Provider.PROLIFIC, status=Batch.Status.DRAFT, prepare_attempted__isnull=False
    ).order_by("pk")
    started = []
    for batch in drafts:
        provider = provider or get_provider(Provider.PROLIFIC)
        try:
            if batch.hit_type_id:
                study = provider.client.get_study(batch.hit_type_id)
            else:
                study = provider.client.find_study(prolific_settings().project_id, provider.internal_name(batch))
        except ProlificError as exc:
            logger.warning("batch %s: its study could not be read (next poll retries): %s", batch.name, exc)
            continue
        if not study or study.get("status") not in ("ACTIVE", "PAUSED"):
            continue
        try:
            start_publish(batch)
        except ServiceError:
            continue  # under way already
        started.append(batch.name)
    return started
