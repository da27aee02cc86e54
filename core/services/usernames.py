"""Usernames as the site compares them: the one check every new account goes through.

Django stores a username NFKC-normalised but compares it exactly, so a fullwidth ``ａｌｉｃｅ`` hit the
unique index (a 500) and ``ARA`` or Cyrillic ``arа`` became accounts a person cannot tell from
``ara``. :func:`new_username` is the one gate: the stored form, or a ServiceError naming the
look-alike account, a reserved name, Django's character rule or the column's length.

Two names look alike when their *skeletons* are equal: NFKC, case-folded, and every homoglyph of a
Latin letter in Unicode's confusables table read as that letter; a name mixing scripts that way
is refused too, since it exists only to look like something else.
"""

from __future__ import annotations

import unicodedata
from functools import lru_cache

from confusable_homoglyphs import confusables
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError

from core.errors import ServiceError

#: Names no account may take (nor a look-alike of them): they read as the site's or the operator's.
RESERVED = frozenset(
    {
        "admin",
        "administrator",
        "root",
        "superuser",
        "system",
        "operator",
        "staff",
        "support",
        "security",
        "postmaster",
        "webmaster",
        "hostmaster",
        "abuse",
        "noreply",
        "no-reply",
        "anonymous",
        "null",
        "none",
    }
)


def stored_form(username: str) -> str:
    """``username`` as Django stores it (NFKC; what a lookup must use)."""
    return get_user_model().normalize_username(str(username).strip())


@lru_cache(maxsize=65536)
def skeleton(username: str) -> str:
    """What a reader sees: NFKC, case-folded, Cyrillic/Greek (and other) homoglyphs of Latin letters read as Latin."""
    text = unicodedata.normalize("NFKC", username).casefold()
    found = confusables.is_confusable(text, greedy=True, preferred_aliases=["latin"]) or []
    latin = {}
    for entry in found:
        for glyph in entry["homoglyphs"]:
            if glyph["n"].startswith("LATIN ") and len(glyph["c"]) == 1:
                latin[entry["character"]] = glyph["c"].casefold()
                break
    return "".join(latin.get(c, c) for c in text)


def new_username(username: str, *, existing_pk: int | None = None) -> str:
    """The stored form of a username for a new account, after every check; a ServiceError naming the
    field otherwise. ``existing_pk``: an account that may keep its own name (a reused annotator)."""
    user_model = get_user_model()
    name = stored_form(username)
    limit = user_model._meta.get_field(user_model.USERNAME_FIELD).max_length
    if not name:
        raise ServiceError("username: give a name")
    if len(name) > limit:
        raise ServiceError(f"username: at most {limit} characters, not {len(name)}")
    try:
        user_model.username_validator(name)
    except ValidationError:
        raise ServiceError(f"username: {name!r} is not usable: use letters, digits and @ . + - _") from None
    seen = skeleton(name)
    if seen in {skeleton(word) for word in RESERVED}:
        raise ServiceError(f"username: {name!r} is reserved (or looks like a reserved name); choose another")
    for pk, other in user_model._base_manager.values_list("pk", user_model.USERNAME_FIELD).iterator():
        if pk != existing_pk and skeleton(other) == seen:
            if other == str(username).strip():
                raise ServiceError(f"username: {name!r} exists already")
            raise ServiceError(f"username: {name!r} looks like the existing account {other!r}; choose another name")
    if (
        confusables.is_mixed_script(name, allowed_aliases=["COMMON"])
        and seen != unicodedata.normalize("NFKC", name).casefold()
    ):
        raise ServiceError(f"username: {name!r} mixes scripts that look alike (reads as {seen!r}); choose another")
    return name
