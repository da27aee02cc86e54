"""Prolific's signed study URL: the ``prolific_token`` JWT verified locally. Pure (no Django).

What Prolific documents (its API reference, the study field ``is_external_study_url_secure``
of "Create a study", and "Retrieve JSON Web Key Set (JWKS)", docs.prolific.com/api-reference/
well-known-endpoints/get-study-jwks): when the field is true, "any query parameters in the
external study url will be signed with a JSON Web Token", added to the URL "as a query parameter
named ``prolific_token``". Its header is ``{"alg": "RS256", "kid": "<KEY_ID>", "typ": "JWT"}``;
its payload ``iss`` ("https://www.prolific.com"), ``iat``, ``exp`` (two minutes after ``iat``),
``aud``, ``sub`` (the session id) and ``prolific``: each URL parameter of the study URL's
template with its resolved value (here ``PROLIFIC_PID``, ``STUDY_ID``, ``SESSION_ID``), plus
``workspace_id`` always and ``organisation_id`` when the workspace is linked to an organisation.
The receiver "must verify": the signature with the key of that ``kid`` from
``/.well-known/study/jwks.json``; ``exp``; "the ``aud`` claim is the correct domain for your
tool"; the ``prolific`` claim's ``workspace_id`` (and ``organisation_id``) against what the
integration expects.

**Audience.** The reference's payload shows ``aud`` as ``"<EXTERNAL_STUDY_URL>"`` (its example:
``"https://x.com?STUDY_ID=1&..."``), while the page "Retrieve JSON Web Key Set (JWKS)" says the
``aud`` is "the correct domain for your tool". Following the page (the issue's rule where they
disagree), the audience's scheme and host must be this site's (``SITE_URL``); when the ``aud``
also carries a path other than ``/`` (the reference's URL form), it must be this batch's start
path, so a token made for another batch of the site opens nothing here.

**Issuer.** Neither list of checks names ``iss``, so it is not required (a documented value that
Prolific may spell otherwise would turn every participant away); the signature already says who
made the token.

:func:`verify_study_token` uses PyJWT (signature, ``exp`` and ``iat`` with a few seconds of leeway,
required claims); everything else is checked here. Every refusal is a :class:`TokenRefused`
with a short ``code`` and the sentence a participant reads.
"""

from __future__ import annotations

import base64
import hashlib
import re
from dataclasses import dataclass
from urllib.parse import urlsplit

#: The key type and algorithm the JWKS and the token's header name (always these, says the reference).
ALGORITHM = "RS256"
#: Seconds of clock difference allowed on ``exp`` and ``iat``.
LEEWAY_SECONDS = 5
#: A token longer than this is not Prolific's (a few hundred characters): refused before parsing.
MAX_TOKEN_CHARS = 8192
#: The study URL's parameters whose values the ``prolific`` claim carries (``provider.study_url``).
LINK_PARAMETERS = ("PROLIFIC_PID", "STUDY_ID", "SESSION_ID")
_PROLIFIC_ID = re.compile(r"[0-9a-f]{24}")

REOPEN = "Please go back to Prolific and open the study again from there."


class TokenRefused(Exception):
    """A study token that is not accepted: ``code`` names the check, the message is for the participant."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


class UnknownKey(TokenRefused):
    """The token names a ``kid`` the key set does not hold (the caller may fetch the key set again)."""


@dataclass(frozen=True)
class StudyToken:
    """What a verified token says: the link's ids, signed by Prolific, and when it expires."""

    participant_id: str
    study_id: str
    session_id: str
    expires: float
    digest: str  # SHA-256 of the token's text: the replay guard's key


def canonical_token(token: str) -> str:
    """The token as its bytes spell it: each segment base64url-decoded and encoded again, unpadded.

    Base64url decoding (PyJWT's) ignores padding and stray characters, so ``token + "=="`` verifies
    with the same signature: the replay guard keys this spelling, not the text sent (issue 68).
    """
    parts = []
    for part in token.split("."):
        cleaned = part.rstrip("=")
        try:
            data = base64.urlsafe_b64decode(cleaned + "=" * (-len(cleaned) % 4))
        except (ValueError, TypeError):
            return token
        parts.append(base64.urlsafe_b64encode(data).decode().rstrip("="))
    return ".".join(parts)


def token_digest(token: str) -> str:
    """SHA-256 of the token's canonical spelling (:func:`canonical_token`): the replay guard's key."""
    return hashlib.sha256(canonical_token(token).encode("utf-8", "replace")).hexdigest()


def key_id(token: str) -> str:
    """The ``kid`` of the token's header (not verified yet); :class:`TokenRefused` for a token that is no JWT."""
    import jwt

    if not isinstance(token, str) or not token or len(token) > MAX_TOKEN_CHARS:
        raise TokenRefused("malformed", f"The link from Prolific is incomplete. {REOPEN}")
    try:
        header = jwt.get_unverified_header(token)
    except jwt.PyJWTError:
        raise TokenRefused("malformed", f"The link from Prolific is damaged. {REOPEN}") from None
    kid = header.get("kid")
    if header.get("alg") != ALGORITHM or not isinstance(kid, str) or not kid:
        raise TokenRefused("malformed", f"The link from Prolific is not signed as Prolific signs it. {REOPEN}")
    return kid


def read_key_set(document: object) -> dict[str, object]:
    """The RSA verification keys of a JWKS document by ``kid`` (``{"keys": [...]}``); keys of another
    type, algorithm or use are left out, and a document of another shape gives none."""
    import jwt

    keys: dict[str, object] = {}
    items = document.get("keys") if isinstance(document, dict) else None
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict) or not isinstance(item.get("kid"), str):
            continue
        if item.get("kty") != "RSA" or item.get("alg", ALGORITHM) != ALGORITHM or item.get("use", "sig") != "sig":
            continue
        try:
            keys[item["kid"]] = jwt.PyJWK(item, ALGORITHM).key
        except (jwt.PyJWTError, ValueError, TypeError, KeyError):
            continue
    return keys


def _audience_matches(audience: object, site_url: str, start_path: str) -> bool:
    site = urlsplit(site_url)
    values = audience if isinstance(audience, list) else [audience]
    for value in values:
        if not isinstance(value, str):
            continue
        aud = urlsplit(value)
        if (aud.scheme, aud.netloc.lower()) != (site.scheme, site.netloc.lower()):
            continue
        if aud.path in ("", "/") or aud.path.rstrip("/") == start_path.rstrip("/"):
            return True
    return False


def verify_study_token(
    token: str,
    keys: dict[str, object],
    *,
    site_url: str,
    start_path: str,
    workspace_id: str,
    organisation_id: str = "",
    now: float,
) -> StudyToken:
    """The verified token, or :class:`TokenRefused` (:class:`UnknownKey` when its ``kid`` is not in ``keys``).

    ``start_path``: this batch's arrival path (the ``aud``'s path when it has one); ``workspace_id``
    (required) and ``organisation_id`` (checked when given): what this site expects in the
    ``prolific`` claim; ``now``: seconds since the epoch.
    """
    import jwt

    kid = key_id(token)
    key = keys.get(kid)
    if key is None:
        raise UnknownKey("unknown_key", f"This link was signed with a key Prolific does not publish. {REOPEN}")
    if not workspace_id:
        raise TokenRefused("not_set_up", "This study is not set up for signed links on this site.")
    try:
        claims = jwt.decode(
            token,
            key,
            algorithms=[ALGORITHM],
            leeway=LEEWAY_SECONDS,
            options={"require": ["exp", "iat", "aud", "sub"], "verify_aud": False, "verify_iat": True},
        )
    except jwt.ExpiredSignatureError:
        raise TokenRefused(
            "expired", f"This link from Prolific has expired (it is valid for two minutes). {REOPEN}"
        ) from None
    except jwt.ImmatureSignatureError:
        raise TokenRefused("not_yet_valid", f"This link from Prolific is not valid yet. {REOPEN}") from None
    except jwt.InvalidSignatureError:
        raise TokenRefused("bad_signature", f"This link was not signed by Prolific. {REOPEN}") from None
    except jwt.PyJWTError:
        raise TokenRefused("malformed", f"The link from Prolific is damaged. {REOPEN}") from None
    if not isinstance(claims.get("exp"), (int, float)) or claims["exp"] + LEEWAY_SECONDS < now:
        raise TokenRefused("expired", f"This link from Prolific has expired (it is valid for two minutes). {REOPEN}")
    if not _audience_matches(claims.get("aud"), site_url, start_path):
        raise TokenRefused("wrong_audience", f"This link from Prolific was made for another site or study. {REOPEN}")
    signed = claims.get("prolific")
    if not isinstance(signed, dict):
        raise TokenRefused("malformed", f"The link from Prolific is damaged. {REOPEN}")
    if signed.get("workspace_id") != workspace_id:
        raise TokenRefused("wrong_workspace", "This link belongs to a study of another Prolific workspace.")
    if organisation_id and signed.get("organisation_id") != organisation_id:
        raise TokenRefused("wrong_workspace", "This link belongs to a study of another Prolific organisation.")
    ids = [signed.get(name) for name in LINK_PARAMETERS]
    if not all(isinstance(v, str) and _PROLIFIC_ID.fullmatch(v) for v in ids):
        raise TokenRefused("malformed", f"The link from Prolific lacks the study's ids. {REOPEN}")
    participant_id, study_id, session_id = ids
    if claims.get("sub") != session_id:
        raise TokenRefused("malformed", f"The link from Prolific is damaged. {REOPEN}")
    return StudyToken(participant_id, study_id, session_id, float(claims["exp"]), token_digest(token))
