"""Names of collections, query sets, runs, word lists, pools, batches and reports.

They appear in URLs and file names, so they are slugs: letters, digits, hyphens and
underscores. Every service that creates a named object checks its name here.
"""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.core.validators import validate_slug

from core.errors import ServiceError


def validate_name(name: str, what: str) -> str:
    """Return ``name`` if it is a usable slug; otherwise a ServiceError naming ``what``."""
    try:
        validate_slug(name)
    except ValidationError:
        raise ServiceError(
            f"{what} name {name!r} is not usable: use letters, digits, hyphens and underscores (e.g. msmarco-dev)"
        ) from None
    return name
