"""A study link checked against its batch, and the session it opens kept for one browser
(:func:`verify_arrival`, :func:`confirm_link`); the signed study URLs (issue 56: Prolific's token is its word,
no API call: :func:`read_signed_link`, :func:`admit_signed`), which also start an interrupted publication again
(:func:`resume_publishing`; the poll's :func:`resume_interrupted_publications`)."""

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
from platforms.prolific.provider import (
    PROLIFIC_ID,
    RETURN_MESSAGE,
)

logger = logging.getLogger(__name__)


def check_link(batch: Batch, participant_id: str, study_id: str, session_id: str) -> None:
    """Refuse a study link whose parameters do not belong to this published Prolific batch."""
    if batch.provider != Provider.PROLIFIC:
        raise ServiceError("this batch does not run on Prolific")
    if not all(isinstance(v, str) and PROLIFIC_ID.fullmatch(v) for v in (participant_id, study_id, session_id)):
        # Refused at once, without asking Prolific: a made-up link of another shape costs nothing.
        raise ServiceError(
            "the link from Prolific is incomplete or malformed: PROLIFIC_PID, STUDY_ID and SESSION_ID"
            " (Prolific's ids, 24 characters 0-9 a-f) are needed"
        )
    if _publishing(batch, study_id):
        # Prolific has the study live (it sent this participant) while the site has not yet recorded
        # the end of its publication: the page waits and comes back (issue 56), never a dead end.
        raise not_open_yet(batch)
    if study_id != batch.hit_type_id:
        raise ServiceError("this link belongs to another Prolific study")
    if batch.status in (Batch.Status.COMPLETED, Batch.Status.CANCELLED):
        raise StudyClosed(
            f"This study is complete: every place has been filled. Thank you for your interest. {RETURN_MESSAGE}"
        )
    if batch.status != Batch.Status.PUBLISHED:
        raise ServiceError("this study is not open yet")


def _publishing(batch: Batch, study_id: str) -> bool:
    """Whether ``batch`` is in the window where Prolific may have its study live while the site still
    counts it as publishing: a draft whose publication was asked for (``prepare_attempted``), whose
    study is this one or not known yet (the answer to ``POST /studies/`` or to the publish was lost)."""
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
    """The confirmed session of this arrival; raises ``ArrivalRefused`` for anything Prolific does not confirm.

    The first arrival of a session has it checked with Prolific (:func:`confirmed_status`;
    ``client`` is the client address's key, whose new checks are rate-limited); its answer is
    kept, bound to this browser (``ProlificSession``: a reload asks nothing), and a refusal is
    remembered for ``PROLIFIC_ARRIVAL_REFUSED_SECONDS``. Raises ``ServiceError`` at once,
    asking nothing, for a link whose ids are not Prolific's shape. Raises ``ArrivalDeferred``
    while Prolific has not answered (a check under way, or not begun): the caller shows the
    page that waits and asks again by itself, and hands out nothing. ``StudyClosed`` when the
    batch needs nobody any more.
    """
    check_link(batch, participant_id, study_id, session_id)
    return _keep_session(
        batch,
        participant_id,
        session_id,
        browser_digest(browser_secret),
        lambda: confirmed_status(Link(study_id, participant_id, session_id), client),
    )


def confirm_link(participant_id: str, study_id: str, session_id: str, *, client: str | None = None) -> str:
    """Prolific's word on a link of a study that is not the batch's own (a rehearsal's test study): the session's
    status, checked as any arrival (:func:`confirmed_status`), nothing recorded; ``ServiceError`` for a link not
    of Prolific's shape."""
    if not all(isinstance(v, str) and PROLIFIC_ID.fullmatch(v) for v in (participant_id, study_id, session_id)):
        raise ServiceError(
            "the link from Prolific is incomplete or malformed: PROLIFIC_PID, STUDY_ID and SESSION_ID are needed"
        )
    return confirmed_status(Link(study_id, participant_id, session_id), client)


def _keep_session(batch: Batch, participant_id: str, session_id: str, browser: str, status) -> ProlificSession:
    """The session's row: made with ``status()`` (Prolific's word on it) the first time, bound to ``browser``;
    a later arrival must be the same batch, participant and browser."""
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


# -- signed study URLs (issue 56) ---------------------------------------------------------------
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
    """The (participant, study, session) ids that Prolific signed in ``token``, verified here with no API call.

    The token is checked as :mod:`platforms.prolific.study_tokens` says (signature by the
    key of its ``kid`` from the cached key set, :mod:`platforms.prolific.jwks.services`; ``exp``;
    ``aud``; the workspace and organisation), and used once: the same token opened again in another
    browser is refused (in the same browser it is a reload). ``ArrivalRefused`` (nothing recorded)
    for any token that fails; ``ArrivalDeferred`` while no key set could be had from Prolific.
    """
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
    """The session of a signed link already verified (:func:`read_signed_link`), kept for this browser.

    No call to Prolific: its signature is Prolific's word. ``NotOpenYet`` while the site is still
    finishing the study's publication (the arrival also starts that publication again if it was
    interrupted, at most every :data:`RESUME_SECONDS`); ``StudyClosed`` when the batch needs nobody.
    """
    try:
        check_link(batch, participant_id, study_id, session_id)
    except NotOpenYet:
        resume_publishing(batch)
        raise
    return _keep_session(batch, participant_id, session_id, browser_digest(browser_secret), lambda: SIGNED)


def resume_publishing(batch: Batch) -> bool:
    """Start the batch's publication again (it resumes where it stopped: ``publish_batch``'s protocol),
    unless it is under way or was started less than :data:`RESUME_SECONDS` ago; whether it was started."""
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
    """Publications that stopped while Prolific has the study live (a lost answer, a crash): started again.

    A draft Prolific batch whose publication was asked for and whose study Prolific shows live
    (``ACTIVE`` or ``PAUSED``, found by its id or, when the id's answer was lost, by its internal
    name) is published again by the ordinary job, which resumes where it stopped; the site then
    lets in the participants who were kept waiting (``manage.py poll_prolific``). Returns their names.
    """
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
