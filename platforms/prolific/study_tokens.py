"""Prolific's signed study URL: the ``prolific_token`` JWT verified locally. Pure (no Django).

Checked as Prolific's reference says (docs/prolific.md, "Signed study links"): the RS256 signature by
the key of its ``kid``, ``exp``, the audience, the ``prolific`` claim's workspace (and organisation)
and the link's ids. **Audience**: the reference's example is the whole study URL, its page says "the
correct domain for your tool": the scheme and host must be ``SITE_URL``'s and, when ``aud`` carries a
path, this batch's start path, so another batch's token opens nothing here. **Issuer**: named by
neither list of checks, so not required (another spelling would turn everyone away); the signature
says who made the token. Every refusal is a :class:`TokenRefused` with a ``code`` and the
participant's sentence.
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
    """The token as its bytes spell it (each segment decoded and encoded again, unpadded): PyJWT ignores
    padding and stray characters, so the replay guard keys this spelling, not the text sent."""
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
    """The verified token, or :class:`TokenRefused` (:class:`UnknownKey`: its ``kid`` not in ``keys``).
    ``start_path``: the batch's arrival path; ``organisation_id`` is checked when given."""
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
